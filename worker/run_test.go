package worker_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/nudgeflow/nudgeflow/internal/localenv"
	nfworker "github.com/nudgeflow/nudgeflow/worker"
)

const drainQueue = "drain-test"

// slowActivity runs until it is done or its context is cancelled, heartbeating, as
// nudgeflow's forge activities do.
func slowActivity(ctx context.Context, d time.Duration) (string, error) {
	deadline := time.After(d)
	for {
		select {
		case <-deadline:
			return "finished", nil
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
			activity.RecordHeartbeat(ctx)
		}
	}
}

func slowWorkflow(ctx workflow.Context, d time.Duration) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, HeartbeatTimeout: 10 * time.Second})
	var out string
	err := workflow.ExecuteActivity(ctx, "slow", d).Get(ctx, &out)
	return out, err
}

func quietLogger() sdklog.Logger {
	return sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// A worker started while Temporal is down waits, not ready, without exiting; it
// polls once Temporal answers on that address. Stopped with a workflow's activity
// in flight, it lets the activity finish within its stop timeout.
func TestRunnerWaitsForTemporalAndDrainsOnStop(t *testing.T) {
	port, err := localenv.FreePort()
	require.NoError(t, err)
	address := "127.0.0.1:" + strconv.Itoa(port)
	c, err := client.NewLazyClient(client.Options{HostPort: address, Namespace: localenv.DefaultNamespace, Logger: quietLogger()})
	require.NoError(t, err, "a lazy client needs no server")
	defer c.Close()
	activityStarted := make(chan struct{}, 1)
	runner := &nfworker.Runner{Client: c, Retry: 200 * time.Millisecond, New: func() sdkworker.Worker {
		w := sdkworker.New(c, drainQueue, sdkworker.Options{WorkerStopTimeout: 30 * time.Second})
		w.RegisterWorkflow(slowWorkflow)
		w.RegisterActivityWithOptions(func(ctx context.Context, d time.Duration) (string, error) {
			activityStarted <- struct{}{}
			return slowActivity(ctx, d)
		}, activity.RegisterOptions{Name: "slow"})
		return w
	}}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- runner.Run(ctx) }()

	require.Never(t, func() bool { return runner.Ready(context.Background()) == nil }, time.Second, 100*time.Millisecond,
		"not ready while Temporal is down, through several start attempts")
	select {
	case err := <-ran:
		t.Fatalf("the runner returned while Temporal was down: %v", err)
	default:
	}

	tctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := localenv.StartTemporal(tctx, localenv.TemporalOptions{Port: port})
	require.NoError(t, err)
	defer func() { _ = srv.Stop() }()
	require.Eventually(t, func() bool { return runner.Ready(context.Background()) == nil }, time.Minute, 200*time.Millisecond,
		"ready once Temporal answers")

	run, err := c.ExecuteWorkflow(tctx, client.StartWorkflowOptions{TaskQueue: drainQueue}, slowWorkflow, 3*time.Second)
	require.NoError(t, err)
	select {
	case <-activityStarted:
	case <-tctx.Done():
		t.Fatal("the activity never started")
	}
	stop() // SIGTERM: the runner stops the worker, which waits for the activity
	select {
	case err := <-ran:
		require.NoError(t, err)
	case <-tctx.Done():
		t.Fatal("the runner did not return after its stop")
	}
	hist := c.GetWorkflowHistory(tctx, run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var completed, failed bool
	for hist.HasNext() {
		ev, err := hist.Next()
		require.NoError(t, err)
		completed = completed || ev.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
		failed = failed || ev.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED
	}
	require.True(t, completed, "the activity in flight at the stop finished and reported its result")
	require.False(t, failed)
}
