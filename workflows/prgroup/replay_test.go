package prgroup

import (
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/nudgeflow/nudgeflow/internal/replaytest"
)

// TestReplayStoredHistories replays every history recorded from test/prgroups
// (testdata/*.json.gz, `make regen-histories`) against the current code: a change
// of the command sequence not guarded by workflow.GetVersion fails here.
func TestReplayStoredHistories(t *testing.T) {
	replaytest.ReplayAll(t, func(r worker.WorkflowReplayer) {
		r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	})
}
