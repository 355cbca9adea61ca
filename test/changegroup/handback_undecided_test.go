package changegroup_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/handback"
	"github.com/nudgeflow/nudgeflow/activities/renovate"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/handbackapi"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// One build whose own Nudge's run a group held, and whose fate the bridge can
// never write (the build run was pruned and the Component has no
// lastPromotedImage), no longer stalls a hand-back: the other builds are handed
// back at once (build by build), and this one, once its held run is older than
// the wait, fails open to the group's own hand-back Nudge. Nothing is lost.
//
// The hand-back activity runs in the SDK's activity environment against this
// world's API server and Temporal, with a wait of seconds (the default is 10
// minutes); the Nudges it starts go to the environment's task queue, where no
// worker polls: each stays running, which is what the test reads.
func TestHandBackIsBuildByBuildAndFailsOpenOnAnUndecidableHeldRun(t *testing.T) {
	w := world.Get(t)
	ns := w.Namespace(t)
	ctx := context.Background()
	require.NoError(t, w.Kube.Create(ctx, &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "operand-y", Namespace: ns},
		Spec: mirrorv1alpha1.ComponentSpec{ComponentName: "operand-y", ContainerImage: "quay.io/org/operand-y"}}))

	// Build y's own Nudge waits for its run, which ChangeGroup g held; its build run
	// is gone and operand-y has no lastPromotedImage, so the bridge writes no fate.
	ownY := nudgeapi.WorkflowID(ns, "uid-y", "bundle")
	started := []string{ownY}
	t.Cleanup(func() {
		for _, id := range started {
			_ = w.TemporalClient.TerminateWorkflow(context.Background(), id, "", "test over")
		}
	})
	_, err := w.TemporalClient.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: ownY, TaskQueue: "nobody-polls-" + ns},
		nudgeapi.WorkflowName, nudgeapi.Request{Namespace: ns, Nudging: "operand-y", Nudged: "bundle", Mode: "immediate"})
	require.NoError(t, err)
	held := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: renovateapi.RunName(ownY, 1), Namespace: ns,
		Labels: map[string]string{renovate.LabelManagedBy: renovate.ManagedByNudgeflow, konflux.LabelNudgeType: konflux.NudgeTypeValue},
		Annotations: map[string]string{renovate.AnnotationWorkflowID: ownY, renovate.AnnotationAttempt: "1",
			konflux.AnnotationHeldBy: "bundle=g", konflux.AnnotationNudging: "operand-y", konflux.AnnotationNudged: "bundle",
			konflux.AnnotationNudgingPLR: "operand-y-on-push-1"}},
		Spec: tektonv1.PipelineRunSpec{Status: tektonv1.PipelineRunSpecStatusCancelled,
			PipelineSpec: &tektonv1.PipelineSpec{Tasks: []tektonv1.PipelineTask{{Name: "renovate"}}}}}
	require.NoError(t, w.Kube.Create(ctx, held))

	const wait = 8 * time.Second
	acts := &handback.Activities{Kube: w.Kube, Temporal: w.TemporalClient, HeldOutcomeWait: wait}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(acts.HandBack, activity.RegisterOptions{Name: handbackapi.Activity})
	req := handbackapi.Request{Namespace: ns, ChangeGroup: "g", UID: "uid-g", Target: "bundle", Builds: []handbackapi.Build{
		{Component: "operand-y", Build: imagebuild.Build{Digest: digestOf("operand-y", 1), PullSpec: imageOf("operand-y") + "@" + digestOf("operand-y", 1),
			BuildPipelineRun: "operand-y-on-push-1", BuildUID: "uid-y"}, Why: "the group was cancelled"},
		{Component: "operand-x", Build: imagebuild.Build{Digest: digestOf("operand-x", 1), PullSpec: imageOf("operand-x") + "@" + digestOf("operand-x", 1),
			BuildPipelineRun: "operand-x-on-push-1", BuildUID: "uid-x"}, Why: "the group was cancelled"},
	}}
	ownX := nudgeapi.WorkflowID(ns, "uid-x", "bundle")
	handBackY := nudgeapi.HandBackWorkflowID(ns, "uid-y", "bundle", "uid-g")
	started = append(started, ownX, handBackY)

	// At once: y is undecided and young, so it fails and is to be retried; x, after
	// it in the list, is handed back anyway.
	_, err = env.ExecuteActivity(handbackapi.Activity, req)
	require.Error(t, err)
	require.Contains(t, err.Error(), "1 of 2 build(s)")
	require.Contains(t, err.Error(), "operand-y@"+digestOf("operand-y", 1))
	require.NotContains(t, err.Error(), "operand-x@")
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, statusOfWorkflow(t, w, ownX), "x's own Nudge carries it")
	_, err = w.TemporalClient.DescribeWorkflowExecution(ctx, handBackY, "")
	require.Error(t, err, "no hand-back Nudge of y while its held run may still be decided")
	require.Empty(t, heldRun(t, w, held).Annotations[konflux.AnnotationHeldOutcome], "the bridge cannot tell the held run's build")

	// x's own Nudge launches its run, not held (played here: no worker polls its
	// queue), so a retry finds x with that Nudge again.
	require.NoError(t, w.Kube.Create(ctx, &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: renovateapi.RunName(ownX, 1), Namespace: ns,
		Labels:      map[string]string{renovate.LabelManagedBy: renovate.ManagedByNudgeflow, konflux.LabelNudgeType: konflux.NudgeTypeValue},
		Annotations: map[string]string{renovate.AnnotationWorkflowID: ownX, renovate.AnnotationAttempt: "1"}},
		Spec: tektonv1.PipelineRunSpec{Status: tektonv1.PipelineRunSpecStatusPending,
			PipelineSpec: &tektonv1.PipelineSpec{Tasks: []tektonv1.PipelineTask{{Name: "renovate"}}}}}))

	// Retried as the ChangeGroup workflow retries it: once the held run is older
	// than the wait, y goes to the group's own hand-back Nudge.
	var res handbackapi.Result
	world.Eventually(t, 4*wait, "the hand-back fails open for y", func() (bool, error) {
		v, err := env.ExecuteActivity(handbackapi.Activity, req)
		if err != nil {
			return false, err
		}
		return true, v.Get(&res)
	})
	require.ElementsMatch(t, []string{handBackY, ownX}, res.Nudges)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, statusOfWorkflow(t, w, handBackY))
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, statusOfWorkflow(t, w, ownY), "y's own Nudge is left as it is")
	require.Empty(t, heldRun(t, w, held).Annotations[konflux.AnnotationHeldOutcome], "still undecided: the hand-back did not wait for it")
}

func statusOfWorkflow(t *testing.T, w *world.World, id string) enumspb.WorkflowExecutionStatus {
	t.Helper()
	desc, err := w.TemporalClient.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err, id)
	return desc.GetWorkflowExecutionInfo().GetStatus()
}

func heldRun(t *testing.T, w *world.World, plr *tektonv1.PipelineRun) *tektonv1.PipelineRun {
	t.Helper()
	var got tektonv1.PipelineRun
	require.NoError(t, w.Kube.Get(context.Background(), ctrlclient.ObjectKeyFromObject(plr), &got))
	return &got
}
