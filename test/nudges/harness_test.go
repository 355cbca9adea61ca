package nudges

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"knative.dev/pkg/apis"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
	"github.com/nudgeflow/nudgeflow/internal/searchattr"
	"github.com/nudgeflow/nudgeflow/test/localbridge"
	"github.com/nudgeflow/nudgeflow/test/world"
	"github.com/nudgeflow/nudgeflow/test/world/worldbridge"
	"github.com/nudgeflow/nudgeflow/worker"
	"github.com/nudgeflow/nudgeflow/workflows/validatednudge"
)

const (
	taskQueue = "nudges-it"
	// standInQueue hosts the stand-in ChangeGroup workflow, apart from the real
	// worker, so the real registration may add "ChangeGroup" without a clash.
	standInQueue = "changegroup-stand-in"
	// labelNotForManager hides a build from the running bridge, for tests that
	// deliver builds themselves (other nudging peers, the benchmark).
	labelNotForManager = "nudgeflow-test/not-for-manager"
	token              = "glpat-secret-token-value"
	waitFor            = 90 * time.Second
	// operatorNamespace is the worker's own namespace (--operator-namespace), where
	// the trusted CA bundle is looked for.
	operatorNamespace = "nudgeflow-system"
)

// workerLogs holds everything the worker logged (every level), so tests can check
// what it explains and that no secret is ever in it.
var workerLogs = &world.LogBuffer{}

// logged reports whether one line of the worker's logs holds every part.
func logged(parts ...string) bool {
	for _, line := range strings.Split(workerLogs.String(), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

// tuning makes retries quick; the poll interval is long so run ends come from the
// bridge's signal.
var tuning = validatednudge.Tuning{MaxAttempts: 3, RetryBackoff: time.Second, PollInterval: time.Hour}

// failedSnapshotGrace is short so a failed Snapshot's build counts as failed within
// the tests' waits (the default is validatednudge.DefaultFailedSnapshotGrace).
const failedSnapshotGrace = 2 * time.Second

// start returns the package's world; TestMain started the stack (startStack).
func start(t testing.TB) *world.World { return world.Get(t) }

// startStack runs, for the package, the real worker (every workflow and activity)
// and a bridge manager with the builds feature (no nudging peers) serving its
// admission webhook where the API server sends it. The returned stop ends them
// before the servers go.
func startStack(w *world.World) (func(), error) {
	if err := w.Kube.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil {
		return nil, fmt.Errorf("creating the operator namespace: %w", err)
	}
	// The worker's own client logs everything into workerLogs, errors also to stderr.
	logger := slog.New(slog.NewMultiHandler(
		slog.NewTextHandler(workerLogs, &slog.HandlerOptions{Level: slog.LevelDebug}),
		slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	wc, err := client.NewClientFromExisting(w.TemporalClient, client.Options{Namespace: w.Temporal.Namespace, Logger: sdklog.NewStructuredLogger(logger)})
	if err != nil {
		return nil, fmt.Errorf("the worker's Temporal client: %w", err)
	}
	wk := worker.New(wc, worker.Deps{Kube: w.Kube, Temporal: w.TemporalClient, OperatorNamespace: operatorNamespace,
		StandInForge: world.IsStandInForge},
		worker.Options{TaskQueue: taskQueue, FailWorkflowOnPanic: true,
			// This world awaits Renovate PipelineRuns: the Renovate writer, pinned.
			ImmediateWriter: konfluxv1alpha1.WriterRenovate})
	if err := wk.Start(); err != nil {
		return nil, fmt.Errorf("starting the worker: %w", err)
	}
	standIn := sdkworker.New(w.TemporalClient, standInQueue, sdkworker.Options{})
	standIn.RegisterWorkflowWithOptions(standInChangeGroup, workflow.RegisterOptions{Name: changegroupapi.WorkflowName})
	if err := standIn.Start(); err != nil {
		wk.Stop()
		return nil, fmt.Errorf("starting the stand-in ChangeGroup worker: %w", err)
	}
	stopWorkers := func() { standIn.Stop(); wk.Stop() }

	notHidden, err := labels.NewRequirement(labelNotForManager, selection.DoesNotExist, nil)
	if err != nil {
		stopWorkers()
		return nil, err
	}
	// The bridge's manager caches only the builds not hidden from it, and runs only
	// the builds feature.
	b, err := worldbridge.Start(w, worldbridge.Options{OwnLogger: true, Bridge: localbridge.Options{
		NewManager: func(cfg *rest.Config, o bridge.ManagerOptions) (ctrl.Manager, error) {
			return ctrl.NewManager(cfg, ctrl.Options{
				Scheme:        kube.NewScheme(),
				Metrics:       metricsserver.Options{BindAddress: "0"},
				WebhookServer: webhook.NewServer(webhook.Options{Host: o.WebhookHost, Port: o.WebhookPort, CertDir: o.WebhookCertDir}),
				Cache: cache.Options{ByObject: map[ctrlclient.Object]cache.ByObject{
					&tektonv1.PipelineRun{}: {Label: labels.NewSelector().Add(*notHidden)},
				}},
			})
		},
		Setup: func(mgr ctrl.Manager) (*bridge.Bridge, error) {
			return nil, builds.Setup(mgr, builds.Options{Temporal: w.TemporalClient, TaskQueue: taskQueue, Tuning: tuning, FailedSnapshotGrace: failedSnapshotGrace})
		},
		ReadyTimeout: waitFor,
	}})
	if err != nil {
		stopWorkers()
		return nil, fmt.Errorf("the bridge manager: %w", err)
	}
	return func() {
		if err := b.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "bridge manager: %v\n", err)
		}
		stopWorkers()
	}, nil
}

// standInChangeGroup stands in for the lead's ChangeGroup workflow: it records the
// component-built signals it receives and answers them through its state query.
func standInChangeGroup(ctx workflow.Context) error {
	var got []changegroupapi.ComponentBuilt
	if err := workflow.SetQueryHandler(ctx, changegroupapi.QueryState, func() ([]changegroupapi.ComponentBuilt, error) { return got, nil }); err != nil {
		return err
	}
	ch := workflow.GetSignalChannel(ctx, changegroupapi.SignalComponentBuilt)
	for {
		var b changegroupapi.ComponentBuilt
		ch.Receive(ctx, &b)
		got = append(got, b)
	}
}

type fixture struct {
	t   testing.TB
	w   *world.World
	ns  string
	ctx context.Context
}

func newFixture(t testing.TB) *fixture {
	w := start(t)
	return &fixture{t: t, w: w, ns: w.Namespace(t), ctx: context.Background()}
}

func (f *fixture) create(obj ctrlclient.Object) {
	f.t.Helper()
	obj.SetNamespace(f.ns)
	require.NoError(f.t, f.w.Kube.Create(f.ctx, obj))
}

// repoURL is the repository name on host of this fixture's namespace: every
// namespace is a tenant with repositories of its own, as the ownership rule wants
// (the oldest claim on a URL owns it, and this world's namespaces are never deleted).
func (f *fixture) repoURL(host, name string) string {
	return "https://" + host + "/" + f.ns + "/" + name
}

// component creates a Component; gitURL empty makes a nudging-only one. The world's
// client onboards it: the namespace owns gitURL's repository.
func (f *fixture) component(name, gitURL string, annotations map[string]string, nudges ...string) {
	c := &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: mirrorv1alpha1.ComponentSpec{ComponentName: name, ContainerImage: "quay.io/org/" + name, BuildNudgesRef: nudges}}
	if gitURL != "" {
		c.Spec.Source.GitSource = &mirrorv1alpha1.GitSource{URL: gitURL, Revision: "main"}
	}
	f.create(c)
}

func (f *fixture) credentials(host string) {
	f.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "scm-" + host, Labels: map[string]string{
			credentials.LabelCredentials: credentials.LabelCredentialsSCM, credentials.LabelSCMHost: host}},
		Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{corev1.BasicAuthUsernameKey: []byte("konflux-bot"), corev1.BasicAuthPasswordKey: []byte(token)},
	})
}

func (f *fixture) nudgeConfig(edges ...konfluxv1alpha1.NudgeRelationship) {
	f.create(&konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName},
		Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: edges}})
}

// shippedNudgeConfig creates integration-service's NudgeConfig
// (appstudio.redhat.com/v1beta2) with the edges.
func (f *fixture) shippedNudgeConfig(edges ...konfluxv1alpha1.NudgeRelationship) {
	f.t.Helper()
	nc, err := nudgeconfigs.ToShipped(&konfluxv1alpha1.NudgeConfig{Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: edges}})
	require.NoError(f.t, err)
	f.create(nc)
}

func digestOf(n int) string { return fmt.Sprintf("sha256:%064x", n) }

// build creates a push build PipelineRun of component and marks it succeeded with
// IMAGE_URL (tag rev<n>) and IMAGE_DIGEST results; start orders builds.
func (f *fixture) build(component string, n int, extraLabels map[string]string) *tektonv1.PipelineRun {
	f.t.Helper()
	plr := f.newBuild(component, n, extraLabels, nil)
	f.succeed(plr, n)
	return plr
}

// newBuild creates the n-th push build PipelineRun of component, running (no status
// yet), and returns it as the API server admitted it (with what webhooks added).
func (f *fixture) newBuild(component string, n int, extraLabels, extraAnnotations map[string]string) *tektonv1.PipelineRun {
	f.t.Helper()
	lbl := map[string]string{builds.LabelComponent: component, builds.LabelPipelineType: builds.PipelineTypeBuild, builds.KeyEventType: "Push"}
	for k, v := range extraLabels {
		lbl[k] = v
	}
	ann := map[string]string{
		builds.KeyEventType:   "Push", // GitLab spelling: matched case-insensitively
		builds.AnnotationRepo: fmt.Sprintf("https://gitlab.com/org/%s/-/tree/%040x", component, n),
	}
	for k, v := range extraAnnotations {
		ann[k] = v
	}
	plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("%s-on-push-%d", component, n), Labels: lbl, Annotations: ann},
		Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "docker-build"}},
	}
	f.create(plr)
	return plr
}

// succeed ends the n-th build as Tekton would on success, with its results.
func (f *fixture) succeed(plr *tektonv1.PipelineRun, n int) {
	f.t.Helper()
	component := plr.Labels[builds.LabelComponent]
	// Started on a fixed clock (builds are ordered by it); finished now, as the
	// fixture's builds succeed while the test runs.
	start := time.Date(2026, 11, 1, 10, n, 0, 0, time.UTC)
	require.NoError(f.t, world.SetStatus(f.ctx, f.w.Kube, plr, func() {
		konflux.SucceededBuild{ImageURL: fmt.Sprintf("quay.io/org/%s:rev%d", component, n), Digest: digestOf(n),
			Started: start, Completed: time.Now()}.WriteStatus(plr)
	}))
}

// fail ends a build as Tekton would on failure: no results.
func (f *fixture) fail(plr *tektonv1.PipelineRun) {
	f.t.Helper()
	require.NoError(f.t, world.SetStatus(f.ctx, f.w.Kube, plr, func() {
		plr.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionFalse, Reason: "Failed", Message: "build-container failed"})
	}))
}

// reconciler is a BuildReconciler like the running bridge's (no nudging peers), for
// tests that deliver builds themselves.
func (f *fixture) reconciler() *builds.BuildReconciler {
	return &builds.BuildReconciler{Client: f.w.Kube, Options: builds.Options{Temporal: f.w.TemporalClient, TaskQueue: taskQueue, Tuning: tuning}}
}

// get reads a PipelineRun as the API server has it now.
func (f *fixture) get(plr *tektonv1.PipelineRun) *tektonv1.PipelineRun {
	f.t.Helper()
	var got tektonv1.PipelineRun
	require.NoError(f.t, f.w.Kube.Get(f.ctx, ctrlclient.ObjectKeyFromObject(plr), &got))
	return &got
}

// waitAcknowledged waits until the bridge routed and released the build.
func (f *fixture) waitAcknowledged(plr *tektonv1.PipelineRun) *tektonv1.PipelineRun {
	f.t.Helper()
	var got tektonv1.PipelineRun
	world.Eventually(f.t, waitFor, "build "+plr.Name+" acknowledged and released", func() (bool, error) {
		if err := f.w.Kube.Get(f.ctx, ctrlclient.ObjectKeyFromObject(plr), &got); err != nil {
			return false, err
		}
		if !builds.Settled(&got) {
			return false, fmt.Errorf("annotations %v, finalizers %v", got.Annotations, got.Finalizers)
		}
		return true, nil
	})
	return &got
}

// workflows lists the IDs of the Temporal workflows serving the namespace (by the
// KubeNamespace search attribute), sorted.
func (f *fixture) workflows() []string {
	f.t.Helper()
	var ids []string
	req := &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("%s = '%s'", searchattr.KubeNamespace.GetName(), f.ns)}
	for {
		resp, err := f.w.TemporalClient.ListWorkflow(f.ctx, req)
		require.NoError(f.t, err)
		for _, e := range resp.GetExecutions() {
			ids = append(ids, e.GetExecution().GetWorkflowId())
		}
		if len(resp.GetNextPageToken()) == 0 {
			break
		}
		req.NextPageToken = resp.GetNextPageToken()
	}
	sort.Strings(ids)
	return ids
}

func pullSpec(component string, n int) string {
	return fmt.Sprintf("quay.io/org/%s@%s", component, digestOf(n))
}

// renovateRuns lists the nudge PipelineRuns of the namespace, oldest first.
func (f *fixture) renovateRuns() []tektonv1.PipelineRun {
	f.t.Helper()
	var list tektonv1.PipelineRunList
	require.NoError(f.t, f.w.Kube.List(f.ctx, &list, ctrlclient.InNamespace(f.ns),
		ctrlclient.MatchingLabels{renovate.LabelType: renovate.LabelTypeNudge}))
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.Annotations[renovate.AnnotationAttempt] < b.Annotations[renovate.AnnotationAttempt]
		}
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	})
	return list.Items
}

// waitRuns waits until the namespace holds n nudge PipelineRuns, all started.
func (f *fixture) waitRuns(n int) []tektonv1.PipelineRun {
	f.t.Helper()
	var runs []tektonv1.PipelineRun
	world.Eventually(f.t, waitFor, fmt.Sprintf("%d Renovate PipelineRun(s)", n), func() (bool, error) {
		runs = f.renovateRuns()
		if len(runs) != n {
			return false, nil
		}
		// Started, every one: runs created in one second sort in no set order.
		for _, r := range runs {
			if r.IsPending() {
				return false, fmt.Errorf("run %s is pending", r.Name)
			}
		}
		return true, nil
	})
	return runs
}

// finish ends a Renovate run as Tekton would.
func (f *fixture) finish(plr tektonv1.PipelineRun, ok bool) {
	f.t.Helper()
	status, reason := corev1.ConditionTrue, "Succeeded"
	if !ok {
		status, reason = corev1.ConditionFalse, "Failed"
	}
	require.NoError(f.t, world.SetStatus(f.ctx, f.w.Kube, &plr, func() {
		plr.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: status, Reason: reason, Message: "renovate " + reason})
	}))
}

// events lists nudgeflow's Events on a component, by attempt.
func (f *fixture) events(component string) []corev1.Event {
	f.t.Helper()
	var list corev1.EventList
	require.NoError(f.t, f.w.Kube.List(f.ctx, &list, ctrlclient.InNamespace(f.ns),
		ctrlclient.MatchingLabels{renovate.LabelManagedBy: renovate.ManagedByNudgeflow}))
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == component {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Annotations[renovate.AnnotationAttempt] < out[j].Annotations[renovate.AnnotationAttempt]
	})
	return out
}

func reasons(evs []corev1.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Reason)
	}
	return out
}

// config reads the generated Renovate config of a run from its ConfigMap.
func (f *fixture) config(plr tektonv1.PipelineRun) (renovate.Config, []byte) {
	f.t.Helper()
	var cm corev1.ConfigMap
	require.NoError(f.t, f.w.Kube.Get(f.ctx, ctrlclient.ObjectKey{Namespace: f.ns, Name: plr.Name}, &cm))
	require.Len(f.t, cm.Data, 1)
	var raw string
	for _, v := range cm.Data {
		raw = v
	}
	var c renovate.Config
	require.NoError(f.t, json.Unmarshal([]byte(raw), &c))
	return c, []byte(raw)
}

// describe returns the workflow's run ID, or "" when it does not exist.
func (f *fixture) runID(id string) string {
	d, err := f.w.TemporalClient.DescribeWorkflowExecution(f.ctx, id, "")
	if err != nil {
		return ""
	}
	return d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
}

func (f *fixture) query(id, name string, into any) error {
	v, err := f.w.TemporalClient.QueryWorkflow(f.ctx, id, "", name)
	if err != nil {
		return err
	}
	return v.Get(into)
}

var _ = client.StartWorkflowOptions{}
