package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/nudgeflow/nudgeflow/internal/temporalconn"
	nfworker "github.com/nudgeflow/nudgeflow/worker"
)

// temporalFlags follow the Temporal CLI's environment variables; the flags are
// prefixed because -n/--namespace is kubectl's.
type temporalFlags struct {
	address   string
	namespace string
	taskQueue string
	// security is TLS, mTLS and API keys (temporaltls.go).
	security *temporalSecurity
	// metrics, when set, receives the SDK's metrics (the bridge and the worker).
	metrics client.MetricsHandler
	// compression of the gRPC requests (temporalconn).
	compression string
}

func addTemporalFlags(cmd *cobra.Command) *temporalFlags {
	f := &temporalFlags{}
	fs := cmd.Flags()
	fs.StringVar(&f.address, "temporal-address", envOr("TEMPORAL_ADDRESS", "127.0.0.1:7233"), "Temporal frontend host:port ($TEMPORAL_ADDRESS)")
	fs.StringVar(&f.namespace, "temporal-namespace", envOr("TEMPORAL_NAMESPACE", nfworker.DefaultNamespace), "Temporal namespace ($TEMPORAL_NAMESPACE)")
	fs.StringVar(&f.taskQueue, "task-queue", nfworker.DefaultTaskQueue, "Temporal task queue of nudgeflow's worker")
	fs.StringVar(&f.compression, "temporal-grpc-compression", temporalconn.DefaultCompression,
		"compression of the gRPC requests to Temporal: none (CPU over bytes, for a frontend in or near the cluster) or gzip (the SDK's default, for a slow or metered link)")
	f.security = addTemporalSecurityFlags(fs)
	return f
}

// dial connects at once: the commands a person runs fail right away when
// Temporal cannot be reached.
func (f *temporalFlags) dial() (client.Client, error) {
	opts, err := f.clientOptions()
	if err != nil {
		return nil, err
	}
	c, err := client.Dial(opts)
	if err != nil {
		return nil, fmt.Errorf("connecting to Temporal at %s (namespace %s): %w", f.address, f.namespace, err)
	}
	return c, nil
}

// lazy returns a client that connects on its first call and reconnects after a
// failure: the bridge and the worker start, serve their webhooks and probes, and
// stay up through a Temporal outage (a pod restarted during one would otherwise
// crash-loop); their calls fail, and are retried, until Temporal answers.
// Configuration errors (TLS files, flags) still fail here, at start.
func (f *temporalFlags) lazy() (client.Client, error) {
	opts, err := f.clientOptions()
	if err != nil {
		return nil, err
	}
	c, err := client.NewLazyClient(opts)
	if err != nil {
		return nil, fmt.Errorf("configuring the Temporal client for %s (namespace %s): %w", f.address, f.namespace, err)
	}
	return c, nil
}

// clientOptions are the connection's options: address, namespace, TLS, credentials
// and the metrics handler.
func (f *temporalFlags) clientOptions() (client.Options, error) {
	opts := client.Options{HostPort: f.address, Namespace: f.namespace, MetricsHandler: f.metrics, Logger: temporalLogger()}
	if err := temporalconn.Apply(&opts, f.compression); err != nil {
		return client.Options{}, err
	}
	if err := f.security.apply(&opts); err != nil {
		return client.Options{}, fmt.Errorf("configuring the Temporal connection: %w", err)
	}
	return opts, nil
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}
