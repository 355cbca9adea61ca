// Package worker_test runs the worker's Runner against a real Temporal dev server: it
// waits for Temporal and drains on stop.
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

	"github.com/nudgeflow/nudgeflow/test/localenv"
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

// runningWorker is a Runner of a worker on queue with the slow activity, running
// until stop.
type runningWorker struct {
	runner *nfworker.Runner
	// activityStarted receives when the slow activity starts.
	activityStarted chan struct{}
	stop            context.CancelFunc
	ran             chan error
}

func startRunner(c client.Client, queue string, stopTimeout time.Duration) *runningWorker {
	r := &runningWorker{activityStarted: make(chan struct{}, 1), ran: make(chan error, 1)}
	r.runner = &nfworker.Runner{Client: c, Retry: 200 * time.Millisecond, New: func() sdkworker.Worker {
		w := sdkworker.New(c, queue, sdkworker.Options{WorkerStopTimeout: stopTimeout})
		w.RegisterWorkflow(slowWorkflow)
		w.RegisterActivityWithOptions(func(ctx context.Context, d time.Duration) (string, error) {
			r.activityStarted <- struct{}{}
			return slowActivity(ctx, d)
		}, activity.RegisterOptions{Name: "slow"})
		return w
	}}
	ctx, stop := context.WithCancel(context.Background())
	r.stop = stop
	go func() { r.ran <- r.runner.Run(ctx) }()
	return r
}

// stopDuringActivity starts a workflow whose activity runs 3 s, stops the worker
// (SIGTERM) once the activity runs, and reports whether the activity completed.
func (r *runningWorker) stopDuringActivity(t *testing.T, ctx context.Context, c client.Client, queue string) (completed bool) {
	t.Helper()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue}, slowWorkflow, 3*time.Second)
	require.NoError(t, err)
	select {
	case <-r.activityStarted:
	case <-ctx.Done():
		t.Fatal("the activity never started")
	}
	r.stop()
	select {
	case err := <-r.ran:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("the runner did not return after its stop")
	}
	hist := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for hist.HasNext() {
		ev, err := hist.Next()
		require.NoError(t, err)
		completed = completed || ev.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
	}
	return completed
}

// A worker started while Temporal is down waits, not ready, without exiting; it
// polls once Temporal answers on that address. Stopped with a workflow's activity
// in flight, it lets the activity finish within its stop timeout; without one
// (the SDK's default, nudgeflow's before --worker-stop-timeout) the activity is
// cancelled.
func TestRunnerWaitsForTemporalAndDrainsOnStop(t *testing.T) {
	port, err := localenv.FreePort()
	require.NoError(t, err)
	address := "127.0.0.1:" + strconv.Itoa(port)
	c, err := client.NewLazyClient(client.Options{HostPort: address, Namespace: localenv.DefaultNamespace, Logger: quietLogger()})
	require.NoError(t, err, "a lazy client needs no server")
	defer c.Close()
	draining := startRunner(c, drainQueue, 30*time.Second)
	defer draining.stop()

	require.Never(t, func() bool { return draining.runner.Ready(context.Background()) == nil }, time.Second, 100*time.Millisecond,
		"not ready while Temporal is down, through several start attempts")
	select {
	case err := <-draining.ran:
		t.Fatalf("the runner returned while Temporal was down: %v", err)
	default:
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := localenv.StartTemporal(ctx, localenv.TemporalOptions{Port: port})
	require.NoError(t, err)
	defer func() { _ = srv.Stop() }()
	require.Eventually(t, func() bool { return draining.runner.Ready(context.Background()) == nil }, time.Minute, 200*time.Millisecond,
		"ready once Temporal answers")
	require.True(t, draining.stopDuringActivity(t, ctx, c, drainQueue), "the activity in flight at the stop finished and reported its result")

	const abruptQueue = drainQueue + "-abrupt"
	abrupt := startRunner(c, abruptQueue, 0)
	defer abrupt.stop()
	require.Eventually(t, func() bool { return abrupt.runner.Ready(context.Background()) == nil }, time.Minute, 200*time.Millisecond)
	require.False(t, abrupt.stopDuringActivity(t, ctx, c, abruptQueue), "without a stop timeout the activity is cancelled")
}
