package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
	"github.com/nudgeflow/nudgeflow/bridge/receiver"
	"github.com/nudgeflow/nudgeflow/bridge/receiverapi"
)

func newReceiverCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "receiver",
		Short: "Run the forge webhook receiver: verifies GitHub, GitLab and Forgejo deliveries and forwards the events to the bridge",
		Long: `The forge webhook receiver is the only part of nudgeflow that faces the internet.
It holds no Kubernetes or Temporal credential: the repository-bound webhook secrets
come from the bridge, the shared one from a file, and each delivery is verified in
memory (a bounded body, a bounded number at once) before the event it carries is
forwarded to the bridge, authenticated by a ServiceAccount token projected for the
bridge alone (audience ` + receiverapi.Audience + `).`,
	}
	var addr, healthAddr, metricsAddr, secretFile, bridgeURL, bridgeCA, bridgeToken string
	var o receiver.Options
	fs := cmd.Flags()
	fs.StringVar(&addr, "bind-address", ":8443", "address of the forge webhook endpoint")
	fs.StringVar(&o.CertDir, "tls-cert-dir", "", "folder with tls.crt and tls.key (reloaded when they change); the endpoint and metrics serve HTTPS with it (plain HTTP when empty)")
	fs.StringVar(&healthAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz (ready once the bound webhook secrets are read from the bridge)")
	fs.StringVar(&metricsAddr, "metrics-bind-address", "0", "address of /metrics, served to whoever reaches it (the receiver has no credential to review a scraper's token with: keep the port to the monitoring namespaces); 0 disables it")
	fs.StringVar(&secretFile, "webhook-secret-file", "", "file holding the shared forge webhook secret, re-read when it changes (or $NUDGEFLOW_FORGE_WEBHOOK_SECRET)")
	fs.StringVar(&bridgeURL, "bridge-url", "", "the bridge's webhook Service, where the receiver API is served (https://nudgeflow-bridge-webhook.<namespace>.svc)")
	fs.StringVar(&bridgeCA, "bridge-ca-file", "", "PEM bundle of the CA that signed the bridge's webhook certificate (re-read when it changes)")
	fs.StringVar(&bridgeToken, "bridge-token-file", "", "the ServiceAccount token projected for the audience "+receiverapi.Audience+" (re-read on each use: the kubelet rotates it)")
	fs.Int64Var(&o.MaxBody, "max-body-bytes", forgehook.DefaultMaxBody, "largest delivery read; a larger one is answered 413 unread")
	fs.IntVar(&o.MaxConcurrent, "max-concurrent-deliveries", receiver.DefaultMaxConcurrent, "deliveries handled at once; one more is answered 503 at once")
	fs.IntVar(&o.MaxConns, "max-connections", receiver.DefaultMaxConns, "connections held open at once; one more is closed as soon as it is accepted")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", false, "let the endpoint speak HTTP/2 (off: HTTP/2 rapid reset, CVE-2023-44487)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		secret, err := sharedSecret(secretFile)
		if err != nil {
			return err
		}
		client, err := receiverapi.NewClient(bridgeURL, bridgeCA, bridgeToken)
		if err != nil {
			return err
		}
		o.SharedSecret, o.Bridge, o.Log = secret, client, slog.Default()
		r, err := receiver.New(o)
		if err != nil {
			return err
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("the forge webhook endpoint: %w", err)
		}
		var health, metricsL net.Listener
		if healthAddr != "" {
			if health, err = net.Listen("tcp", healthAddr); err != nil {
				return fmt.Errorf("the health probes: %w", err)
			}
		}
		if metricsAddr != "" && metricsAddr != "0" {
			if metricsL, err = net.Listen("tcp", metricsAddr); err != nil {
				return fmt.Errorf("the metrics endpoint: %w", err)
			}
		}
		slog.Info("forge webhook receiver serving", "address", l.Addr().String(), "tls", o.CertDir != "", "bridge", bridgeURL)
		return r.Serve(ctrl.SetupSignalHandler(), l, health, metricsL)
	}
	return cmd
}

// sharedSecret is the shared webhook secret's source: the file, re-read when it
// changes, or the environment's value. It is never logged.
func sharedSecret(file string) (forgehook.SecretFunc, error) {
	if file != "" {
		s := forgehook.FileSecret(file)
		if _, err := s(context.Background()); err != nil {
			return nil, err
		}
		return s, nil
	}
	if v := os.Getenv("NUDGEFLOW_FORGE_WEBHOOK_SECRET"); v != "" {
		return forgehook.StaticSecret([]byte(v)), nil
	}
	return nil, errors.New("the forge webhook receiver needs the shared secret: --webhook-secret-file or $NUDGEFLOW_FORGE_WEBHOOK_SECRET")
}
