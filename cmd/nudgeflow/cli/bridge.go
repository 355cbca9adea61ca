package cli

import (
	"time"

	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/bridge/receiverapi"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
	cgwf "github.com/nudgeflow/nudgeflow/workflows/changegroup"
	"github.com/nudgeflow/nudgeflow/workflows/validatednudge"
)

func newBridgeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bridge",
		Short: "Run the bridge: reconcilers, admission webhooks and the forge webhook receiver's API",
	}
	kf := addKubeFlags(cmd, false)
	kf.addRateFlags(cmd)
	tf := addTemporalFlags(cmd)
	var opts bridge.ManagerOptions
	var peers, executor, forgeAddr, secretFile, secretsNamespace, receiverIdentity string
	var settings cgwf.Settings
	var isDeadline, failedSnapshotGrace time.Duration
	fs := cmd.Flags()
	fs.IntVar(&opts.WebhookPort, "webhook-port", 9443, "port of the admission webhooks")
	fs.StringVar(&opts.WebhookCertDir, "webhook-cert-dir", "", "folder with tls.crt and tls.key for the admission webhooks")
	fs.StringVar(&opts.MetricsAddr, "metrics-bind-address", "0", "address of the metrics endpoint (0 disables it)")
	fs.StringVar(&opts.HealthAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.StringVar(&opts.PprofAddr, "pprof-bind-address", "", "address of Go's profiles (/debug/pprof/), e.g. 127.0.0.1:6060 to read with kubectl port-forward; none when empty")
	fs.BoolVar(&opts.LeaderElection, "leader-elect", false, "keep one active bridge when several run")
	fs.DurationVar(&opts.LeaseDuration, "leader-elect-lease-duration", bridge.DefaultLeaseDuration, "how long the other replicas wait after the leader's last renewal before one takes over")
	fs.DurationVar(&opts.RenewDeadline, "leader-elect-renew-deadline", bridge.DefaultRenewDeadline, "how long the leader keeps trying to renew its Lease before it gives up leading (and exits; must be less than the lease duration)")
	fs.DurationVar(&opts.RetryPeriod, "leader-elect-retry-period", bridge.DefaultRetryPeriod, "how often the replicas try to acquire or renew the Lease")
	opts.Metrics.AddFlags(fs)
	fs.StringVar(&opts.NewFormKeys, "new-form-keys", bridge.NewFormKeysAuto, "also cache PipelineRuns labelled only with the konflux-ci.dev keys of ADR 69: auto (when the cluster serves the konflux-ci.dev Component, whose builds alone carry them; decided at start), on or off")
	fs.DurationVar(&opts.CacheSyncTimeout, "cache-sync-timeout", bridge.DefaultCacheSyncTimeout, "how long the informers' first lists may take (548 s at 100,000 PipelineRuns, docs/performance.md); the replica is not ready until the caches its admission webhooks read have synced, and exits when they have not by then")
	fs.IntVar(&opts.MaxConcurrentReconciles, "max-concurrent-reconciles", bridge.DefaultMaxConcurrentReconciles, "objects each controller reconciles at once (builds, Snapshots, Renovate runs, ChangeGroups, held nudges, NudgeConfigs)")
	fs.StringVar(&peers, "nudging-peers", builds.PeersAuto, "the Konflux services that nudge beside nudgeflow, whose edges nudgeflow leaves to them: auto (detected from the CRDs the cluster serves), none, or a comma-separated list of build-service and integration-service")
	fs.DurationVar(&isDeadline, "integration-service-deadline", builds.DefaultISDecisionDeadline, "how long after a build ended nudgeflow waits for integration-service's verdict on it before nudging the targets of integration-service's immediate edges itself (it nudges those integration-service leaves out, e.g. repositories with only the GitHub App, as soon as the verdict is in)")
	fs.DurationVar(&failedSnapshotGrace, "failed-snapshot-grace", validatednudge.DefaultFailedSnapshotGrace, "how long a validated edge waits, after a failed Snapshot holding a build, for another Snapshot holding it to pass before the build counts as failed (a later pass still nudges it while no newer build came); applies to the edges' workflows started from then on")
	fs.StringVar(&executor, "executor", "", "deprecated: use --nudging-peers (all is none, exclusive is build-service,integration-service)")
	_ = fs.MarkDeprecated("executor", "use --nudging-peers")
	// The receiver runs as `nudgeflow receiver`, apart from the admission webhooks.
	fs.StringVar(&forgeAddr, "forge-webhook-bind-address", "", "removed: the forge webhook receiver runs as `nudgeflow receiver`")
	fs.StringVar(&secretFile, "forge-webhook-secret-file", "", "removed: the shared webhook secret is the receiver's (`nudgeflow receiver --webhook-secret-file`)")
	_ = fs.MarkDeprecated("forge-webhook-bind-address", "the forge webhook receiver runs as `nudgeflow receiver` (deploy/base/receiver.yaml)")
	_ = fs.MarkDeprecated("forge-webhook-secret-file", "the shared webhook secret is mounted into `nudgeflow receiver`")
	podNamespace := os.Getenv("POD_NAMESPACE")
	fs.StringVar(&secretsNamespace, "forge-webhook-secrets-namespace", podNamespace,
		"namespace of the Secrets labelled "+receiverapi.LabelWebhookSecret+"=true that bind repositories to their own webhook secret and tenant namespace, served to the receiver (default $POD_NAMESPACE)")
	defaultIdentity := ""
	if podNamespace != "" {
		defaultIdentity = bridge.ReceiverIdentity(podNamespace)
	}
	fs.StringVar(&receiverIdentity, "receiver-identity", defaultIdentity,
		"the user of the forge webhook receiver's ServiceAccount, the only caller of the receiver API served on the webhook port (default system:serviceaccount:$POD_NAMESPACE:"+bridge.ReceiverServiceAccount+"; empty: no receiver API)")
	fs.DurationVar(&settings.Debounce, "changegroup-debounce", cgwf.DefaultDebounce, "quiet time before a ChangeGroup pushes collected builds")
	fs.DurationVar(&settings.PollInterval, "changegroup-poll-interval", cgwf.DefaultPollInterval, "how often a ChangeGroup reads its PR (covers lost webhooks)")
	fs.DurationVar(&settings.CIStartGrace, "changegroup-ci-start-grace", cgwf.DefaultCIStartGrace, "how long after its release a ChangeGroup waits for a pipeline to report on the released head before it warns that CI did not start (the CIStarted condition, an Event, one PR comment)")
	fs.StringVar(&settings.ChangeGroupURLBase, "changegroup-url-base", "", "base URL linking PRs to their ChangeGroup (for example the Konflux UI)")
	ops := addBridgeOpsFlags(cmd, &opts)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if forgeAddr != "" || secretFile != "" {
			return errors.New("--forge-webhook-bind-address and --forge-webhook-secret-file are gone: the forge webhook receiver runs as `nudgeflow receiver`, its own Deployment (deploy/base/receiver.yaml)")
		}
		cfg, err := kf.restConfig()
		if err != nil {
			return err
		}
		tf.metrics = metrics.TemporalHandler()
		c, err := tf.lazy()
		if err != nil {
			return err
		}
		defer c.Close()
		mgr, err := bridge.NewManager(cfg, opts)
		if err != nil {
			return err
		}
		if executor != "" {
			if cmd.Flags().Changed("nudging-peers") {
				return fmt.Errorf("--executor and --nudging-peers both given: keep --nudging-peers")
			}
			p, err := builds.PeersFromExecutor(executor)
			if err != nil {
				return err
			}
			peers = p.String()
		}
		deps := bridge.Deps{Temporal: c, TaskQueue: tf.taskQueue, NudgingPeers: peers, ChangeGroup: settings, ISDecisionDeadline: isDeadline,
			FailedSnapshotGrace: failedSnapshotGrace}
		if receiverIdentity != "" {
			if secretsNamespace == "" {
				return errors.New("the receiver API needs --forge-webhook-secrets-namespace (or $POD_NAMESPACE)")
			}
			deps.Receiver = &bridge.ReceiverAPI{SecretsNamespace: secretsNamespace, Identity: receiverIdentity}
		}
		b, err := bridge.Setup(mgr, deps)
		if err != nil {
			return err
		}
		if opts.HealthAddr != "" {
			if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
				return err
			}
			if err := mgr.AddReadyzCheck("webhooks", mgr.GetWebhookServer().StartedChecker()); err != nil {
				return err
			}
			// Ready only once the hooks answer from synced caches: before that they
			// would fail open (bridge/readiness.go).
			if err := mgr.AddReadyzCheck("caches", b.CachesSynced); err != nil {
				return err
			}
		}
		if err := ops.setup(mgr); err != nil {
			return err
		}
		ctx := ctrl.SetupSignalHandler()
		return mgr.Start(ctx)
	}
	return cmd
}

func trimNewline(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}
