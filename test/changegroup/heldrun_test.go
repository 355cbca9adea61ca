package changegroup_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/workflows/nudge"
)

// nudgeflow's own Renovate run, launched by a Nudge that began before a group
// collected its edge (a retry, a hand-back), is held at admission like
// build-service's: the group takes the build, and the Nudge ends
// HeldByChangeGroup after that one run — it neither fails nor launches again.
func TestOwnRenovateRunHeldEndsTheNudge(t *testing.T) {
	s := newScenario(t, "operand-a", "operand-b")
	s.nudgeable()
	s.createGroup("g", []string{"operand-a", "operand-b"}, 0)
	s.explainOnFailure("g")
	build := s.buildRun("operand-a", digestOf("operand-a", 1), time.Now())
	id, run := s.startOwnNudge(build, digestOf("operand-a", 1), taskQueue)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var res nudgeapi.Result
	require.NoError(t, run.Get(ctx, &res))
	require.Equal(t, nudgeapi.PhaseHeldByChangeGroup, res.Phase, res.Reason)
	require.Equal(t, 1, res.Attempts)
	require.Contains(t, res.Reason, "ChangeGroup g")

	runs := s.renovateRuns()
	require.Len(t, runs, 1, "one Renovate run, no retry")
	require.Equal(t, tektonv1.PipelineRunSpecStatus(tektonv1.PipelineRunSpecStatusCancelled), runs[0].Spec.Status, "held at admission")
	require.Equal(t, "bundle=g", runs[0].Annotations[konflux.AnnotationHeldBy])
	require.Equal(t, konflux.HeldOutcomeDeliveredPrefix+"g", runs[0].Annotations[konflux.AnnotationHeldOutcome])
	require.Equal(t, renovateapi.RunName(id, 1), runs[0].Name)
	cg := s.waitFor("g", "the group has the build", 30*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool { return cg.Status.Ready == "1/2" })
	require.Equal(t, digestOf("operand-a", 1), statusOf(cg, "operand-a").NewBuild)
	s.w.RecordHistory(t, filepath.Join(localenv.RepoRoot(), "workflows", "nudge", "testdata"), t.Name()+"@"+nudge.HistoryShape, id)
}
