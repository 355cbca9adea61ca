// Package replaytest replays stored workflow histories against the current code,
// the proof that a workflow change kept its command sequence (or guarded the
// change with workflow.GetVersion).
package replaytest

import (
	"compress/gzip"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Load reads one gzipped JSON history (the format `temporal workflow show -o json`
// writes and world.RecordHistory stores).
func Load(path string) (*history.History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	h, err := client.HistoryFromJSON(zr, client.HistoryJSONOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// WorkflowID reads the workflow ID recorded beside a history (name.workflow-id);
// "" when none was recorded.
func WorkflowID(historyPath string) string {
	b, err := os.ReadFile(strings.TrimSuffix(historyPath, ".json.gz") + ".workflow-id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Replay replays h, as the run with workflowID, with the workflows register adds.
func Replay(h *history.History, workflowID string, register func(worker.WorkflowReplayer)) error {
	r := worker.NewWorkflowReplayer()
	register(r)
	opts := worker.ReplayWorkflowHistoryOptions{}
	if workflowID != "" {
		opts.OriginalExecution = workflow.Execution{ID: workflowID}
	}
	return r.ReplayWorkflowHistoryWithOptions(log.NewStructuredLogger(slog.New(slog.DiscardHandler)), h, opts)
}

// ReplayAll replays every testdata/*.json.gz in its own subtest; an empty folder
// fails, since it would prove nothing.
func ReplayAll(t *testing.T, register func(worker.WorkflowReplayer)) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no stored histories in testdata: replay would prove nothing (make regen-histories)")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			h, err := Load(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := Replay(h, WorkflowID(file), register); err != nil {
				t.Fatalf("replaying %s: %v", file, err)
			}
		})
	}
}
