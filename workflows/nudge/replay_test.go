package nudge

import (
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/nudgeflow/nudgeflow/internal/replaytest"
)

// TestReplayStoredHistories replays the Nudge histories recorded from test/nudges
// (`make regen-histories`): an unguarded change of the command sequence fails here.
func TestReplayStoredHistories(t *testing.T) {
	replaytest.ReplayAll(t, func(r worker.WorkflowReplayer) {
		r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	})
}
