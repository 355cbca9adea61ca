// Package serving holds how nudgeflow's processes serve HTTP to the cluster: the
// TLS options of the admission webhook and metrics servers, and metrics served
// only to scrapers the API server authenticates and authorizes (kubebuilder v4's
// config/default does the same).
package serving

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// TLSOptions are the TLS settings of a server: HTTP/1.1 only unless enableHTTP2.
// HTTP/2's stream resets let a client make a server do work it never waits for
// (rapid reset, CVE-2023-44487, and the HTTP/2 stream cancellation advisory
// GHSA-qppj-fm5r-hxr3); the API server and Prometheus both speak HTTP/1.1, so
// nothing is lost by turning it off.
func TLSOptions(enableHTTP2 bool) []func(*tls.Config) {
	if enableHTTP2 {
		return nil
	}
	return []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
}

// Metrics is how a process serves /metrics.
type Metrics struct {
	// Secure serves HTTPS, and only to a client whose bearer token the API server
	// authenticates (TokenReview) and authorizes for GET on the non-resource URL
	// /metrics (SubjectAccessReview). Plain HTTP to anyone when false.
	Secure bool
	// CertDir holds tls.crt and tls.key (reloaded when they change); a self-signed
	// certificate is made at start when it is empty or they are absent (scrapers
	// then skip verification, as with kube-controller-manager's).
	CertDir string
	// EnableHTTP2: see TLSOptions.
	EnableHTTP2 bool
}

// AddFlags registers the metrics flags shared by the bridge and the worker.
func (m *Metrics) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&m.Secure, "metrics-secure", true, "serve /metrics over HTTPS to clients the API server authenticates and authorizes for get on /metrics (false: plain HTTP to anyone)")
	fs.StringVar(&m.CertDir, "metrics-cert-dir", "", "folder with tls.crt and tls.key for the metrics server; a self-signed certificate when empty")
	fs.BoolVar(&m.EnableHTTP2, "enable-http2", false, "let the admission webhook and metrics servers speak HTTP/2 (off: HTTP/2 rapid reset, CVE-2023-44487)")
}

// ServerOptions are controller-runtime's metrics server options for addr ("0"
// disables the server).
func (m Metrics) ServerOptions(addr string) metricsserver.Options {
	o := metricsserver.Options{BindAddress: addr, TLSOpts: TLSOptions(m.EnableHTTP2)}
	if m.Secure {
		o.SecureServing = true
		o.CertDir = m.CertDir
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}

// Serve runs a metrics server outside a controller-runtime manager (the worker)
// on addr until ctx ends; cfg is how it reaches the API server to review tokens.
// It returns at once when addr is "" or "0".
func (m Metrics) Serve(ctx context.Context, addr string, cfg *rest.Config) (<-chan error, error) {
	done := make(chan error, 1)
	if addr == "" || addr == "0" {
		close(done)
		return done, nil
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("metrics server: an HTTP client for the API server: %w", err)
	}
	srv, err := metricsserver.NewServer(m.ServerOptions(addr), cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metrics server on %s: %w", addr, err)
	}
	go func() { done <- srv.Start(ctx) }()
	return done, nil
}

// Limits bound an HTTP server's connections: a client that sends its request or
// reads its answer slowly, or keeps an idle connection open, ties one up at most
// this long.
type Limits struct {
	ReadHeader, Read, Write, Idle time.Duration
}

// ReceiverLimits are the forge webhook receiver's. Forges send tens of KB and wait
// about 10 s (GitHub) for an answer; the answer waits on the bridge's Temporal
// signal, which the SDK bounds at 10 s. The body's size, the deliveries handled at
// once and the connections held are bounded by the receiver (bridge/receiver:
// forgehook.DefaultMaxBody, 2 MiB).
var ReceiverLimits = Limits{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 30 * time.Second, Idle: 2 * time.Minute}

// Server is an http.Server for h on addr with the limits.
func (l Limits) Server(addr string, h http.Handler) *http.Server {
	return &http.Server{Addr: addr, Handler: h,
		ReadHeaderTimeout: l.ReadHeader, ReadTimeout: l.Read, WriteTimeout: l.Write, IdleTimeout: l.Idle}
}
