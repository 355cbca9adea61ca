package bench

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"

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
}

func newSignalCounter() *signalCounter { return &signalCounter{seen: map[string]struct{}{}} }

// expect resets the counter to count the signals to workflows whose ID starts with
// prefix; the returned channel closes when want distinct signals arrived.
func (c *signalCounter) expect(prefix string, want int) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prefix, c.want, c.seen, c.done = prefix, want, map[string]struct{}{}, make(chan struct{})
	return c.done
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
