package changegroup

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// ciCtx is for the CI reads and the comment: a blip is retried for seconds, a
// longer outage at the next check.
func (r *run) ciCtx(summary string) workflow.Context {
	return workflow.WithActivityOptions(r.ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute, Summary: summary, RetryPolicy: blipRetries,
	})
}

func (r *run) kubeCtx(summary string) workflow.Context {
	return workflow.WithActivityOptions(r.ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 10,
		},
	})
}

func (r *run) forgeCtx(summary string) workflow.Context {
	return workflow.WithActivityOptions(r.ctx, workflow.ActivityOptions{
		// A worker that dies mid-call delays the group by this much, at most.
		StartToCloseTimeout: time.Minute,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 12,
		},
	})
}

// blipRetries retry a forge call for a few seconds only: a longer outage comes
// back to the main loop (see syncCtx).
var blipRetries = &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 4 * time.Second, MaximumAttempts: 4}

// observeCtx is forgeCtx for the poll of the PR; in the nothing-lost shape a failed
// poll comes back to the main loop quickly, like a failed sync.
func (r *run) observeCtx(summary string) workflow.Context {
	if !r.nothingLost {
		return r.forgeCtx(summary)
	}
	return workflow.WithActivityOptions(r.ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute, Summary: summary, RetryPolicy: blipRetries,
	})
}

// syncCtx is forgeCtx for the sync, which reads a whole tree: in the nothing-lost
// shape it may run long on a big repository while it heartbeats, and a dead worker
// is still noticed within the heartbeat timeout. Its retries cover a blip only (a
// few seconds): a longer outage comes back to the main loop, which retries at its
// next wake-up (bounded by MaxForgeOutage) and meanwhile acts on a cancel, a drop or
// a timeout instead of waiting minutes behind one activity.
func (r *run) syncCtx(summary string) workflow.Context {
	if !r.nothingLost {
		return r.forgeCtx(summary)
	}
	return workflow.WithActivityOptions(r.ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		Summary:             summary,
		RetryPolicy:         blipRetries,
	})
}
