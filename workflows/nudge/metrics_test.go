package nudge

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
	"github.com/nudgeflow/nudgeflow/internal/metrics/metricstest"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// Every outcome recorded on the Component is counted by mode and outcome, and
// every ended Renovate run by how it ended.
func TestMetricsByModeAndOutcome(t *testing.T) {
	m := metricstest.New()
	env, _, _, _ := setupWithMetrics(t, m)
	req := request()
	req.Mode = metrics.ModeValidated
	req.PollInterval = 24 * time.Hour
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(nudgeapi.SignalRunFinished, renovaterun.RunStatus{Name: renovateapi.RunName(testID, 1), Done: true, Reason: "Failed"})
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(nudgeapi.SignalRunFinished, renovaterun.RunStatus{Name: renovateapi.RunName(testID, 2), Done: true, Gone: true})
	}, 8*time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(nudgeapi.SignalRunFinished, renovaterun.RunStatus{Name: renovateapi.RunName(testID, 3), Done: true, Succeeded: true})
	}, 25*time.Minute)
	env.ExecuteWorkflow(Workflow, req)
	require.NoError(t, env.GetWorkflowError())

	require.EqualValues(t, 2, m.Total(metrics.Nudges, "mode", "validated", "outcome", ReasonRunFailed))
	require.EqualValues(t, 1, m.Total(metrics.Nudges, "mode", "validated", "outcome", ReasonSucceeded))
	require.EqualValues(t, 0, m.Total(metrics.Nudges, "mode", "immediate"))
	require.EqualValues(t, 1, m.Total(metrics.RenovateRuns, "outcome", metrics.RunFailed))
	require.EqualValues(t, 1, m.Total(metrics.RenovateRuns, "outcome", metrics.RunGone))
	require.EqualValues(t, 1, m.Total(metrics.RenovateRuns, "outcome", metrics.RunSucceeded))
}
