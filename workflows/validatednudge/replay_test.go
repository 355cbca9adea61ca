package validatednudge

import (
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/nudgeflow/nudgeflow/activities/grouproute"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/replaytest"
	"github.com/nudgeflow/nudgeflow/workflows/nudge"
)

// TestReplayStoredHistories replays the ValidatedNudge histories recorded from
// test/nudges (`make regen-histories`), including a run still waiting for builds.
func TestReplayStoredHistories(t *testing.T) {
	replaytest.ReplayAll(t, func(r worker.WorkflowReplayer) {
		r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
		r.RegisterWorkflowWithOptions(nudge.Workflow, workflow.RegisterOptions{Name: nudgeapi.WorkflowName})
	})
}

// TestStoredBuildsDecodeWhole proves that the builds signalled to a
// ValidatedNudge, now imagebuild.Build, still read every field the stored histories
// hold, as does the batching request that carries one to a ChangeGroup.
func TestStoredBuildsDecodeWhole(t *testing.T) {
	replaytest.DecodeAllWhole(t, map[string]any{
		"input":                           Input{},
		"signal " + SignalBuild:           Build{},
		"activity " + grouproute.Activity: grouproute.Request{},
	})
}
