// Package receiver is the forge webhook receiver as its own process (`nudgeflow
// receiver`, the Deployment nudgeflow-receiver): the only part of nudgeflow that
// faces the internet. It is built to hold as little as it can and to stay within
// its memory whatever is sent to it:
//
//   - no credential but a token the bridge alone accepts (receiverapi.Audience):
//     it cannot call the API server or Temporal; the bound webhook secrets come
//     from the bridge (receiverapi.Client.Watch), the shared one from a mounted
//     file, re-read when it changes;
//   - every delivery is verified in memory, before anything is called: a bounded
//     body (forgehook.DefaultMaxBody, 413 beyond), at most MaxConcurrent deliveries
//     at once, each in a buffer of its own kept for the next (503 beyond, never
//     queued), at most MaxConns connections (closed beyond), headers of at most
//     MaxHeaderBytes;
//   - only a verified event, a few hundred bytes, is forwarded to the bridge
//     (receiverapi.EventsPath), which checks it again and signals the workflows.
//
// The admission webhooks run in the bridge's pods, which this process never
// shares: a flood of deliveries costs the receiver, not admission.
package receiver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
	"github.com/nudgeflow/nudgeflow/bridge/receiverapi"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
	"github.com/nudgeflow/nudgeflow/internal/serving"
)

// Defaults of Options' bounds. With DefaultMaxConcurrent deliveries of up to
// forgehook.DefaultMaxBody each, in buffers kept for the next, and DefaultMaxConns
// connections of up to DefaultMaxHeaderBytes of headers, what requests can make the
// receiver hold is about 8 × 2 MiB + 128 × 32 KiB = 20 MiB beside the process
// itself (TestReceiverFlood in test/deploy measures the container as written
// within its 128 MiB limit). A verified delivery is answered in milliseconds (the
// bridge's signal), so 8 at once serve hundreds a second; a client that holds the
// 8 with slow bodies (for the read timeout at most) delays deliveries, which the
// groups' polls cover, and costs nothing else.
const (
	DefaultMaxConcurrent  = 8
	DefaultMaxConns       = 128
	defaultMaxHeaderBytes = 32 << 10
)

// Options configure a Receiver.
type Options struct {
	// CertDir holds tls.crt and tls.key (reloaded when they change): deliveries and
	// metrics are served over HTTPS. Empty: plain HTTP (a local stack, or behind a
	// proxy that terminates TLS on the same host).
	CertDir string
	// SharedSecret verifies deliveries about repositories no secret is bound to.
	SharedSecret forgehook.SecretFunc
	// Bridge gives the bound secrets and takes the verified events.
	Bridge Bridge
	// MaxBody, MaxConcurrent, MaxConns and MaxHeaderBytes bound what requests can
	// hold; the defaults when zero.
	MaxBody                 int64
	MaxConcurrent, MaxConns int
	MaxHeaderBytes          int
	// Limits are the connections' timeouts (serving.ReceiverLimits when zero).
	Limits serving.Limits
	// EnableHTTP2 lets the servers speak HTTP/2 (off: serving.TLSOptions).
	EnableHTTP2 bool
	Log         *slog.Logger
}

// Bridge is the bridge as the receiver uses it (receiverapi.Client).
type Bridge interface {
	forgehook.Sink
	Watch(ctx context.Context, log *slog.Logger, update func(receiverapi.Bindings))
}

// Receiver verifies forge deliveries and forwards the events.
type Receiver struct {
	opts    Options
	log     *slog.Logger
	index   atomic.Pointer[receiverapi.Index]
	handler http.Handler
}

// New builds a receiver; Serve runs it.
func New(o Options) (*Receiver, error) {
	if o.SharedSecret == nil || o.Bridge == nil {
		return nil, errors.New("the receiver needs the shared secret and the bridge")
	}
	if o.MaxBody <= 0 {
		o.MaxBody = forgehook.DefaultMaxBody
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = defaultMaxHeaderBytes
	}
	if o.Limits == (serving.Limits{}) {
		o.Limits = serving.ReceiverLimits
	}
	r := &Receiver{opts: o, log: o.Log}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.handler = metrics.ForgeWebhook(&forgehook.Handler{Secret: o.SharedSecret, RepoSecrets: r.repoSecrets, Sink: o.Bridge, Log: r.log,
		MaxBody: o.MaxBody, MaxConcurrent: o.MaxConcurrent})
	return r, nil
}

// repoSecrets answers from the bindings last read from the bridge: no delivery
// waits on anything remote. Before the first read it fails (503): whether a
// repository is bound is unknown, and the shared secret must not verify it.
func (r *Receiver) repoSecrets(_ context.Context, repo string) ([]forgehook.BoundSecret, error) {
	idx := r.index.Load()
	if idx == nil {
		return nil, errors.New("the bound webhook secrets have not been read from the bridge yet")
	}
	return (*idx)[repo], nil
}

// Ready reports whether the bound secrets have been read: until then every
// delivery is answered 503.
func (r *Receiver) Ready() bool { return r.index.Load() != nil }

// Handler is the delivery endpoint as served: bounded and measured.
func (r *Receiver) Handler() http.Handler { return r.handler }

// Serve serves deliveries on l, and on the optional health and metrics listeners
// (/healthz, /readyz; /metrics), reads the bound secrets from the bridge, and
// returns when ctx ends (after a graceful shutdown) or a server fails.
func (r *Receiver) Serve(ctx context.Context, l, health, metricsL net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tlsConfig, err := r.tlsConfig(ctx)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.opts.Bridge.Watch(ctx, r.log, func(b receiverapi.Bindings) {
			idx := b.Index()
			r.index.Store(&idx)
			r.log.Info("bound webhook secrets read from the bridge", "secrets", len(b.Secrets), "repositories", len(idx), "revision", b.Revision)
		})
	}()
	type served struct {
		srv *http.Server
		l   net.Listener
		tls bool
	}
	deliveries := r.opts.Limits.Server("", r.handler)
	deliveries.MaxHeaderBytes = r.opts.MaxHeaderBytes
	servers := []served{{deliveries, &limitListener{Listener: l, slots: make(chan struct{}, r.opts.MaxConns)}, tlsConfig != nil}}
	if health != nil {
		mux := http.NewServeMux()
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
		mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
			if !r.Ready() {
				http.Error(w, "the bound webhook secrets have not been read from the bridge yet", http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusOK)
		})
		servers = append(servers, served{srv: serving.Limits{ReadHeader: 10 * time.Second, Read: 10 * time.Second, Write: 10 * time.Second, Idle: time.Minute}.Server("", mux), l: health})
	}
	if metricsL != nil {
		// Forge latencies by event and code and the Go runtime's: nothing secret,
		// and the receiver has no credential to review a scraper's token with, so
		// it serves them to whoever reaches the port (the NetworkPolicy admits the
		// monitoring namespaces only), over HTTPS when it has a certificate.
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
		servers = append(servers, served{srv: serving.Limits{ReadHeader: 10 * time.Second, Read: 10 * time.Second, Write: 30 * time.Second, Idle: time.Minute}.Server("", mux),
			l: metricsL, tls: tlsConfig != nil})
	}
	errs := make(chan error, len(servers))
	for _, s := range servers {
		if s.tls {
			s.srv.TLSConfig = tlsConfig
			if !r.opts.EnableHTTP2 {
				s.srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
			}
		}
		go func() {
			var err error
			if s.tls {
				err = s.srv.ServeTLS(s.l, "", "")
			} else {
				err = s.srv.Serve(s.l)
			}
			if !errors.Is(err, http.ErrServerClosed) {
				errs <- fmt.Errorf("serving on %s: %w", s.l.Addr(), err)
			}
		}()
	}
	var failed error
	select {
	case <-ctx.Done():
	case failed = <-errs:
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	for _, s := range servers {
		_ = s.srv.Shutdown(sctx)
	}
	return failed
}

// tlsConfig serves CertDir's certificate, reloaded when the files change; nil
// without CertDir.
func (r *Receiver) tlsConfig(ctx context.Context) (*tls.Config, error) {
	if r.opts.CertDir == "" {
		return nil, nil
	}
	cw, err := certwatcher.New(filepath.Join(r.opts.CertDir, "tls.crt"), filepath.Join(r.opts.CertDir, "tls.key"))
	if err != nil {
		return nil, fmt.Errorf("the receiver's serving certificate: %w", err)
	}
	go func() {
		if err := cw.Start(ctx); err != nil {
			r.log.Error("watching the receiver's serving certificate", "error", err)
		}
	}()
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cw.GetCertificate}
	for _, o := range serving.TLSOptions(r.opts.EnableHTTP2) {
		o(cfg)
	}
	return cfg, nil
}

// limitListener accepts at most cap(slots) connections at once; one more is
// closed as soon as it is accepted, so that connections never queue in the
// process (the kernel's accept backlog is bounded on its own).
type limitListener struct {
	net.Listener
	slots chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
			_ = c.Close()
		}
	}
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
