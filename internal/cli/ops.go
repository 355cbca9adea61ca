package cli

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
	nfworker "github.com/nudgeflow/nudgeflow/worker"
)

// What running on a cluster adds to the worker and the bridge (issue 13): probes,
// metrics, the Temporal readiness check, the leader election namespace. Kept
// apart from worker.go and bridge.go, which only call in here.

// workerOps are the worker's health and metrics flags.
type workerOps struct {
	healthAddr string
}

func addWorkerOpsFlags(cmd *cobra.Command) *workerOps {
	o := &workerOps{}
	cmd.Flags().StringVar(&o.healthAddr, "health-addr", "", "address of /healthz, /readyz (Temporal reachable) and /metrics, for example :8081 (the Deployment sets it); empty disables them")
	return o
}

// serve starts the health server for c; stop shuts it down.
func (o *workerOps) serve(c client.Client) (stop func(), err error) {
	if o.healthAddr == "" {
		return func() {}, nil
	}
	h, err := nfworker.ListenHealth(o.healthAddr, c)
	if err != nil {
		return nil, err
	}
	go h.Serve()
	slog.Info("health and metrics", "address", h.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
	}, nil
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

// setup adds the Temporal readiness check and nudgeflow's bridge metrics to mgr.
// /readyz fails while Temporal is unreachable: the webhook Service then has no
// ready endpoint, so admission follows each webhook's failurePolicy (PipelineRun
// interception is skipped and nudges proceed as without nudgeflow).
func (o *bridgeOps) setup(mgr ctrl.Manager, c client.Client) error {
	bridge.CountChangeGroups(mgr)
	bridge.MeasureBacklog(mgr)
	if o.opts.HealthAddr == "" {
		return nil
	}
	return mgr.AddReadyzCheck("temporal", func(r *http.Request) error { return nfworker.CheckTemporal(r.Context(), c) })
}
