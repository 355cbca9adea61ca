package changegroup

import (
	"compress/gzip"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplayStoredHistories replays every history recorded from the end-to-end
// suite (testdata/*.json.gz, `make regen-histories`) against the current code: a
// change to the workflow's command sequence that is not guarded by
// workflow.GetVersion fails here. Histories are kept for each released shape.
func TestReplayStoredHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json.gz"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no stored histories: replay would prove nothing")
	logger := log.NewStructuredLogger(slog.New(slog.DiscardHandler))
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			f, err := os.Open(file)
			require.NoError(t, err)
			defer f.Close()
			zr, err := gzip.NewReader(f)
			require.NoError(t, err)
			history, err := client.HistoryFromJSON(zr, client.HistoryJSONOptions{})
			require.NoError(t, err)
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
			require.NoError(t, r.ReplayWorkflowHistory(logger, history))
		})
	}
}

// TestReplayDetectsUnguardedChange proves the replay test has teeth: the same
// workflow with one extra timer in front, not guarded by GetVersion, must fail to
// replay a stored history.
func TestReplayDetectsUnguardedChange(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "TestChangeGroupE2E.json.gz"))
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	history, err := client.HistoryFromJSON(zr, client.HistoryJSONOptions{})
	require.NoError(t, err)
	changed := func(ctx workflow.Context, in Input) (*State, error) {
		if err := workflow.Sleep(ctx, time.Second); err != nil {
			return nil, err
		}
		return Workflow(ctx, in)
	}
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(changed, workflow.RegisterOptions{Name: WorkflowName})
	err = r.ReplayWorkflowHistory(log.NewStructuredLogger(slog.New(slog.DiscardHandler)), history)
	require.Error(t, err)
	require.Contains(t, err.Error(), "TMPRL1100", "a non-determinism error")
}
