package coexist_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"knative.dev/pkg/apis"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/bridge/changegroupcontroller"
	"github.com/nudgeflow/nudgeflow/bridge/nudgeconfig"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
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
//	operand-b -> bundle (immediate), operand-b -> tests (validated; no gating group in
//	  integration-service's kind, gated by other-group in nudgeflow's, which requires one)
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
	// nudgesRef is each Component's build-nudges-ref at creation.
	nudgesRef map[string][]string
	// nudgesRefLater is set on the Components after the NudgeConfig exists
	// (admission refuses a validated edge while the source's build-nudges-ref
	// lists its target, not a ref added afterwards).
	nudgesRefLater map[string][]string
	// appOnly puts the target repositories on a GitHub (emulator) where only the
	// GitHub App is installed: no basic-auth Secret, as Pipelines as Code sets up.
	appOnly bool
	// mergeQueue adds, per source and round, a build of a GitHub merge-queue
	// branch: speculative, owed no nudge.
	mergeQueue bool
	// isDeadline is the bridge's --integration-service-deadline (0: default).
	isDeadline time.Duration
	// peersBlind: the stand-in services do not see the world's builds (new-model
	// builds carry only ADR 69's keys), so nothing waits for their verdicts.
	peersBlind bool
	// runners says who must run each edge "from->to".
	runners map[string]builds.Runner
	// isVerdict is integration-service's annotation on every build it may nudge
	// ("": not installed).
	isVerdict string
	// peerRunsCancelled counts other services' nudge runs nudgeflow cancels at
	// admission (build-service's ungated or speculative nudges).
	peerRunsCancelled int
}

// nudgeflowRuns every edge.
var nudgeflowRuns = map[string]builds.Runner{"operand-a->bundle": builds.RunnerNudgeflow, "operand-a->tests": builds.RunnerNudgeflow,
	"operand-b->bundle": builds.RunnerNudgeflow, "operand-b->tests": builds.RunnerNudgeflow}

var worlds = []coexistWorld{
	{
		name:     "alone",
		standIns: konfluxpeers.Which{Tekton: true},
		runners:  nudgeflowRuns,
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
		standIns:  konfluxpeers.Which{BuildService: true, IntegrationService: true, Chains: true, Tekton: true},
		shipped:   true,
		nudgesRef: map[string][]string{"operand-a": {"bundle"}, "operand-b": {"bundle"}},
		isVerdict: "bundle",
		runners: map[string]builds.Runner{"operand-a->bundle": builds.RunnerIntegrationService, "operand-a->tests": builds.RunnerNudgeflow,
			"operand-b->bundle": builds.RunnerIntegrationService, "operand-b->tests": builds.RunnerNudgeflow},
	},
	{
		// Konflux as it ships, with the GitHub App only: integration-service finds
		// no credentials for the targets (its App path is a stub) and says
		// no-credentials; nudgeflow takes the immediate edges over.
		name:      "is-app-only",
		peers:     builds.PeersAuto,
		standIns:  konfluxpeers.Which{BuildService: true, IntegrationService: true, Chains: true, Tekton: true},
		shipped:   true,
		appOnly:   true,
		nudgesRef: map[string][]string{"operand-a": {"bundle"}, "operand-b": {"bundle"}},
		isVerdict: konflux.ISNudgeNoCredentials,
		runners:   nudgeflowRuns,
	},
	{
		// integration-service never decides (Tekton Chains does not sign the
		// builds): nudgeflow claims each build past the deadline and nudges it.
		name:       "is-undecided",
		peers:      builds.PeersAuto,
		standIns:   konfluxpeers.Which{BuildService: true, IntegrationService: true, Tekton: true},
		shipped:    true,
		nudgesRef:  map[string][]string{"operand-a": {"bundle"}, "operand-b": {"bundle"}},
		isDeadline: 3 * time.Second,
		isVerdict:  builds.ISNudgeTakenOver,
		runners:    nudgeflowRuns,
	},
	{
		// operand-a's build-nudges-ref lists tests after the NudgeConfig made
		// operand-a -> tests validated: build-service's nudge of it, ungated, is
		// cancelled at admission (tests is nudged after its Snapshot passed) and
		// its other target renudged by nudgeflow.
		name:              "validated-and-build-nudges-ref",
		peers:             builds.PeersAuto,
		standIns:          konfluxpeers.Which{BuildService: true, Tekton: true},
		nudgesRefLater:    map[string][]string{"operand-a": {"bundle", "tests"}},
		peerRunsCancelled: 2,
		runners:           nudgeflowRuns,
	},
	{
		// Merge-queue builds beside the build-service world's: integration-service
		// and nudgeflow never nudge them; build-service's nudge run of one is
		// cancelled at admission.
		name:              "merge-queue",
		peers:             builds.PeersAuto,
		standIns:          konfluxpeers.Which{BuildService: true, Tekton: true},
		nudgesRef:         map[string][]string{"operand-a": {"bundle"}},
		mergeQueue:        true,
		peerRunsCancelled: 2,
		runners: map[string]builds.Runner{"operand-a->bundle": builds.RunnerBuildService, "operand-a->tests": builds.RunnerNudgeflow,
			"operand-b->bundle": builds.RunnerNudgeflow, "operand-b->tests": builds.RunnerNudgeflow},
	},
}

// TestExactlyOneNudgePerBuildPerEdge runs each world and counts the nudges that
// ran to the end, by any writer: one per build per edge, by the runner the
// division of labour names, none twice, none for a speculative build.
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

	create := creator(t, w, ns)
	repoBase := "https://github.com/" + ns + "/"
	if cw.appOnly {
		repoBase = appOnlyForge(t, w, ns) + "/" + ns + "/"
	}
	for _, name := range []string{"operand-a", "operand-b", "bundle", "tests"} {
		c := &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: name, Application: "app", ContainerImage: "quay.io/org/" + name, BuildNudgesRef: cw.nudgesRef[name]}}
		if !strings.HasPrefix(name, "operand") {
			// Each world is a tenant with repositories of its own (the oldest claim
			// on a URL owns it).
			c.Spec.Source.GitSource = &mirrorv1alpha1.GitSource{URL: repoBase + name, Revision: "main"}
			if cw.appOnly {
				c.Annotations = map[string]string{mirrorv1alpha1.AnnotationGitProvider: "github"}
			}
		}
		create(c)
	}
	imageCredentials(t, w, ns)
	if !cw.appOnly {
		create(scmCredentials())
	}
	nc := &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: nudgeconfigs.Name, Namespace: ns}, Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: edges}}
	if cw.shipped {
		shipped, err := nudgeconfigs.ToShipped(nc)
		require.NoError(t, err)
		create(shipped)
	} else {
		// nudgeflow's kind requires a gatingGroup on a validated edge it admits
		// (ADR 67); the ungated operand-b -> tests stays in integration-service's
		// kind (the shipped worlds). other-group is the group whose Snapshot of
		// operand-b passes.
		nc.Spec.Nudges = slices.Clone(edges)
		for i := range nc.Spec.Nudges {
			if e := &nc.Spec.Nudges[i]; e.EffectiveMode() == konfluxv1alpha1.ModeValidated && e.GatingGroup == "" {
				e.GatingGroup = "other-group"
			}
		}
		create(nc)
	}
	for name, refs := range cw.nudgesRefLater {
		var c mirrorv1alpha1.Component
		require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: name}, &c))
		c.Spec.BuildNudgesRef = refs
		require.NoError(t, w.Kube.Update(ctx, &c), "a build-nudges-ref added after the NudgeConfig is not refused")
	}
	waitNudgedBy(t, w, ns)

	var all, speculative []*tektonv1.PipelineRun
	for n := 1; n <= buildsPerSource; n++ {
		for _, s := range sources {
			if cw.mergeQueue {
				speculative = append(speculative, mergeQueueBuild(t, w, ns, s, n))
			}
			b := pushBuild(t, w, ns, s, n)
			all = append(all, b)
			snapshots(t, w, ns, s, n)
		}
		// One build of each source at a time: a validated edge nudges its builds in
		// order, so the next waits for this one's nudge to end.
		settle(t, w, ns, cw, all, speculative)
	}

	for _, b := range all {
		var got tektonv1.PipelineRun
		require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(b), &got))
		require.Equal(t, cw.isVerdict, got.Annotations[konfluxpeers.ISProcessedAnnotation], "integration-service's verdict on %s", b.Name)
	}
	got, by, cancelled := deliveries(nudgeRuns(t, w, ns))
	for _, b := range all {
		for _, e := range edges {
			if e.From == b.Labels[builds.LabelComponent] {
				key := b.Name + " " + e.From + "->" + e.To
				require.Equal(t, cw.runners[e.From+"->"+e.To], by[key], "who nudged %s", key)
			}
		}
	}
	require.Equal(t, cw.peerRunsCancelled, cancelled, "other services' nudge runs cancelled at admission")
	report(t, cw, all, speculative, got)
}

// deliveries counts the nudges delivered per "<build> <source>-><target>", by
// any writer: the targets of a nudge run that ran to the end, and of a run
// nudgeflow cancelled at admission the targets a ChangeGroup took
// (held-settled delivered=...; its renudged targets are nudgeflow's own runs,
// counted as such). by names who delivered each; cancelled counts the other
// services' runs nudgeflow cancelled.
func deliveries(runs []tektonv1.PipelineRun) (got map[string]int, by map[string]builds.Runner, cancelled int) {
	got, by = map[string]int{}, map[string]builds.Runner{}
	for _, r := range runs {
		key := func(target string) string {
			return konflux.NudgingPipelineKey.Get(r.Annotations) + " " + konflux.NudgingKey.Get(r.Annotations) + "->" + target
		}
		if c := r.Status.GetCondition(apis.ConditionSucceeded); c != nil && c.IsTrue() {
			for _, target := range konfluxpeers.Targets(&r) {
				got[key(target)]++
				by[key(target)] = runnerOf(&r)
			}
			continue
		}
		if !konflux.HeldAtAdmission(r.Annotations) {
			continue
		}
		if runnerOf(&r) != builds.RunnerNudgeflow {
			cancelled++
		}
		for _, part := range strings.Fields(r.Annotations[konflux.AnnotationHeldSettled]) {
			if delivered, ok := strings.CutPrefix(part, "delivered="); ok {
				for target, group := range changegroupcontroller.ParseHeldBy(delivered) {
					got[key(target)]++
					by[key(target)] = builds.Runner("ChangeGroup " + group)
				}
			}
		}
	}
	return got, by, cancelled
}

// report prints the world's line and asserts it: every build owed a nudge per
// edge from its component got exactly one, and nothing else was nudged (a
// speculative build is owed none).
func report(t *testing.T, cw coexistWorld, all, speculative []*tektonv1.PipelineRun, got map[string]int) {
	t.Helper()
	expected := map[string]bool{}
	for _, b := range all {
		for _, e := range edges {
			if e.From == konflux.ComponentOf(b.Labels) {
				expected[b.Name+" "+e.From+"->"+e.To] = true
			}
		}
	}
	nudges, duplicates, unnudged := 0, 0, 0
	for key, n := range got {
		nudges += n
		switch {
		case !expected[key]:
			duplicates += n // a nudge nobody owed (a speculative build's)
		case n > 1:
			duplicates += n - 1
		}
	}
	for key := range expected {
		if got[key] == 0 {
			unnudged++
		}
	}
	fmt.Printf("konflux-coexist world=%s builds=%d edges=%d nudges=%d expected=%d duplicates=%d unnudged=%d\n",
		cw.name, len(all)+len(speculative), len(edges), nudges, len(expected), duplicates, unnudged)
	require.Zero(t, duplicates, "no build nudged twice along an edge, no speculative build nudged: %v", got)
	require.Zero(t, unnudged, "every build nudged along every edge: %v", got)
	require.Equal(t, len(expected), nudges)
}

// imageCredentials links a push credential for the components' images to the
// ServiceAccounts build-service (build-pipeline-<component>) and integration-
// service (appstudio-pipeline) read it from: without it both nudge nothing.
func imageCredentials(t *testing.T, w *world.World, ns string) {
	t.Helper()
	ctx := context.Background()
	auth := base64.StdEncoding.EncodeToString([]byte("robot:push-token"))
	require.NoError(t, w.Kube.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "quay-push", Namespace: ns},
		Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"quay.io/org":{"auth":"` + auth + `"}}}`)}}))
	for _, sa := range []string{konfluxpeers.ISDefaultPipelineServiceAccount, credentials.BuildPipelineServiceAccount("operand-a"), credentials.BuildPipelineServiceAccount("operand-b")} {
		require.NoError(t, w.Kube.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns},
			Secrets: []corev1.ObjectReference{{Name: "quay-push"}}}))
	}
}

// appOnlyForge starts a GitHub emulator holding the world's target repositories
// with the GitHub App installed, and puts the App's Secret where build-service
// keeps Pipelines as Code's (forge.DefaultAppSecret), for the world's length.
func appOnlyForge(t *testing.T, w *world.World, ns string) string {
	t.Helper()
	ctx := context.Background()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	emu := githubemu.New()
	t.Cleanup(emu.Close)
	emu.RegisterApp(4242, "konflux-app", &key.PublicKey)
	for _, repo := range []string{"bundle", "tests"} {
		emu.CreateRepo(ns, repo, "main", map[string]string{"Dockerfile": "FROM quay.io/org/operand-a@sha256:" + strings.Repeat("0", 64)})
	}
	secretNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: forge.DefaultAppSecret.Namespace}}
	if err := w.Kube.Create(ctx, secretNS); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: forge.DefaultAppSecret.Name, Namespace: forge.DefaultAppSecret.Namespace},
		Data: map[string][]byte{forge.KeyAppID: []byte("4242"),
			forge.KeyAppPrivateKey: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})}}
	require.NoError(t, w.Kube.Create(ctx, secret))
	t.Cleanup(func() { _ = w.Kube.Delete(context.Background(), secret) })
	// The world's Renovate runs are stand-ins: they push nothing to the emulator.
	u, err := url.Parse(emu.URL())
	require.NoError(t, err)
	world.AddStandInForge(u.Host)
	return emu.URL()
}

// startServices starts the world's bridge (its own manager, cluster-wide, with the
// world's peers) and the stand-ins (seeing only ns).
func startServices(t *testing.T, w *world.World, ns string, cw coexistWorld) func() {
	t.Helper()
	b, err := worldbridge.Start(w, worldbridge.Options{Bridge: localbridge.Options{
		Manager: bridge.ManagerOptions{SkipControllerNameValidation: true},
		Deps:    bridge.Deps{TaskQueue: taskQueue, NudgingPeers: cw.peers},
		Setup: func(mgr ctrl.Manager) (*bridge.Bridge, error) {
			return bridge.Setup(mgr, bridge.Deps{Temporal: w.TemporalClient, TaskQueue: taskQueue, NudgingPeers: cw.peers, ISDecisionDeadline: cw.isDeadline})
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
	return succeededBuild(t, w, ns, fmt.Sprintf("%s-on-push-%d", component, n), component, n, "main", digestOf(component, n))
}

// mergeQueueBuild creates a succeeded push build of a GitHub merge-queue branch of
// the n-th round (its image is speculative).
func mergeQueueBuild(t *testing.T, w *world.World, ns, component string, n int) *tektonv1.PipelineRun {
	t.Helper()
	return succeededBuild(t, w, ns, fmt.Sprintf("%s-on-push-mq-%d", component, n), component, n,
		fmt.Sprintf("refs/heads/%smain/pr-%d-%040x", konflux.MergeQueueBranchPrefix, n, n), digestOf(component, 100+n))
}

func succeededBuild(t *testing.T, w *world.World, ns, name, component string, n int, branch, digest string) *tektonv1.PipelineRun {
	t.Helper()
	ctx := context.Background()
	plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: ns,
		Labels: map[string]string{builds.LabelComponent: component, builds.LabelPipelineType: builds.PipelineTypeBuild,
			"appstudio.openshift.io/application": "app", builds.KeyEventType: "push"},
		Annotations: map[string]string{builds.KeyEventType: "push", konflux.AnnotationSourceBranch: branch,
			builds.AnnotationRepo: fmt.Sprintf("https://github.com/org/%s?rev=%040x", component, n)},
	}, Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "docker-build"}}}
	require.NoError(t, w.Kube.Create(ctx, plr))
	// About now, not a fixed date: integration-service's verdict is awaited for a
	// time after the build's end (--integration-service-deadline). A round's builds
	// start a minute after the previous round's: Kubernetes stores times to the
	// second, and a validated edge nudges only a build newer than the last.
	start := time.Now().UTC().Add(time.Duration(n-buildsPerSource) * time.Minute)
	require.NoError(t, world.SetStatus(ctx, w.Kube, plr, func() {
		konflux.SucceededBuild{ImageURL: fmt.Sprintf("quay.io/org/%s:rev%d", component, n), Digest: digest,
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
// and handled by the stand-in services, every owed nudge run to its end, every
// run ended, every validated edge idle with a nudge per build. Only then are
// nudges counted, so a late duplicate would be in the count.
func settle(t *testing.T, w *world.World, ns string, cw coexistWorld, all, speculative []*tektonv1.PipelineRun) {
	t.Helper()
	ctx := context.Background()
	owed := len(all) * 2
	world.Eventually(t, waitFor, fmt.Sprintf("world %s: %d builds settled, %d nudges run", cw.name, len(all), owed), func() (bool, error) {
		for _, b := range append(slices.Clone(all), speculative...) {
			var got tektonv1.PipelineRun
			if err := w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(b), &got); err != nil {
				return false, err
			}
			if !builds.IsMergeQueueBuild(&got) && !builds.Settled(&got) {
				return false, fmt.Errorf("build %s not routed by nudgeflow yet", b.Name)
			}
			if cw.peersBlind {
				continue
			}
			if cw.standIns.BuildService && !cw.shipped && got.Annotations[konfluxpeers.BSProcessedAnnotation] == "" {
				if c := componentRefs(ctx, w, ns, got.Labels[builds.LabelComponent]); len(c) > 0 {
					return false, fmt.Errorf("build %s not processed by build-service yet", b.Name)
				}
			}
			if cw.standIns.IntegrationService && !builds.IsMergeQueueBuild(&got) && got.Annotations[konfluxpeers.ISProcessedAnnotation] == "" {
				return false, fmt.Errorf("build %s not processed by integration-service yet", b.Name)
			}
		}
		runs := nudgeRuns(t, w, ns)
		for _, r := range runs {
			if c := r.Status.GetCondition(apis.ConditionSucceeded); c == nil || c.IsUnknown() {
				return false, fmt.Errorf("run %s has not ended", r.Name)
			}
		}
		got, _, _ := deliveries(runs)
		delivered := 0
		for _, n := range got {
			delivered += n
		}
		if delivered < owed {
			return false, fmt.Errorf("%d of %d nudges so far: %v", delivered, owed, got)
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

// componentRefs reads a Component's build-nudges-ref.
func componentRefs(ctx context.Context, w *world.World, ns, name string) []string {
	var c mirrorv1alpha1.Component
	if err := w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: name}, &c); err != nil {
		return nil
	}
	return c.Spec.BuildNudgesRef
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

// creator creates objects in ns.
func creator(t *testing.T, w *world.World, ns string) func(ctrlclient.Object) {
	return func(obj ctrlclient.Object) {
		t.Helper()
		obj.SetNamespace(ns)
		require.NoError(t, w.Kube.Create(context.Background(), obj))
	}
}

// scmCredentials is the tenant's basic-auth token for github.com, as Konflux's UI
// writes it.
func scmCredentials() *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "scm-github", Labels: map[string]string{
			credentials.LabelCredentials: credentials.LabelCredentialsSCM, credentials.LabelSCMHost: "github.com"}},
		Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{corev1.BasicAuthUsernameKey: []byte("konflux-bot"), corev1.BasicAuthPasswordKey: []byte("token")},
	}
}

// waitNudgedBy waits until the bridge has read the NudgeConfig and said who nudges
// its edges (a NudgedBy Event on a Component), so builds come after it.
func waitNudgedBy(t *testing.T, w *world.World, ns string) {
	t.Helper()
	world.Eventually(t, waitFor, "the NudgedBy Event", func() (bool, error) {
		var list corev1.EventList
		if err := w.Kube.List(context.Background(), &list, ctrlclient.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Reason == nudgeconfig.ReasonNudgedBy && e.InvolvedObject.Kind != "PipelineRun" {
				t.Logf("NudgedBy: %s", e.Message)
				return true, nil
			}
		}
		return false, nil
	})
}
