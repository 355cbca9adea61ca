package world

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// History returns a workflow run's whole history as Temporal's JSON (the format
// `temporal workflow show -o json` writes and the replayer reads).
func (w *World) History(ctx context.Context, workflowID, runID string) ([]byte, error) {
	it := w.TemporalClient.GetWorkflowHistory(ctx, workflowID, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("reading history of %s: %w", workflowID, err)
		}
		h.Events = append(h.Events, e)
	}
	return protojson.Marshal(h)
}

// AssertNoSecretInHistories reads the history of every workflow run on this
// world's server and fails if any secret appears in it: histories are visible in
// the Web UI, so no token may ever enter one.
func (w *World) AssertNoSecretInHistories(t testing.TB, secrets ...string) {
	t.Helper()
	ctx := context.Background()
	var token []byte
	runs := 0
	for {
		resp, err := w.TemporalClient.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{NextPageToken: token, PageSize: 500})
		if err != nil {
			t.Fatalf("listing workflows: %v", err)
		}
		for _, e := range resp.GetExecutions() {
			raw, err := w.History(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId())
			if err != nil {
				t.Fatal(err)
			}
			runs++
			for _, s := range secrets {
				if bytes.Contains(raw, []byte(s)) {
					t.Errorf("workflow %s carries a secret in its history", e.GetExecution().GetWorkflowId())
				}
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	if runs == 0 {
		t.Fatal("no workflow history to scan: the scan would prove nothing")
	}
	t.Logf("scanned %d workflow histories for %d secrets", runs, len(secrets))
}

// RecordHistory stores a finished run's history under dir/name.json.gz when the
// environment variable NUDGEFLOW_RECORD_HISTORIES is set (make regen-histories) and
// no file of that name exists; the replay tests replay every stored file on each
// `make test`.
func (w *World) RecordHistory(t testing.TB, dir, name, workflowID string) {
	t.Helper()
	if os.Getenv("NUDGEFLOW_RECORD_HISTORIES") == "" {
		return
	}
	raw, err := w.History(context.Background(), workflowID, "")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, strings.ReplaceAll(name, "/", "-")+".json.gz")
	if _, err := os.Stat(path); err == nil {
		// Stored histories are never re-recorded in place: running workflows of that
		// shape must keep replaying. A new shape is recorded under a new name.
		t.Logf("not re-recording %s: it exists (record a new shape under a new name)", path)
		return
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatalf("recording history: %v", err)
	}
	// The history does not hold the workflow ID, and a workflow may derive names
	// from it: the replay needs it back.
	if err := os.WriteFile(strings.TrimSuffix(path, ".json.gz")+".workflow-id", []byte(workflowID+"\n"), 0o644); err != nil {
		t.Fatalf("recording history: %v", err)
	}
	t.Logf("recorded %s", path)
}
