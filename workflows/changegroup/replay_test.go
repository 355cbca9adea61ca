package changegroup

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	handback "github.com/nudgeflow/nudgeflow/contracts/handbackapi"
	"github.com/nudgeflow/nudgeflow/internal/replaytest"
)

// TestReplayStoredHistories replays every history recorded from the end-to-end
// suite (testdata/*.json.gz, `make regen-histories`) against the current code: a
// change to the workflow's command sequence that is not guarded by
// workflow.GetVersion fails here. Histories are kept for each released shape.
func TestReplayStoredHistories(t *testing.T) {
	replaytest.ReplayAll(t, func(r worker.WorkflowReplayer) {
		r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: changegroupapi.WorkflowName})
	})
}

// TestReplayDetectsUnguardedChange proves the replay test has teeth: the same
// workflow with one extra timer in front, not guarded by GetVersion, must fail to
// replay a stored history.
func TestReplayDetectsUnguardedChange(t *testing.T) {
	file := filepath.Join("testdata", "TestChangeGroupE2E.json.gz")
	h, err := replaytest.Load(file)
	require.NoError(t, err)
	changed := func(ctx workflow.Context, in Input) (*State, error) {
		if err := workflow.Sleep(ctx, time.Second); err != nil {
			return nil, err
		}
		return Workflow(ctx, in)
	}
	err = replaytest.Replay(h, replaytest.WorkflowID(file), func(r worker.WorkflowReplayer) {
		r.RegisterWorkflowWithOptions(changed, workflow.RegisterOptions{Name: changegroupapi.WorkflowName})
	})
	require.Error(t, err)
	require.Contains(t, err.Error(), "TMPRL1100", "a non-determinism error")
}

// TestStoredBuildsDecodeWhole proves that the build carriers, now that they embed
// imagebuild.Build, still read every field the stored histories hold: the group's
// input and state (Component), its signals, its hand-backs and verifications.
func TestStoredBuildsDecodeWhole(t *testing.T) {
	replaytest.DecodeAllWhole(t, map[string]any{
		"input":  Input{},
		"result": State{},
		"signal " + changegroupapi.SignalComponentBuilt: changegroupapi.ComponentBuilt{},
		"activity " + handback.Activity:                 handback.Request{},
		"activity " + buildcheck.ActivityName:           buildcheck.Request{},
	})
}
