package changegroup_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// build-service nudges from every push build, merge-queue ones
// too. Its nudge run of a merge-queue build (both spellings of the branch) is
// cancelled at admission: the group holding the edge does not get the speculative
// image and the target nobody holds is not renudged. The push build of the merged
// commit that follows is held and renudged as any other.
func TestBuildServiceNudgeOfMergeQueueBuildIsCancelled(t *testing.T) {
	s := newScenario(t, "operand-a")
	s.createGroup("g", []string{"operand-a"}, 0)
	var mq []*tektonv1.PipelineRun
	for n, branch := range []string{"gh-readonly-queue/main/pr-7-", "refs/heads/gh-readonly-queue/main/pr-8-"} {
		b := s.buildRunWith("operand-a", digestOf("operand-a", n+1), time.Now(), map[string]string{
			konflux.AnnotationEventType: "push", konflux.AnnotationSourceBranch: branch + fmt.Sprintf("%040x", n+1)})
		plr := s.nudge("operand-a", []string{"bundle", "other"}, b.Name)
		require.Equal(t, tektonv1.PipelineRunSpecStatus(tektonv1.PipelineRunSpecStatusCancelled), plr.Spec.Status, branch)
		require.Contains(t, plr.Annotations[konflux.AnnotationCancelReason], "merge-queue build", branch)
		require.NotContains(t, plr.Annotations, konflux.AnnotationHeldBy, "no group gets a speculative image")
		require.NotContains(t, plr.Annotations, konflux.AnnotationRenudge, "nothing is renudged from it")
		mq = append(mq, b)
	}

	merged := s.buildRunWith("operand-a", digestOf("operand-a", 3), time.Now(), map[string]string{
		konflux.AnnotationEventType: "push", konflux.AnnotationSourceBranch: "refs/heads/main"})
	plr := s.nudge("operand-a", []string{"bundle", "other"}, merged.Name)
	require.Equal(t, "bundle=g", plr.Annotations[konflux.AnnotationHeldBy], "the post-merge build's nudge is held by the group")
	require.Equal(t, "other", plr.Annotations[konflux.AnnotationRenudge])
	world.Eventually(t, 30*time.Second, "the post-merge build reaches the group", func() (bool, error) {
		return s.group("g").Status.Ready == "1/1", nil
	})
	require.Equal(t, digestOf("operand-a", 3), statusOf(s.group("g"), "operand-a").NewBuild, "the group holds the post-merge build, not a merge-queue one")
	world.Eventually(t, 30*time.Second, "the post-merge build's target no group holds is nudged", func() (bool, error) {
		_, err := s.w.TemporalClient.DescribeWorkflowExecution(context.Background(), nudgeapi.WorkflowID(s.ns, string(merged.UID), "other"), "")
		return err == nil, nil
	})
	for _, b := range mq {
		_, err := s.w.TemporalClient.DescribeWorkflowExecution(context.Background(), nudgeapi.WorkflowID(s.ns, string(b.UID), "other"), "")
		require.Error(t, err, "no Nudge from merge-queue build %s", b.Name)
	}
}
