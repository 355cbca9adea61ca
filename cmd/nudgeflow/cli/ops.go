package cli

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
	"github.com/nudgeflow/nudgeflow/internal/serving"
	nfworker "github.com/nudgeflow/nudgeflow/worker"
)

// What running on a cluster adds to the worker and the bridge: probes,
// metrics, the Temporal readiness check, the leader election namespace. Kept
// apart from worker.go and bridge.go, which only call in here.

// workerOps are the worker's health and metrics flags.
type workerOps struct {
	healthAddr  string
	metricsAddr string
	metrics     serving.Metrics
}

func addWorkerOpsFlags(cmd *cobra.Command) *workerOps {
	o := &workerOps{}
	fs := cmd.Flags()
	fs.StringVar(&o.healthAddr, "health-addr", "", "address of /healthz and /readyz (polling and Temporal reachable), for example :8081 (the Deployment sets it); empty disables them")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", "0", "address of the metrics endpoint, for example :8443 (the Deployment sets it); 0 disables it")
	o.metrics.AddFlags(fs)
	return o
}

// serve starts the health server (readiness from ready) and the metrics server,
// which reviews scrapers' tokens through cfg; stop shuts the health server down
// (the metrics server stops with ctx).
func (o *workerOps) serve(ctx context.Context, ready func(context.Context) error, cfg *rest.Config) (stop func(), err error) {
	stop = func() {}
	if o.healthAddr != "" {
		h, err := nfworker.ListenHealth(o.healthAddr, ready)
		if err != nil {
			return nil, err
		}
		go h.Serve()
		slog.Info("health probes", "address", h.Addr())
		stop = func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = h.Shutdown(sctx)
		}
	}
	done, err := o.metrics.Serve(ctx, o.metricsAddr, cfg)
	if err != nil {
		stop()
		return nil, err
	}
	go func() {
		if err := <-done; err != nil {
			slog.Error("the worker's metrics server stopped", "error", err)
		}
	}()
	return stop, nil
}

// forgeTransport counts the worker's forge requests (nudgeflow_forge_requests_total).
func forgeTransport() http.RoundTripper { return metrics.ForgeTransport(nil) }

// bridgeOps are the bridge's flags for running on a cluster.
type bridgeOps struct {
	opts *bridge.ManagerOptions
}

func addBridgeOpsFlags(cmd *cobra.Command, opts *bridge.ManagerOptions) *bridgeOps {
	cmd.Flags().StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "",
		"namespace of the leader election Lease (default: the pod's own, read in-cluster)")
	return &bridgeOps{opts: opts}
}

// setup adds nudgeflow's bridge metrics to mgr.
//
// The bridge's readiness does not follow Temporal. Its admission webhooks never
// call Temporal (they read the API server and the informer cache), so they answer
// the same during an outage, and the webhook Service must keep its endpoints:
// without them the API server would skip every hook (failurePolicy Ignore) and
// nudges that a ChangeGroup holds would run. What needs Temporal waits: a
// reconcile whose signal fails returns the error and is retried with backoff, and
// a build stays under the build-routing finalizer until its signal is delivered.
func (o *bridgeOps) setup(mgr ctrl.Manager) error {
	bridge.CountChangeGroups(mgr)
	return bridge.MeasureBacklog(mgr)
}
