package changegroup_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/client"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/localenv"
	"github.com/nudgeflow/nudgeflow/workflows/nudge"
)

// nudgeflow's own Renovate run, launched by a Nudge that began before a group
// collected its edge (a retry, a hand-back), is held at admission like
// build-service's: the group takes the build, and the Nudge ends
// HeldByChangeGroup after that one run — it neither fails nor launches again.
func TestOwnRenovateRunHeldEndsTheNudge(t *testing.T) {
	s := newScenario(t, "operand-a", "operand-b")
	// Renovate tells the forge by host, and 127.0.0.1 names none: say it, as a
	// Component on a self-hosted forge does.
	var bundle mirrorv1alpha1.Component
	require.NoError(t, s.w.Kube.Get(context.Background(), types.NamespacedName{Namespace: s.ns, Name: "bundle"}, &bundle))
	bundle.Annotations = map[string]string{mirrorv1alpha1.AnnotationGitProvider: "github"}
	require.NoError(t, s.w.Kube.Update(context.Background(), &bundle))
	s.createGroup("g", []string{"operand-a", "operand-b"}, 0)
	s.explainOnFailure("g")
	build := s.buildRun("operand-a", digestOf("operand-a", 1), time.Now())
	id := nudge.WorkflowID(s.ns, string(build.UID), "bundle")
	// A small backoff and several attempts: were the held run counted as a failure,
	// the Nudge would launch again within the test's deadline.
	run, err := s.w.TemporalClient.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue}, nudge.WorkflowName,
		nudge.Request{Namespace: s.ns, Nudging: "operand-a", Nudged: "bundle", Mode: "immediate",
			Build: nudge.Build{ImageURL: imageOf("operand-a") + ":on-push-abc", Digest: digestOf("operand-a", 1),
				PullSpec: imageOf("operand-a") + "@" + digestOf("operand-a", 1), BuildPipelineRun: build.Name, BuildUID: string(build.UID)},
			Tuning: nudge.Tuning{MaxAttempts: 3, RetryBackoff: time.Second, PollInterval: 2 * time.Second}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var res nudge.Result
	require.NoError(t, run.Get(ctx, &res))
	require.Equal(t, nudge.PhaseHeldByChangeGroup, res.Phase, res.Reason)
	require.Equal(t, 1, res.Attempts)
	require.Contains(t, res.Reason, "ChangeGroup g")

	runs := s.renovateRuns()
	require.Len(t, runs, 1, "one Renovate run, no retry")
	require.Equal(t, tektonv1.PipelineRunSpecStatus(tektonv1.PipelineRunSpecStatusCancelled), runs[0].Spec.Status, "held at admission")
	require.Equal(t, "bundle=g", runs[0].Annotations[konflux.AnnotationHeldBy])
	require.Equal(t, konflux.HeldOutcomeDeliveredPrefix+"g", runs[0].Annotations[konflux.AnnotationHeldOutcome])
	require.Equal(t, renovate.RunName(id, 1), runs[0].Name)
	cg := s.waitFor("g", "the group has the build", 30*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool { return cg.Status.Ready == "1/2" })
	require.Equal(t, digestOf("operand-a", 1), statusOf(cg, "operand-a").NewBuild)
	s.w.RecordHistory(t, filepath.Join(localenv.RepoRoot(), "workflows", "nudge", "testdata"), t.Name(), id)
}
