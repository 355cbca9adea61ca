package nudge

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/contracts/nudgewriteapi"
	"github.com/nudgeflow/nudgeflow/internal/replaytest"
)

// TestReplayStoredHistories replays the Nudge histories recorded from test/nudges
// (`make regen-histories`): an unguarded change of the command sequence fails here.
func TestReplayStoredHistories(t *testing.T) {
	replaytest.ReplayAll(t, func(r worker.WorkflowReplayer) {
		r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: nudgeapi.WorkflowName})
	})
}

// A Nudge that a worker without the forge's delivery check ran to its end while
// the bridge already sent ExitedZero (the bridge upgraded first) replays on this
// code without asking the forge: the check is guarded by versionDeliveryFromForge,
// and such a history has no marker. The stored verify-builds history, its
// run-end signals rewritten as the newer bridge sends them, proves it.
func TestReplayOlderShapeWithNewerSignals(t *testing.T) {
	const file = "testdata/TestRenovateFailsTwiceThenSucceeds@verify-builds.json.gz"
	h, err := replaytest.Load(file)
	require.NoError(t, err)
	rewritten := 0
	for _, e := range h.GetEvents() {
		a := e.GetWorkflowExecutionSignaledEventAttributes()
		if a == nil || a.GetSignalName() != nudgeapi.SignalRunFinished {
			continue
		}
		for _, p := range a.GetInput().GetPayloads() {
			var s map[string]any
			require.NoError(t, json.Unmarshal(p.GetData(), &s))
			if s["succeeded"] == true {
				s["exitedZero"] = true
				b, err := json.Marshal(s)
				require.NoError(t, err)
				p.Data = b
				rewritten++
			}
		}
	}
	require.Equal(t, 1, rewritten, "the history's successful run end")
	require.NoError(t, replaytest.Replay(h, replaytest.WorkflowID(file), func(r worker.WorkflowReplayer) {
		r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: nudgeapi.WorkflowName})
	}))
}

// TestStoredBuildsDecodeWhole proves that the Nudge's request, whose Build is now
// imagebuild.Build, still reads every field the stored histories hold, as do the
// verification, the writer choice and the direct write it asks for.
func TestStoredBuildsDecodeWhole(t *testing.T) {
	replaytest.DecodeAllWhole(t, map[string]any{
		"input":                               nudgeapi.Request{},
		"activity " + buildcheck.ActivityName: buildcheck.Request{},
		"activity " + nudgeapi.ChooseWriterActivity: nudgeapi.WriterChoiceRequest{},
		"activity " + nudgewriteapi.WriteActivity:   nudgewriteapi.WriteRequest{},
	})
}
