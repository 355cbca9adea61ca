// Package prgroupshape_test runs PRGroup workflow scenarios on a real Temporal dev
// server and records their histories for replay.
package prgroupshape_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck/buildchecktest"
	"github.com/nudgeflow/nudgeflow/contracts/prgroupapi"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/workflows/prgroup"
)

// TestNotFoundShapeOnTheTemporalServer runs the origin-not-found scenario (an originating PR
// seen open, then answered "not found" three times, then closed) on a real
// Temporal dev server with stub activities: the target PR is closed only at the
// fifth read and the history carries the origin-not-found-after-seen-is-unreadable
// marker. With NUDGEFLOW_RECORD_HISTORIES set it stores that history beside the
// older shapes (never over one), and TestReplayStoredHistories replays it.
func TestNotFoundShapeOnTheTemporalServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	srv, err := localenv.StartTemporal(ctx, localenv.TemporalOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })
	c, err := srv.Dial()
	require.NoError(t, err)
	t.Cleanup(c.Close)

	const tq = "prgroup-shape"
	w := worker.New(c, tq, worker.Options{WorkflowPanicPolicy: worker.FailWorkflow})
	w.RegisterWorkflowWithOptions(prgroup.Workflow, workflow.RegisterOptions{Name: prgroup.WorkflowName})
	var mu sync.Mutex
	observed := 0
	var closedAt []int
	w.RegisterActivityWithOptions(func(_ context.Context, req prgroupapi.ObserveRequest) ([]prgroupapi.OriginObservation, error) {
		mu.Lock()
		defer mu.Unlock()
		observed++
		ob := prgroupapi.OriginObservation{RepoURL: req.Origins[0].RepoURL, Number: req.Origins[0].Number}
		switch {
		case observed == 1:
			ob.Found, ob.Open = true, true
		case observed >= 5:
			ob.Found = true // closed unmerged
		}
		return []prgroupapi.OriginObservation{ob}, nil
	}, activity.RegisterOptions{Name: prgroupapi.ObserveOriginsActivity})
	w.RegisterActivityWithOptions(func(context.Context, prgroupapi.SyncRequest) (prgroupapi.SyncResult, error) {
		return prgroupapi.SyncResult{PR: prgroupapi.PRRef{Number: 5, URL: "https://h/org/bundle/pull/5"}, State: prgroupapi.PROpen, Draft: true}, nil
	}, activity.RegisterOptions{Name: prgroupapi.SyncActivity})
	w.RegisterActivityWithOptions(func(context.Context, prgroupapi.FindPushBuildRequest) (prgroupapi.PushBuild, error) {
		return prgroupapi.PushBuild{}, nil
	}, activity.RegisterOptions{Name: prgroupapi.FindPushBuildActivity})
	w.RegisterActivityWithOptions(func(context.Context, prgroupapi.CloseRequest) (prgroupapi.SyncResult, error) {
		mu.Lock()
		defer mu.Unlock()
		closedAt = append(closedAt, observed)
		return prgroupapi.SyncResult{}, nil
	}, activity.RegisterOptions{Name: prgroupapi.CloseActivity})
	buildchecktest.New().Register(w) // the cluster built every digest
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	id := prgroup.WorkflowID("ns", "g", "bundle")
	build := prgroup.PRBuild{Component: "a", SourceBranch: "g", Origin: prgroup.OriginRef{RepoURL: "https://h/org/a", Number: 1}, Build: imagebuild.Build{Image: "quay.io/org/a", Digest: "sha256:" + strings.Repeat("a", 64), BuildUID: "pr-1", BuiltAt: time.Unix(10, 0)}}
	run, err := c.SignalWithStartWorkflow(ctx, id, prgroup.SignalPRBuild, build, client.StartWorkflowOptions{ID: id, TaskQueue: tq},
		prgroup.WorkflowName, prgroup.Input{Namespace: "ns", Group: "g", Target: "bundle", Settings: prgroup.Settings{PollInterval: time.Second}})
	require.NoError(t, err)
	var st prgroup.State
	require.NoError(t, run.Get(ctx, &st))
	require.Equal(t, prgroup.PhaseClosed, st.Phase)
	mu.Lock()
	require.Equal(t, []int{5}, closedAt, "closed only when the forge says the origin closed")
	mu.Unlock()

	h := &historypb.History{}
	it := c.GetWorkflowHistory(ctx, id, run.GetRunID(), false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, e)
	}
	raw, err := protojson.Marshal(h)
	require.NoError(t, err)
	var changes []string
	for _, e := range h.Events {
		if m := e.GetMarkerRecordedEventAttributes(); m != nil && m.GetMarkerName() == "Version" {
			var change string
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(m.GetDetails()["change-id"], &change))
			changes = append(changes, change)
		}
	}
	require.Equal(t, []string{"verify-builds", "origin-not-found-after-seen-is-unreadable"}, changes, "the history carries the version markers")

	if os.Getenv("NUDGEFLOW_RECORD_HISTORIES") == "" {
		return
	}
	path := filepath.Join("..", "..", "workflows", "prgroup", "testdata", "TestF4OriginNotFoundAfterSeen@"+prgroup.HistoryShape+".json.gz")
	if _, err := os.Stat(path); err == nil {
		t.Logf("not re-recording %s: it exists (record a new shape under a new name)", path)
		return
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err = zw.Write(raw)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	require.NoError(t, os.WriteFile(strings.TrimSuffix(path, ".json.gz")+".workflow-id", []byte(id+"\n"), 0o644))
	t.Logf("recorded %s", path)
}
