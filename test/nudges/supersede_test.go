package nudges

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	"github.com/nudgeflow/nudgeflow/test/world"
	"github.com/nudgeflow/nudgeflow/workflows/nudge"
)

// nudgeResult waits for the bridge to start a Nudge and for it to end, and
// returns its result.
func (f *fixture) nudgeResult(id string) nudgeapi.Result {
	f.t.Helper()
	world.Eventually(f.t, waitFor, "the bridge starts "+id, func() (bool, error) {
		return f.runID(id) != "", nil
	})
	var res nudgeapi.Result
	require.NoError(f.t, f.w.TemporalClient.GetWorkflow(context.Background(), id, "").Get(f.ctx, &res))
	return res
}

// A newer build is never rolled back by an older one: an older build that finishes
// after a newer build's nudge launched gets no Renovate run (its Nudge ends
// Superseded), and a newer build's run stops the run of an older build still
// running (that Nudge ends Superseded too, not Cancelled, and is not retried).
func TestOlderBuildNeverRollsBackANewerOne(t *testing.T) {
	f := newFixture(t)
	f.component("operand", "", nil)
	f.component("bundle", f.repoURL("github.com", "bundle"), nil)
	f.credentials("github.com")
	f.nudgeConfig(immediate("operand", "bundle"))

	second := f.build("operand", 2, nil)
	runs := f.waitRuns(1)
	require.Equal(t, second.Name, runs[0].Annotations[renovate.AnnotationNudgingPipeline])

	first := f.build("operand", 1, nil) // started earlier, finished later
	res := f.nudgeResult(nudgeapi.WorkflowID(f.ns, string(first.UID), "bundle"))
	require.Equal(t, nudgeapi.PhaseSuperseded, res.Phase, res.Reason)
	require.Contains(t, res.Reason, runs[0].Name)
	require.Len(t, f.renovateRuns(), 1, "no run for the older build")

	// The second build's run is still running when a third build's launches: it is
	// stopped, and Tekton ends it cancelled; the third build's run waits for the
	// branch until then.
	third := f.build("operand", 3, nil)
	var stopped tektonv1.PipelineRun
	world.Eventually(t, waitFor, "the second build's run is stopped", func() (bool, error) {
		for _, r := range f.renovateRuns() {
			if r.Annotations[renovate.AnnotationNudgingPipeline] == second.Name {
				stopped = r
				return r.Spec.Status == tektonv1.PipelineRunSpecStatusCancelled, nil
			}
		}
		return false, fmt.Errorf("no run for %s", second.Name)
	})
	require.Equal(t, renovateapi.RunName(nudgeapi.WorkflowID(f.ns, string(third.UID), "bundle"), 1), stopped.Annotations[renovaterun.AnnotationSupersededBy])
	require.NoError(t, world.SetStatus(f.ctx, f.w.Kube, &stopped, func() {
		stopped.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionFalse,
			Reason: tektonv1.PipelineRunReasonCancelled.String(), Message: "PipelineRun was cancelled"})
	}))
	res = f.nudgeResult(nudgeapi.WorkflowID(f.ns, string(second.UID), "bundle"))
	require.Equal(t, nudgeapi.PhaseSuperseded, res.Phase, res.Reason)
	require.Equal(t, 1, res.Attempts, "a superseded run is not retried")
	runs = f.waitRuns(2)
	var builds []string
	for _, r := range runs {
		builds = append(builds, r.Annotations[renovate.AnnotationNudgingPipeline])
	}
	require.ElementsMatch(t, []string{second.Name, third.Name}, builds, "the third build's run started once the branch was free")
	require.Equal(t, []string{nudge.ReasonSuperseded}, reasons(f.eventsOf(string(second.UID))))
}

// eventsOf lists nudgeflow's Events on bundle for the Nudge of one build.
func (f *fixture) eventsOf(buildUID string) []corev1.Event {
	var out []corev1.Event
	for _, e := range f.events("bundle") {
		if e.Annotations[renovate.AnnotationWorkflowID] == nudgeapi.WorkflowID(f.ns, buildUID, "bundle") {
			out = append(out, e)
		}
	}
	return out
}
