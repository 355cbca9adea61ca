package nudges

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// Nothing lost to pruning, and parity with integration-service.

// immediateEdge sets up operand -> targets as immediate NudgeConfig edges, every
// target with a repository and forge credentials.
func (f *fixture) immediateEdge(targets ...string) {
	f.component("operand", "", nil)
	var edges []konfluxv1alpha1.NudgeRelationship
	for _, t := range targets {
		f.component(t, f.repoURL("github.com", t), nil)
		edges = append(edges, immediate("operand", t))
	}
	f.credentials("github.com")
	f.nudgeConfig(edges...)
}

// unhide lets the running bridge see a build created hidden from it: the bridge
// "comes back" after being down.
func (f *fixture) unhide(plr *tektonv1.PipelineRun) {
	f.t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, labelNotForManager)
	require.NoError(f.t, f.w.Kube.Patch(f.ctx, plr, ctrlclient.RawPatch(types.MergePatchType, []byte(patch))))
}

// The pruner deletes a succeeded build before the bridge saw it (the bridge is down:
// the manager's cache does not see the build, only the admission webhook does). The
// finalizer the webhook put on at creation keeps it; when the bridge comes back it
// nudges the build exactly once and releases it, and the build is gone.
func TestBuildPrunedBeforeRoutedIsNudgedOnce(t *testing.T) {
	f := newFixture(t)
	f.immediateEdge("bundle")
	b := f.newBuild("operand", 1, map[string]string{labelNotForManager: "true"}, nil)
	require.Contains(t, b.Finalizers, konflux.FinalizerBuildRouting, "the admission webhook holds the build at creation")
	f.succeed(b, 1)
	// integration-service snapshots every succeeded push build (and holds it with
	// its own finalizer until it has): once the pruner has the build, the Snapshot
	// is what still proves it to the worker, which verifies the build only when the
	// Nudge starts, after the bridge let the build go.
	f.snapshot("operand-snapshot-1", "", map[string]string{"operand": pullSpec("operand", 1)}, true)
	require.NoError(t, f.w.Kube.Delete(f.ctx, b), "the pruner deletes the build")

	held := f.get(b)
	require.False(t, held.DeletionTimestamp.IsZero(), "deleted")
	require.Equal(t, []string{konflux.FinalizerBuildRouting}, held.Finalizers, "and held")
	wfID := nudgeapi.WorkflowID(f.ns, string(b.UID), "bundle")
	require.Empty(t, f.runID(wfID), "nothing routed it yet")

	f.unhide(b)
	runs := f.waitRuns(1)
	require.Equal(t, b.Name, runs[0].Annotations[renovate.AnnotationNudgingPipeline])
	require.Equal(t, "quay.io/org/operand:rev1", runs[0].Annotations[renovate.AnnotationNudgingImage])
	world.Eventually(t, waitFor, "the routed build is released and gone", func() (bool, error) {
		err := f.w.Kube.Get(f.ctx, ctrlclient.ObjectKeyFromObject(b), &tektonv1.PipelineRun{})
		return apierrors.IsNotFound(err), ctrlclient.IgnoreNotFound(err)
	})
	world.Eventually(t, waitFor, "exactly one workflow in the namespace: the build's Nudge", func() (bool, error) {
		if ids := f.workflows(); len(ids) != 1 || ids[0] != wfID {
			return false, fmt.Errorf("workflows %v", ids)
		}
		return true, nil
	})

	// The nudge needs nothing from the deleted build to finish.
	f.finish(runs[0], true)
	var res nudgeapi.Result
	require.NoError(t, f.w.TemporalClient.GetWorkflow(f.ctx, wfID, "").Get(f.ctx, &res))
	require.Equal(t, nudgeapi.PhaseSucceeded, res.Phase)
	require.Len(t, f.renovateRuns(), 1)
	require.Equal(t, []string{wfID}, f.workflows())
}

// reconcileWithoutTemporal runs a BuildReconciler that has no Temporal client: any
// Temporal call would panic, which is reported rather than crashing the test.
func (f *fixture) reconcileWithoutTemporal(plr *tektonv1.PipelineRun) (panicked any, err error) {
	r := &builds.BuildReconciler{Client: f.w.Kube, Options: builds.Options{TaskQueue: taskQueue}}
	defer func() { panicked = recover() }()
	_, err = r.Reconcile(f.ctx, ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(plr)})
	return nil, err
}

// An acknowledged build, reconciled again (a resync, a restart, a second bridge),
// changes nothing: no Temporal call, no write, no new workflow or run.
func TestAcknowledgedBuildIsNeverRoutedAgain(t *testing.T) {
	f := newFixture(t)
	f.immediateEdge("bundle")
	b := f.build("operand", 1, nil)
	f.waitRuns(1)
	acked := f.waitAcknowledged(b)
	require.Equal(t, "bundle", acked.Annotations[konflux.AnnotationNudgeRouted])
	wfID := nudgeapi.WorkflowID(f.ns, string(b.UID), "bundle")
	world.Eventually(t, waitFor, "the Nudge is listed", func() (bool, error) {
		if ids := f.workflows(); len(ids) != 1 || ids[0] != wfID {
			return false, fmt.Errorf("workflows %v", ids)
		}
		return true, nil
	})

	panicked, err := f.reconcileWithoutTemporal(b)
	require.Nil(t, panicked, "an acknowledged build must not reach Temporal")
	require.NoError(t, err)
	for i := 0; i < 2; i++ {
		_, err := f.reconciler().Reconcile(f.ctx, ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(b)})
		require.NoError(t, err)
	}
	require.Equal(t, acked.ResourceVersion, f.get(b).ResourceVersion, "no write either")
	require.Len(t, f.renovateRuns(), 1)
	require.Equal(t, []string{wfID}, f.workflows())
}

// A build of a component without nudge edges is never held (a finalizer on an
// unrelated build would keep it from the pruner for nothing) nor annotated: not at
// creation, not while it runs, not when it ends.
func TestBuildWithoutEdgesIsNeverHeld(t *testing.T) {
	f := newFixture(t)
	f.immediateEdge("bundle")
	// bundle is only a target: it nudges nothing.
	b := f.newBuild("bundle", 1, nil, nil)
	require.NotContains(t, b.Finalizers, konflux.FinalizerBuildRouting, "not held at creation")
	req := ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(b)}
	_, err := f.reconciler().Reconcile(f.ctx, req)
	require.NoError(t, err)
	got := f.get(b)
	require.Empty(t, got.Finalizers, "not held while it runs")
	f.succeed(b, 1)
	_, err = f.reconciler().Reconcile(f.ctx, req)
	require.NoError(t, err)
	got = f.get(b)
	require.Empty(t, got.Finalizers, "not held when it ends")
	require.NotContains(t, got.Annotations, konflux.AnnotationNudgeRouted, "not annotated")
	require.Empty(t, f.renovateRuns())
}

// A failed build is acknowledged and released without a nudge.
func TestFailedBuildIsReleasedWithoutNudge(t *testing.T) {
	f := newFixture(t)
	f.immediateEdge("bundle")
	b := f.newBuild("operand", 1, nil, nil)
	require.Contains(t, b.Finalizers, konflux.FinalizerBuildRouting)
	f.fail(b)
	acked := f.waitAcknowledged(b)
	require.Equal(t, builds.RoutedFailed, acked.Annotations[konflux.AnnotationNudgeRouted])
	require.Empty(t, acked.Finalizers)
	require.Empty(t, f.runID(nudgeapi.WorkflowID(f.ns, string(b.UID), "bundle")), "a failed build never nudges")
	require.Empty(t, f.renovateRuns())
}

// A running build the webhook did not hold (nudgeflow was down when it was created)
// is held by the reconciler as soon as it sees it.
func TestRunningBuildIsHeldOnSight(t *testing.T) {
	f := newFixture(t)
	f.immediateEdge("bundle")
	b := f.newBuild("operand", 1, map[string]string{labelNotForManager: "true"}, nil)
	// As if the webhook had not run: take the finalizer off while the bridge cannot see it.
	require.NoError(t, f.w.Kube.Patch(f.ctx, b, ctrlclient.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))))
	require.Empty(t, f.get(b).Finalizers)
	f.unhide(b)
	world.Eventually(t, waitFor, "the running build is held", func() (bool, error) {
		if got := f.get(b); !builds.Holds(got) {
			return false, fmt.Errorf("finalizers %v", got.Finalizers)
		}
		return true, nil
	})
	require.NotContains(t, f.get(b).Annotations, konflux.AnnotationNudgeRouted, "running: not routed yet")
	f.succeed(b, 1)
	require.Equal(t, "bundle", f.waitAcknowledged(b).Annotations[konflux.AnnotationNudgeRouted])
	f.waitRuns(1)
}

// integration-service nudged bundle from this build (its annotation lists it), in a
// cluster where nudgeflow runs every edge: nudgeflow does not nudge bundle again, and
// still nudges the target integration-service did not list.
func TestIntegrationServiceNudgedTargetIsNotNudgedAgain(t *testing.T) {
	f := newFixture(t)
	f.immediateEdge("bundle", "other")
	b := f.newBuild("operand", 1, nil, map[string]string{konflux.AnnotationISNudgeProcessed: "bundle"})
	f.succeed(b, 1)
	runs := f.waitRuns(1)
	require.Equal(t, "other", runs[0].Annotations[renovate.AnnotationNudgedComponents])
	acked := f.waitAcknowledged(b)
	require.Equal(t, "bundle,other", acked.Annotations[konflux.AnnotationNudgeRouted], "bundle counts as routed")
	require.Empty(t, f.runID(nudgeapi.WorkflowID(f.ns, string(b.UID), "bundle")), "no nudgeflow Nudge for what integration-service nudged")
	require.NotEmpty(t, f.runID(nudgeapi.WorkflowID(f.ns, string(b.UID), "other")))
	require.Len(t, f.renovateRuns(), 1)
}
