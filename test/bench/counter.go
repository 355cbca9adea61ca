package bench

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"

	"github.com/nudgeflow/nudgeflow/workflows/validatednudge"
)

// signalCounter counts the builds the bridge's Temporal client delivered: a
// SignalWithStart of a build to a ValidatedNudge workflow that the server
// acknowledged (the signal is in the workflow's history then). It counts distinct
// (workflow, build) pairs, so a reconcile retried after a failure counts once.
type signalCounter struct {
	interceptor.ClientInterceptorBase

	mu     sync.Mutex
	prefix string
	seen   map[string]struct{}
	want   int
	done   chan struct{}
	first  time.Time // when the first counted signal was acknowledged
}

func newSignalCounter() *signalCounter { return &signalCounter{seen: map[string]struct{}{}} }

// expect resets the counter to count the signals to workflows whose ID starts with
// prefix; the returned channel closes when want distinct signals arrived.
func (c *signalCounter) expect(prefix string, want int) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prefix, c.want, c.seen, c.done, c.first = prefix, want, map[string]struct{}{}, make(chan struct{}), time.Time{}
	return c.done
}

// firstAt is when the first signal counted since expect was acknowledged.
func (c *signalCounter) firstAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first
}

func (c *signalCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

func (c *signalCounter) record(workflowID string, arg any) {
	b, ok := arg.(validatednudge.Build)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil || !strings.HasPrefix(workflowID, c.prefix) {
		return
	}
	if c.first.IsZero() {
		c.first = time.Now()
	}
	c.seen[workflowID+"\x00"+b.BuildUID] = struct{}{}
	if len(c.seen) == c.want {
		close(c.done)
	}
}

func (c *signalCounter) InterceptClient(next interceptor.ClientOutboundInterceptor) interceptor.ClientOutboundInterceptor {
	return &countingOutbound{ClientOutboundInterceptorBase: interceptor.ClientOutboundInterceptorBase{Next: next}, c: c}
}

type countingOutbound struct {
	interceptor.ClientOutboundInterceptorBase
	c *signalCounter
}

func (o *countingOutbound) SignalWithStartWorkflow(ctx context.Context, in *interceptor.ClientSignalWithStartWorkflowInput) (client.WorkflowRun, error) {
	run, err := o.Next.SignalWithStartWorkflow(ctx, in)
	if err == nil && in.Options != nil {
		o.c.record(in.Options.ID, in.SignalArg)
	}
	return run, err
}

func slogTo(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
