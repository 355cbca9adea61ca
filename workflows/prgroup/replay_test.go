package prgroup

import (
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	"github.com/nudgeflow/nudgeflow/contracts/prgroupapi"
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

// TestStoredBuildsDecodeWhole proves that the PR group's builds (PRBuild, Entry,
// the push build found), now embedding imagebuild.Build, still read every field the
// stored histories hold.
func TestStoredBuildsDecodeWhole(t *testing.T) {
	replaytest.DecodeAllWhole(t, map[string]any{
		"input":                   Input{},
		"result":                  State{},
		"signal " + SignalPRBuild: PRBuild{},
		"activity-result " + prgroupapi.FindPushBuildActivity: prgroupapi.PushBuild{},
		"activity " + buildcheck.ActivityName:                 buildcheck.Request{},
	})
}
