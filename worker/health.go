package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/client"

	"github.com/nudgeflow/nudgeflow/internal/metrics"
)

// HealthServer serves the worker's probes and metrics on one address:
//
//	/healthz  200 while the process runs (the liveness probe: a Temporal outage
//	          must not restart workers, they reconnect on their own)
//	/readyz   200 when the Temporal frontend answers its gRPC health check, else 503
//	/metrics  the process's Prometheus registry (internal/metrics)
type HealthServer struct {
	srv      *http.Server
	listener net.Listener
}

// CheckTimeout bounds one readiness check of Temporal.
const CheckTimeout = 5 * time.Second

// ListenHealth binds addr (":8081", "127.0.0.1:0") for c's probes and metrics; Serve
// starts answering.
func ListenHealth(addr string, c client.Client) (*HealthServer, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("health server on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := CheckTemporal(r.Context(), c); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.Handle("/metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
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

// CheckTemporal is the readiness check of both processes: the Temporal frontend
// answers its gRPC health check within CheckTimeout.
func CheckTemporal(ctx context.Context, c client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return fmt.Errorf("temporal is not reachable: %w", err)
	}
	return nil
}
