package coexist_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/bridge/nudgeconfig"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
	"github.com/nudgeflow/nudgeflow/test/konfluxpeers"
	"github.com/nudgeflow/nudgeflow/test/localbridge"
	"github.com/nudgeflow/nudgeflow/test/world"
	"github.com/nudgeflow/nudgeflow/test/world/worldbridge"
	"github.com/nudgeflow/nudgeflow/workflows/validatednudge"
)

const waitFor = 2 * time.Minute

// The graph of every world: two sources, each with exactly two edges, so a build
// is owed exactly two nudges whoever runs them.
//
//	operand-a -> bundle (immediate), operand-a -> tests (validated, gated by ComponentGroup operands)
//	operand-b -> bundle (immediate), operand-b -> tests (validated, no gating group)
var (
	sources = []string{"operand-a", "operand-b"}
	edges   = []konfluxv1alpha1.NudgeRelationship{
		{From: "operand-a", To: "bundle", Mode: konfluxv1alpha1.ModeImmediate},
		{From: "operand-a", To: "tests", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "operands"},
		{From: "operand-b", To: "bundle", Mode: konfluxv1alpha1.ModeImmediate},
		{From: "operand-b", To: "tests", Mode: konfluxv1alpha1.ModeValidated},
	}
	buildsPerSource = 2
)

// coexistWorld is one combination of installed services.
type coexistWorld struct {
	name string
	// peers is the bridge's --nudging-peers ("" is none).
	peers    string
	standIns konfluxpeers.Which
	// shipped writes integration-service's NudgeConfig instead of nudgeflow's.
	shipped bool
	// nudgesRef is each Component's build-nudges-ref.
	nudgesRef map[string][]string
	// runners says who must run each edge "from->to".
	runners map[string]builds.Runner
}

var worlds = []coexistWorld{
	{
		name:     "alone",
		standIns: konfluxpeers.Which{Tekton: true},
		runners: map[string]builds.Runner{"operand-a->bundle": builds.RunnerNudgeflow, "operand-a->tests": builds.RunnerNudgeflow,
			"operand-b->bundle": builds.RunnerNudgeflow, "operand-b->tests": builds.RunnerNudgeflow},
	},
	{
		// Mid-migration: the NudgeConfig is nudgeflow's, operand-a's build-nudges-ref
		// is still set (build-service nudges that edge), operand-b's was removed.
		name:      "build-service",
		peers:     builds.PeersAuto,
		standIns:  konfluxpeers.Which{BuildService: true, Tekton: true},
		nudgesRef: map[string][]string{"operand-a": {"bundle"}},
		runners: map[string]builds.Runner{"operand-a->bundle": builds.RunnerBuildService, "operand-a->tests": builds.RunnerNudgeflow,
			"operand-b->bundle": builds.RunnerNudgeflow, "operand-b->tests": builds.RunnerNudgeflow},
	},
	{
		// Konflux as it ships: integration-service's NudgeConfig; build-service,
		// which still sees build-nudges-ref, stands down for it.
		name:      "integration-service",
		peers:     builds.PeersAuto,
		standIns:  konfluxpeers.Which{BuildService: true, IntegrationService: true, Tekton: true},
		shipped:   true,
		nudgesRef: map[string][]string{"operand-a": {"bundle"}, "operand-b": {"bundle"}},
		runners: map[string]builds.Runner{"operand-a->bundle": builds.RunnerIntegrationService, "operand-a->tests": builds.RunnerNudgeflow,
			"operand-b->bundle": builds.RunnerIntegrationService, "operand-b->tests": builds.RunnerNudgeflow},
	},
}

// TestExactlyOneNudgePerBuildPerEdge runs each world and counts the Renovate
// PipelineRuns: one per build per edge, by the runner the division of labour
// names, and none twice.
func TestExactlyOneNudgePerBuildPerEdge(t *testing.T) {
	for _, cw := range worlds {
		t.Run(cw.name, func(t *testing.T) { runWorld(t, cw) })
	}
}

func runWorld(t *testing.T, cw coexistWorld) {
	w := world.Get(t)
	ctx := context.Background()
	ns := w.Namespace(t)
	stop := startServices(t, w, ns, cw)
	defer stop()

	create := func(obj ctrlclient.Object) {
		t.Helper()
		obj.SetNamespace(ns)
		require.NoError(t, w.Kube.Create(ctx, obj))
	}
	for _, name := range []string{"operand-a", "operand-b", "bundle", "tests"} {
		c := &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: name, Application: "app", ContainerImage: "quay.io/org/" + name, BuildNudgesRef: cw.nudgesRef[name]}}
		if !strings.HasPrefix(name, "operand") {
			// Each world is a tenant with repositories of its own (the oldest claim
			// on a URL owns it).
			c.Spec.Source.GitSource = &mirrorv1alpha1.GitSource{URL: "https://github.com/" + ns + "/" + name, Revision: "main"}
		}
		create(c)
	}
	create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "scm-github", Labels: map[string]string{
			credentials.LabelCredentials: credentials.LabelCredentialsSCM, credentials.LabelSCMHost: "github.com"}},
		Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{corev1.BasicAuthUsernameKey: []byte("konflux-bot"), corev1.BasicAuthPasswordKey: []byte("token")},
	})
	nc := &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: nudgeconfigs.Name, Namespace: ns}, Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: edges}}
	if cw.shipped {
		shipped, err := nudgeconfigs.ToShipped(nc)
		require.NoError(t, err)
		create(shipped)
	} else {
		create(nc)
	}
	// The bridge says who nudges each edge.
	world.Eventually(t, waitFor, "the NudgedBy Event", func() (bool, error) {
		var list corev1.EventList
		if err := w.Kube.List(ctx, &list, ctrlclient.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Reason == nudgeconfig.ReasonNudgedBy {
				t.Logf("NudgedBy: %s", e.Message)
				return true, nil
			}
		}
		return false, nil
	})

	var all []*tektonv1.PipelineRun
	for n := 1; n <= buildsPerSource; n++ {
		for _, s := range sources {
			b := pushBuild(t, w, ns, s, n)
			all = append(all, b)
			snapshots(t, w, ns, s, n)
		}
		// One build of each source at a time: a validated edge nudges its builds in
		// order, so the next waits for this one's nudge to end.
		settle(t, w, ns, cw, all)
	}

	runs := nudgeRuns(t, w, ns)
	got := map[string]int{}
	by := map[string]builds.Runner{}
	for _, r := range runs {
		for _, target := range konfluxpeers.Targets(&r) {
			key := r.Annotations[konflux.AnnotationNudgingPLR] + " " + r.Annotations[konflux.AnnotationNudging] + "->" + target
			got[key]++
			by[key] = runnerOf(&r)
		}
	}
	want := map[string]int{}
	for _, b := range all {
		for _, e := range edges {
			if e.From == b.Labels[builds.LabelComponent] {
				key := b.Name + " " + e.From + "->" + e.To
				want[key] = 1
				require.Equal(t, cw.runners[e.From+"->"+e.To], by[key], "who nudged %s", key)
			}
		}
	}
	require.Equal(t, want, got, "exactly one Renovate run per build per edge")
	total := 0
	for _, n := range got {
		total += n
	}
	fmt.Printf("konflux-coexist world=%s builds=%d renovate_runs=%d\n", cw.name, len(all), total)
	require.Equal(t, len(all)*2, total, "runs == builds x edges per source")
}

// startServices starts the world's bridge (its own manager, cluster-wide, with the
// world's peers) and the stand-ins (seeing only ns).
func startServices(t *testing.T, w *world.World, ns string, cw coexistWorld) func() {
	t.Helper()
	b, err := worldbridge.Start(w, worldbridge.Options{Bridge: localbridge.Options{
		Manager: bridge.ManagerOptions{SkipControllerNameValidation: true},
		Deps:    bridge.Deps{TaskQueue: taskQueue, NudgingPeers: cw.peers},
		Setup: func(mgr ctrl.Manager) (*bridge.Bridge, error) {
			return bridge.Setup(mgr, bridge.Deps{Temporal: w.TemporalClient, TaskQueue: taskQueue, NudgingPeers: cw.peers})
		},
		ReadyTimeout: waitFor,
	}})
	require.NoError(t, err)
	peers, err := bridge.ResolvePeers(b.Manager.GetRESTMapper(), cw.peers)
	require.NoError(t, err)
	t.Logf("world %s: nudging peers %s", cw.name, peers)
	mgr, err := ctrl.NewManager(w.Config(), ctrl.Options{
		Scheme:     kube.NewScheme(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	require.NoError(t, konfluxpeers.Setup(mgr, cw.standIns))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, b.Stop())
	}
}

// pushBuild creates the n-th succeeded push build of component, as Pipelines as Code
// and Tekton would.
func pushBuild(t *testing.T, w *world.World, ns, component string, n int) *tektonv1.PipelineRun {
	t.Helper()
	ctx := context.Background()
	plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("%s-on-push-%d", component, n), Namespace: ns,
		Labels: map[string]string{builds.LabelComponent: component, builds.LabelPipelineType: builds.PipelineTypeBuild,
			"appstudio.openshift.io/application": "app", builds.KeyEventType: "push"},
		Annotations: map[string]string{builds.KeyEventType: "push",
			builds.AnnotationRepo: fmt.Sprintf("https://github.com/org/%s?rev=%040x", component, n)},
	}, Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "docker-build"}}}
	require.NoError(t, w.Kube.Create(ctx, plr))
	start := time.Date(2026, 11, 1, 10, n, 0, 0, time.UTC)
	require.NoError(t, world.SetStatus(ctx, w.Kube, plr, func() {
		konflux.SucceededBuild{ImageURL: fmt.Sprintf("quay.io/org/%s:rev%d", component, n), Digest: digestOf(component, n),
			Started: start, Completed: start}.WriteStatus(plr)
	}))
	return plr
}

func digestOf(component string, n int) string {
	return fmt.Sprintf("sha256:%064x", len(component)*1000+int(component[len(component)-1])*10+n)
}

// snapshots tests the build as integration-service would: operand-a in a Snapshot
// of its gating group that passes; operand-b (no gating group) in its
// application's Snapshot, which fails, and in another ComponentGroup's, which
// passes: the build is nudged because one Snapshot holding it passed. Both exist
// (testing) before either finishes, as integration-service creates them together.
func snapshots(t *testing.T, w *world.World, ns, component string, n int) {
	t.Helper()
	image := fmt.Sprintf("quay.io/org/%s@%s", component, digestOf(component, n))
	type snap struct {
		app, group string
		pass       bool
	}
	list := []snap{{group: "operands", pass: true}}
	if component == "operand-b" {
		list = []snap{{app: "app", pass: false}, {group: "other-group", pass: true}}
	}
	var created []*mirrorv1alpha1.Snapshot
	for i, s := range list {
		snapshot := &mirrorv1alpha1.Snapshot{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d-%d", component, n, i), Namespace: ns},
			Spec: mirrorv1alpha1.SnapshotSpec{Application: s.app, ComponentGroup: s.group,
				Components: []mirrorv1alpha1.SnapshotComponent{{Name: component, ContainerImage: image}}},
		}
		require.NoError(t, w.Kube.Create(context.Background(), snapshot))
		created = append(created, snapshot)
	}
	for i, s := range list {
		status, reason := metav1.ConditionTrue, "Passed"
		if !s.pass {
			status, reason = metav1.ConditionFalse, "Failed"
		}
		snapshot := created[i]
		require.NoError(t, world.SetStatus(context.Background(), w.Kube, snapshot, func() {
			meta.SetStatusCondition(&snapshot.Status.Conditions, metav1.Condition{Type: mirrorv1alpha1.SnapshotTestSucceeded, Status: status, Reason: reason, Message: reason})
		}))
	}
}

// settle waits until nothing is left to nudge: every build routed by nudgeflow
// and handled by the stand-in services, every owed run created and ended, every
// validated edge idle with a nudge per build. Only then are runs counted, so a
// late duplicate would be in the count.
func settle(t *testing.T, w *world.World, ns string, cw coexistWorld, all []*tektonv1.PipelineRun) {
	t.Helper()
	ctx := context.Background()
	owed := len(all) * 2
	world.Eventually(t, waitFor, fmt.Sprintf("world %s: %d builds settled, %d nudge runs ended", cw.name, len(all), owed), func() (bool, error) {
		for _, b := range all {
			var got tektonv1.PipelineRun
			if err := w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(b), &got); err != nil {
				return false, err
			}
			if !builds.Settled(&got) {
				return false, fmt.Errorf("build %s not routed by nudgeflow yet", b.Name)
			}
			if cw.standIns.BuildService && len(cw.nudgesRef[got.Labels[builds.LabelComponent]]) > 0 && got.Annotations[konfluxpeers.BSProcessedAnnotation] == "" {
				return false, fmt.Errorf("build %s not processed by build-service yet", b.Name)
			}
			if cw.standIns.IntegrationService && got.Annotations[konfluxpeers.ISProcessedAnnotation] == "" {
				return false, fmt.Errorf("build %s not processed by integration-service yet", b.Name)
			}
		}
		targets := 0
		for _, r := range nudgeRuns(t, w, ns) {
			if !r.IsDone() {
				return false, fmt.Errorf("run %s has not ended", r.Name)
			}
			targets += len(konfluxpeers.Targets(&r))
		}
		if targets < owed {
			return false, fmt.Errorf("%d of %d nudges so far", targets, owed)
		}
		for _, s := range sources {
			var st validatednudge.State
			v, err := w.TemporalClient.QueryWorkflow(ctx, validatednudge.WorkflowID(ns, s, "tests"), "", validatednudge.QueryState)
			if err != nil {
				return false, err
			}
			if err := v.Get(&st); err != nil {
				return false, err
			}
			if st.Pending != nil || st.Ready != nil || st.Running != nil || len(st.Nudges) < len(all)/len(sources) {
				return false, fmt.Errorf("validated edge %s -> tests: %d nudges, pending %v", s, len(st.Nudges), st.Pending != nil)
			}
		}
		return true, nil
	})
}

// nudgeRuns lists every nudge PipelineRun of the namespace, whoever created it.
func nudgeRuns(t *testing.T, w *world.World, ns string) []tektonv1.PipelineRun {
	t.Helper()
	var list tektonv1.PipelineRunList
	require.NoError(t, w.Kube.List(context.Background(), &list, ctrlclient.InNamespace(ns),
		ctrlclient.MatchingLabels{konflux.LabelNudgeType: konflux.NudgeTypeValue}))
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

func runnerOf(r *tektonv1.PipelineRun) builds.Runner {
	switch r.Labels[konfluxpeers.ManagedByLabel] {
	case konfluxpeers.CreatedByBuildService:
		return builds.RunnerBuildService
	case konfluxpeers.CreatedByIntegrationService:
		return builds.RunnerIntegrationService
	}
	return builds.RunnerNudgeflow
}
