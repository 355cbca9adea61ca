package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
)

// Runner runs a worker through Temporal outages: the process starts, answers its
// probes and waits while Temporal cannot be reached, and polls once it can. A pod
// restarted during an outage then neither crash-loops nor blocks a node drain.
//
// The SDK's worker cannot do this alone: its Start reads the namespace and the
// server's capabilities once and fails for good when Temporal is away. Runner
// waits for the frontend's health check before each start and builds a fresh
// worker after a failed one. Once polling, the SDK rides out later outages itself
// (its pollers retry with backoff).
type Runner struct {
	Client client.Client
	// New builds the worker to start (New in this package, with its options).
	New func() sdkworker.Worker
	// Retry is the wait between two attempts; DefaultStartRetry when zero.
	Retry time.Duration

	polling atomic.Bool
}

// defaultStartRetry is the wait between two attempts to start while Temporal is
// away: short enough that a recovered frontend is used within seconds, long
// enough that an outage logs one line every few seconds.
const defaultStartRetry = 5 * time.Second

// Run starts the worker when Temporal answers and stops it when ctx ends; the
// stop lets running activities finish for the worker's StopTimeout. It returns
// nil when ctx ends, whether or not the worker ever started.
func (r *Runner) Run(ctx context.Context) error {
	retry := r.Retry
	if retry <= 0 {
		retry = defaultStartRetry
	}
	for attempt := 1; ; attempt++ {
		err := checkTemporal(ctx, r.Client)
		if err == nil {
			w := r.New()
			if err = w.Start(); err == nil {
				r.polling.Store(true)
				slog.Info("worker polling", "attempts", attempt)
				<-ctx.Done()
				slog.Info("worker stopping: running activities may finish")
				w.Stop()
				r.polling.Store(false)
				return nil
			}
			err = fmt.Errorf("starting the worker: %w", err)
		}
		if ctx.Err() != nil {
			return nil
		}
		slog.Warn("Temporal is not reachable yet; the worker waits and retries", "attempt", attempt, "retryIn", retry, "error", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(retry):
		}
	}
}

// Ready is the worker's readiness: polling, and the Temporal frontend answers.
func (r *Runner) Ready(ctx context.Context) error {
	if !r.polling.Load() {
		return errors.New("the worker is not polling yet: waiting for Temporal")
	}
	return checkTemporal(ctx, r.Client)
}
