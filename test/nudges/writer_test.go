package nudges

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/activities/writerchoice"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/contracts/nudgewriteapi"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
	"github.com/nudgeflow/nudgeflow/internal/searchattr"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
	"github.com/nudgeflow/nudgeflow/workflows/nudge"
)

// stubWriter stands in for the direct writer (activities/nudgewrite) under its
// registered name: it writes nothing and answers Opened, recording what it was
// asked.
type stubWriter struct {
	mu    sync.Mutex
	asked []nudgewriteapi.WriteRequest
}

func (s *stubWriter) write(_ context.Context, r nudgewriteapi.WriteRequest) (nudgewriteapi.WriteResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, r)
	return nudgewriteapi.WriteResult{Outcome: nudgewriteapi.OutcomeOpened, Branch: "konflux/component-updates/" + r.Nudging,
		PR: 1, URL: "https://github.com/org/bundle/pull/1", Commit: "0123abc", Files: []string{"Dockerfile"}}, nil
}

func (s *stubWriter) requests() []nudgewriteapi.WriteRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]nudgewriteapi.WriteRequest(nil), s.asked...)
}

// directWorld runs, on a task queue of its own, the Nudge workflow with the real
// activities it calls (build verification, writer choice with the worker default
// renovate, Renovate's) and the stub writer; a build reconciler of the bridge
// starts Nudges there.
func directWorld(t *testing.T, f *fixture) (*stubWriter, *builds.BuildReconciler) {
	t.Helper()
	queue := "nudges-direct-" + f.ns
	wk := sdkworker.New(f.w.TemporalClient, queue, sdkworker.Options{WorkflowPanicPolicy: sdkworker.FailWorkflow})
	wk.RegisterWorkflowWithOptions(nudge.Workflow, workflow.RegisterOptions{Name: nudgeapi.WorkflowName})
	(&buildcheck.Activities{Kube: f.w.Kube}).Register(wk)
	(&writerchoice.Activities{Kube: f.w.Kube, Default: konfluxv1alpha1.WriterRenovate}).Register(wk)
	acts := renovate.New(f.w.Kube, operatorNamespace)
	acts.Ownership = &ownership.Checker{Reader: f.w.Kube, BindingNamespace: operatorNamespace, Events: f.w.Kube}
	acts.StandInForge = world.IsStandInForge
	wk.RegisterActivity(acts)
	stub := &stubWriter{}
	wk.RegisterActivityWithOptions(stub.write, activity.RegisterOptions{Name: nudgewriteapi.WriteActivity})
	require.NoError(t, wk.Start())
	t.Cleanup(wk.Stop)
	return stub, &builds.BuildReconciler{Client: f.w.Kube, Options: builds.Options{Temporal: f.w.TemporalClient, TaskQueue: queue, Tuning: tuning}}
}

// routeHidden creates the n-th build of component hidden from the running bridge
// and routes it with r; it returns the Nudge's workflow ID for target.
func (f *fixture) routeHidden(r *builds.BuildReconciler, component, target string, n int) string {
	f.t.Helper()
	b := f.build(component, n, map[string]string{labelNotForManager: "true"})
	_, err := r.Reconcile(f.ctx, ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(b)})
	require.NoError(f.t, err)
	return nudgeapi.WorkflowID(f.ns, string(b.UID), target)
}

// The NudgeConfig's edge says auto over the namespace's renovate and the worker's
// renovate: the Nudge the bridge started writes through the direct writer, once,
// launches no Renovate PipelineRun, records a NudgedDirectly Event naming the pull
// request, and its result, state and NudgeWriter search attribute say the direct
// writer ran and why. The history is the stored shape of the direct path.
func TestDirectWriterNudgesWithoutAPipelineRun(t *testing.T) {
	f := newFixture(t)
	f.component("operand", "", nil)
	f.component("bundle", f.repoURL("github.com", "bundle"), nil)
	f.credentials("github.com")
	edge := immediate("operand", "bundle")
	edge.ImmediateWriter = konfluxv1alpha1.WriterAuto
	f.create(&konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName},
		Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: []konfluxv1alpha1.NudgeRelationship{edge}, ImmediateWriter: konfluxv1alpha1.WriterRenovate}})
	stub, r := directWorld(t, f)

	wfID := f.routeHidden(r, "operand", "bundle", 1)
	var res nudgeapi.Result
	require.NoError(t, f.w.TemporalClient.GetWorkflow(f.ctx, wfID, "").Get(f.ctx, &res))
	require.Equal(t, nudgeapi.PhaseSucceeded, res.Phase, res.Reason)
	require.Equal(t, nudgeapi.WriterDirect, res.Writer)
	require.Contains(t, res.WriterReason, "edge operand -> bundle")
	require.Equal(t, "https://github.com/org/bundle/pull/1", res.PullRequest)
	require.Empty(t, res.PipelineRuns)
	require.Empty(t, f.renovateRuns(), "no Renovate PipelineRun")
	asked := stub.requests()
	require.Len(t, asked, 1)
	require.Equal(t, digestOf(1), asked[0].Digest)
	require.Equal(t, wfID, asked[0].WorkflowID)
	evs := f.events("bundle")
	require.Equal(t, []string{nudge.ReasonNudgedDirectly}, reasons(evs))
	require.Contains(t, evs[0].Message, "the direct writer nudged bundle")
	require.Contains(t, evs[0].Message, "pull/1")
	var st nudge.State
	require.NoError(t, f.query(wfID, nudge.QueryState, &st))
	require.Equal(t, nudgeapi.WriterDirect, st.Writer)
	require.Equal(t, string(konfluxv1alpha1.WriterAuto), st.Choice.Setting)

	desc, err := f.w.TemporalClient.DescribeWorkflowExecution(f.ctx, wfID, "")
	require.NoError(t, err)
	var writer string
	p := desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[searchattr.NudgeWriter.GetName()]
	require.NotNil(t, p, "NudgeWriter is set")
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(p, &writer))
	require.Equal(t, nudgeapi.WriterDirect, writer)
	f.w.RecordHistory(t, filepath.Join(localenv.RepoRoot(), "workflows", "nudge", "testdata"), t.Name()+"@"+nudge.HistoryShape, wfID)
}

// An active ChangeGroup holds the edge when the Nudge would write (it was created
// after the build, so the bridge started the Nudge): the direct path has no
// PipelineRun for the group to hold at admission, so the nudge takes the Renovate
// path whatever the NudgeConfig says, and the direct writer is never asked.
func TestChangeGroupHoldingTheEdgeKeepsTheRenovatePath(t *testing.T) {
	f := newFixture(t)
	f.component("operand", "", nil)
	f.component("bundle", f.repoURL("github.com", "bundle"), nil)
	f.credentials("github.com")
	f.create(&konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName},
		Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: []konfluxv1alpha1.NudgeRelationship{immediate("operand", "bundle")},
			ImmediateWriter: konfluxv1alpha1.WriterDirect}})
	stub, r := directWorld(t, f)
	// The group exists before the Nudge chooses, not when the build ended: the
	// bridge's own check (FindHoldingAt the build's end) lets the build through.
	b := f.newBuild("operand", 2, map[string]string{labelNotForManager: "true"}, nil)
	f.succeed(b, 2)
	cg := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "bundle-update", Finalizers: []string{konflux.FinalizerChangeGroup}},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "operand"}}}}
	f.create(cg)
	wfID := nudgeapi.WorkflowID(f.ns, string(b.UID), "bundle")
	require.NoError(t, nudgeapi.Start(f.ctx, f.w.TemporalClient, r.Options.TaskQueue, nudgeapi.Request{Namespace: f.ns, Nudging: "operand", Nudged: "bundle",
		Mode: string(konfluxv1alpha1.ModeImmediate), Build: buildOf(t, f, b), Tuning: tuning}))

	run := f.waitRuns(1)[0]
	require.Equal(t, wfID, run.Annotations[renovate.AnnotationWorkflowID])
	var st nudge.State
	world.Eventually(t, waitFor, "the Nudge chose its writer", func() (bool, error) {
		st = nudge.State{}
		return f.query(wfID, nudge.QueryState, &st) == nil && st.Choice != nil, nil
	})
	require.Equal(t, nudgeapi.WriterRenovate, st.Writer)
	require.Equal(t, "bundle-update", st.Choice.HeldBy)
	require.Contains(t, st.WriterReason, "ChangeGroup bundle-update holds operand->bundle")
	require.Empty(t, stub.requests(), "the direct writer never writes an edge a group holds")
	f.finish(run, true)
	var res nudgeapi.Result
	require.NoError(t, f.w.TemporalClient.GetWorkflow(f.ctx, wfID, "").Get(f.ctx, &res))
	require.Equal(t, nudgeapi.WriterRenovate, res.Writer)
}

// buildOf reads the build as the bridge does.
func buildOf(t *testing.T, f *fixture, b *tektonv1.PipelineRun) nudgeapi.Build {
	t.Helper()
	got, ok := konflux.BuildOf(f.get(b))
	require.True(t, ok)
	return got
}
