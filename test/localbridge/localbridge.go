// Package localbridge runs nudgeflow's bridge in this process against a local world
// (an envtest API server and a Temporal dev server). The end-to-end tests, `nudgeflow-dev
// dev` and `nudgeflow-dev bench` all start it the same way, here: a manager serving the
// admission webhooks where the API server sends them, the features' Setup, the forge
// webhook receiver registered with the forges, then the manager, waited on until its
// cache is synced and its webhooks serve.
//
// It is its own package so the test world (world/worldbridge), devenv and bench
// share one way to start the bridge, and localenv (servers only) stays free of it.
package localbridge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
)

// DefaultReadyTimeout bounds the wait for the cache sync and the webhooks when
// Options.ReadyTimeout is zero: an empty local cluster syncs in well under a second,
// so a minute only runs out when something is broken.
const DefaultReadyTimeout = time.Minute

// Forge is a forge (an emulator) that delivers its pull request events to webhooks.
type Forge interface {
	AddWebhook(url, secret string)
}

// ForgeHook configures the bridge's forge webhook receiver.
type ForgeHook struct {
	// Secret is the webhooks' secret: GitHub, Gitea and Forgejo sign deliveries with
	// it, GitLab sends it as X-Gitlab-Token; the one receiver checks each.
	Secret string
	// Addr is where the receiver listens; empty is a free loopback port (tests, so
	// that packages run side by side).
	Addr string
	// Forges get the receiver registered as a webhook.
	Forges []Forge
}

// Options configure Start.
type Options struct {
	// Config reaches the API server.
	Config *rest.Config
	// Manager configures the manager: the webhook serving address (where the API
	// server sends admission requests) and the rest.
	Manager bridge.ManagerOptions
	// Deps are bridge.Setup's.
	Deps bridge.Deps
	// NewManager replaces bridge.NewManager, for a process that needs a manager set up
	// otherwise (another cache).
	NewManager func(*rest.Config, bridge.ManagerOptions) (ctrl.Manager, error)
	// Setup replaces bridge.Setup (and Deps), for a process that runs only some of the
	// bridge's features; it may return a nil Bridge when there is no ForgeHook.
	Setup func(ctrl.Manager) (*bridge.Bridge, error)
	// ForgeHook, when set, serves the forge webhook receiver, which feeds the Bridge's
	// pull request events.
	ForgeHook *ForgeHook
	// ReadyTimeout bounds the wait for the cache sync and the webhooks;
	// DefaultReadyTimeout when zero.
	ReadyTimeout time.Duration
}

// Running is a started bridge.
type Running struct {
	Manager ctrl.Manager
	// Bridge is what Setup wired (nil when an Options.Setup returned none).
	Bridge *bridge.Bridge
	// ForgeHookURL is the forge webhook receiver's URL ("" without Options.ForgeHook).
	ForgeHookURL string

	hook   *http.Server
	cancel context.CancelFunc
	// exited is closed once the manager's Start returned, with its error in mgrErr.
	exited chan struct{}
	mgrErr error

	stopOnce sync.Once
}

// Start starts the bridge and returns once its cache is synced and its admission
// webhooks serve (a build created earlier would not be held: the webhooks fail
// open). ctx bounds only the start; Stop stops the bridge.
func Start(ctx context.Context, opts Options) (*Running, error) {
	newManager := opts.NewManager
	if newManager == nil {
		newManager = bridge.NewManager
	}
	setup := opts.Setup
	if setup == nil {
		setup = func(mgr ctrl.Manager) (*bridge.Bridge, error) { return bridge.Setup(mgr, opts.Deps) }
	}
	mgr, err := newManager(opts.Config, opts.Manager)
	if err != nil {
		return nil, err
	}
	b, err := setup(mgr)
	if err != nil {
		return nil, err
	}
	r := &Running{Manager: mgr, Bridge: b, exited: make(chan struct{})}
	if opts.ForgeHook != nil {
		if err := r.serveForgeHook(*opts.ForgeHook); err != nil {
			return nil, err
		}
	}
	// Not ctx: the manager runs until Stop, past the start (a test's TestMain, a
	// restart in `nudgeflow-dev bench`).
	mctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		r.mgrErr = mgr.Start(mctx)
		close(r.exited)
	}()
	timeout := opts.ReadyTimeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	if err := r.waitReady(ctx, timeout); err != nil {
		// The caller gets no Running to stop: a half-started bridge is stopped here.
		if stopErr := r.Stop(); stopErr != nil {
			err = fmt.Errorf("%w (stopping it: %v)", err, stopErr)
		}
		return nil, err
	}
	return r, nil
}

// serveForgeHook starts the forge webhook receiver before the manager, so that the
// forges know where to deliver from the start.
func (r *Running) serveForgeHook(fh ForgeHook) error {
	if r.Bridge == nil {
		return errors.New("the forge webhook receiver needs the Bridge's pull request events: Setup returned none")
	}
	addr := fh.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("forge webhook receiver: listening on %s: %w", addr, err)
	}
	r.hook = &http.Server{Handler: &forgehook.Handler{Secret: forgehook.StaticSecret([]byte(fh.Secret)), Sink: r.Bridge.PREvents},
		ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.hook.Serve(l) }()
	r.ForgeHookURL = "http://" + l.Addr().String() + "/"
	for _, f := range fh.Forges {
		f.AddWebhook(r.ForgeHookURL, fh.Secret)
	}
	return nil
}

// waitReady waits for the cache sync, then the webhook server. A manager that stops
// early (a port taken, a CRD missing) ends the wait with its error at once rather
// than at the deadline.
func (r *Running) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	go func() {
		select {
		case <-r.exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	notReady := func(what string) error {
		select {
		case <-r.exited:
			return fmt.Errorf("the bridge stopped before its %s: %v", what, r.mgrErr)
		default:
			return fmt.Errorf("the bridge's %s not within %s: %w", what, timeout, context.Cause(ctx))
		}
	}
	if !r.Manager.GetCache().WaitForCacheSync(ctx) {
		return notReady("cache synced")
	}
	started := r.Manager.GetWebhookServer().StartedChecker()
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return started(nil) == nil, nil
	}); err != nil {
		return notReady("admission webhooks served")
	}
	return nil
}

// Stop stops the manager, then the forge webhook receiver, and returns the manager's
// error. Later calls do nothing and return the same error.
func (r *Running) Stop() error {
	r.stopOnce.Do(func() {
		r.cancel()
		<-r.exited
		if r.hook != nil {
			_ = r.hook.Close()
		}
	})
	return r.mgrErr
}
