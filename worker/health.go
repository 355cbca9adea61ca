package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"
)

// HealthServer serves the worker's probes:
//
//	/healthz  200 while the process runs (the liveness probe: a Temporal outage
//	          must not restart workers, they reconnect on their own)
//	/readyz   200 when ready answers nil (Runner.Ready: polling and the Temporal
//	          frontend answers its gRPC health check), else 503 with the reason
//
// Metrics are served apart (--metrics-bind-address), over HTTPS to authorized
// scrapers: probes come from the kubelet without credentials.
type HealthServer struct {
	srv      *http.Server
	listener net.Listener
}

// The worker's metrics server (serving.Metrics) asks the API server who a scraper
// is and whether it may get /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// CheckTimeout bounds one readiness check of Temporal.
const CheckTimeout = 5 * time.Second

// ListenHealth binds addr (":8081", "127.0.0.1:0") for the probes; Serve starts
// answering.
func ListenHealth(addr string, ready func(context.Context) error) (*HealthServer, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("health server on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := ready(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	return &HealthServer{listener: l, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// Addr is the bound address.
func (h *HealthServer) Addr() string { return h.listener.Addr().String() }

// Serve answers until Shutdown.
func (h *HealthServer) Serve() {
	if err := h.srv.Serve(h.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
		slog.Error("the worker's health server stopped", "error", err)
	}
}

// Shutdown stops the server.
func (h *HealthServer) Shutdown(ctx context.Context) error { return h.srv.Shutdown(ctx) }

// checkTemporal is whether the Temporal frontend answers its gRPC health check
// within CheckTimeout (the worker's readiness; the bridge's does not depend on it).
func checkTemporal(ctx context.Context, c client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return fmt.Errorf("temporal is not reachable: %w", err)
	}
	return nil
}
