package validatednudge

import (
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/nudgeflow/nudgeflow/internal/replaytest"
	"github.com/nudgeflow/nudgeflow/workflows/nudge"
)

// TestReplayStoredHistories replays the ValidatedNudge histories recorded from
// test/nudges (`make regen-histories`), including a run still waiting for builds.
func TestReplayStoredHistories(t *testing.T) {
	replaytest.ReplayAll(t, func(r worker.WorkflowReplayer) {
		r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
		r.RegisterWorkflowWithOptions(nudge.Workflow, workflow.RegisterOptions{Name: nudge.WorkflowName})
	})
}
