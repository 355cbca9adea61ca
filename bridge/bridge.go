// Package bridge is nudgeflow's stateless translation layer: a controller-runtime
// manager whose reconcilers and admission webhooks turn Kubernetes events, and
// the forge events the receiver verified (bridge/receiver), into Temporal signals. It may be restarted or run twice
// at any time; workflows deduplicate what it resends.
//
// Each feature lives in its own subpackage with a Setup function that Setup below
// calls; a feature takes only the dependencies it uses.
package bridge

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	newmodel "github.com/nudgeflow/nudgeflow/api/mirror/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/autogroupprune"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/bridge/changegroupcontroller"
	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
	"github.com/nudgeflow/nudgeflow/bridge/nudgeconfig"
	"github.com/nudgeflow/nudgeflow/bridge/plrcache"
	"github.com/nudgeflow/nudgeflow/bridge/prgroups"
	"github.com/nudgeflow/nudgeflow/bridge/receiverapi"
	"github.com/nudgeflow/nudgeflow/internal/autogroups"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/serving"
	changegroupwf "github.com/nudgeflow/nudgeflow/workflows/changegroup"
	prgroupwf "github.com/nudgeflow/nudgeflow/workflows/prgroup"
)

// Deps is what the bridge's features need besides the manager.
type Deps struct {
	// Temporal signals and starts workflows. Never carries secrets.
	Temporal client.Client
	// TaskQueue is where the worker listens.
	TaskQueue string
	// NudgingPeers names the Konflux services that nudge beside nudgeflow
	// (builds.ParsePeers): their edges are left to them. "auto" detects them from
	// what the API server serves (the CLI's default); "" is "none", nudgeflow alone
	// (the dev stack and the test worlds).
	NudgingPeers string
	// ISDecisionDeadline is how long the bridge waits for integration-service's
	// verdict on a build before it nudges the targets IS runs itself (zero:
	// builds.DefaultISDecisionDeadline).
	ISDecisionDeadline time.Duration
	// FailedSnapshotGrace is how long a validated edge waits, after a failed
	// Snapshot of a build, for a passing one (0:
	// validatednudge.DefaultFailedSnapshotGrace).
	FailedSnapshotGrace time.Duration
	// ChangeGroup tunes ChangeGroup workflows started by the bridge.
	ChangeGroup changegroupwf.Settings
	// PRGroup tunes the PRGroup workflows (ADR 29 PR groups) started by the bridge.
	PRGroup prgroupwf.Settings
	// Receiver, when set, serves the forge webhook receiver's API (bridge/receiverapi)
	// on the admission webhook server: the bound webhook secrets, and the events the
	// receiver verified.
	Receiver *ReceiverAPI
}

// ReceiverAPI configures the bridge's side of the forge webhook receiver.
type ReceiverAPI struct {
	// SecretsNamespace holds the repository-bound webhook Secrets: nudgeflow's own
	// namespace, which tenants cannot write.
	SecretsNamespace string
	// Identity is the receiver's user, the only caller served
	// (system:serviceaccount:<namespace>:nudgeflow-receiver).
	Identity string
}

// ReceiverIdentity is the user of the receiver's ServiceAccount in namespace.
func ReceiverIdentity(namespace string) string {
	return "system:serviceaccount:" + namespace + ":" + ReceiverServiceAccount
}

// ReceiverServiceAccount is the receiver's ServiceAccount (deploy/base/receiver.yaml).
const ReceiverServiceAccount = "nudgeflow-receiver"

// Bridge is what Setup wired, for the parts that serve outside the manager.
type Bridge struct {
	// PREvents delivers forge pull request events to ChangeGroup workflows.
	PREvents *changegroupcontroller.PREventRouter
	// CachesSynced is the replica's readiness: nil once the informer caches the
	// admission webhooks read (and the receiver API's) have synced (readiness.go).
	CachesSynced healthz.Checker
}

// ManagerOptions configures the manager.
type ManagerOptions struct {
	// WebhookHost, WebhookPort and WebhookCertDir serve the admission webhooks.
	WebhookHost    string
	WebhookPort    int
	WebhookCertDir string
	// MetricsAddr serves Prometheus metrics; "0" disables them.
	MetricsAddr string
	// Metrics serves them over HTTPS to authenticated and authorized scrapers only,
	// or as plain HTTP when its Secure is false; its EnableHTTP2 applies to the
	// admission webhooks too.
	Metrics serving.Metrics
	// HealthAddr serves /healthz and /readyz; "" disables them.
	HealthAddr string
	// PprofAddr serves Go's profiles (/debug/pprof/) for an operator looking into
	// the bridge's memory or CPU; "" (the default) serves none.
	PprofAddr string
	// LeaderElection keeps one active bridge when several run.
	LeaderElection          bool
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod time the leader election
	// (DefaultLeaseDuration and the others when zero).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// MaxConcurrentReconciles is how many objects each controller (builds, Renovate
	// runs, Snapshots, ChangeGroups, held nudges, NudgeConfigs) reconciles at once;
	// DefaultMaxConcurrentReconciles when zero. One object is never reconciled twice
	// at once (controller-runtime's work queue), and the workflows order builds by
	// when they were built, not by when their signal arrives.
	MaxConcurrentReconciles int
	// CacheSyncTimeout bounds the informers' first lists, for the controllers and
	// for readiness (DefaultCacheSyncTimeout when zero).
	CacheSyncTimeout time.Duration
	// NewFormKeys says whether the bridge also caches PipelineRuns labelled only
	// with ADR 69's konflux-ci.dev keys: NewFormKeysAuto (the default) when the
	// cluster serves the new-model Component kind (only its builds carry them),
	// NewFormKeysOn or NewFormKeysOff.
	NewFormKeys string
	// SkipControllerNameValidation lets one process build a second manager (tests and
	// `nudgeflow-dev bench` restart the bridge in-process); controller names must be
	// unique per process otherwise.
	SkipControllerNameValidation bool
}

// DefaultMaxConcurrentReconciles: a reconcile spends its time waiting on Temporal
// (a SignalWithStart per nudge edge, a build's edges at once) and on its
// acknowledgement patch, not on CPU (under a millisecond of the bridge's CPU per
// signal), so one worker per controller leaves Temporal idle between round trips.
// Eight keep a Temporal server busy: in `nudgeflow-dev bench` on 2 cores, 16 sent
// between 0.8 and 1.3 times what 8 sent, 32 no more (docs/performance.md); the
// flag raises it for a frontend far away, where each round trip is long.
const DefaultMaxConcurrentReconciles = 8

// The leader election's timings, as OpenShift's operators set them
// (openshift/library-go's LeaderElectionDefaulting): a leader that cannot renew its
// Lease for RenewDeadline (an API server slow or away for up to 107 s, an etcd
// leader election, a control-plane upgrade) stops leading and exits, and the pod
// restarts; the other replica takes over after LeaseDuration. controller-runtime's
// own defaults (15 s, 10 s, 2 s) turn an API server's 10 s hiccup into a restart
// of the leader and more Lease writes; a takeover after 137 s is harmless here, as
// the bridge is stateless and a new leader resyncs everything.
const (
	DefaultLeaseDuration = 137 * time.Second
	DefaultRenewDeadline = 107 * time.Second
	DefaultRetryPeriod   = 26 * time.Second
)

// The metrics server asks the API server who a scraper is and whether it may get
// /metrics (serving.Metrics).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// NewManager builds the manager with nudgeflow's scheme and webhook server.
func NewManager(cfg *rest.Config, opts ManagerOptions) (ctrl.Manager, error) {
	if opts.MetricsAddr == "" {
		opts.MetricsAddr = "0"
	}
	if opts.MaxConcurrentReconciles <= 0 {
		opts.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	ctrlOpts := config.Controller{MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
		CacheSyncTimeout: orDefault(opts.CacheSyncTimeout, DefaultCacheSyncTimeout)}
	if opts.SkipControllerNameValidation {
		ctrlOpts.SkipNameValidation = ptr.To(true)
	}
	newForm, err := cachesNewForm(cfg, opts.NewFormKeys)
	if err != nil {
		return nil, err
	}
	newCache := plrcache.NewOldFormOnly
	if newForm {
		newCache = plrcache.New
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  kube.NewScheme(),
		Cache:                   plrcache.Options(),
		NewCache:                newCache,
		Controller:              ctrlOpts,
		Metrics:                 opts.Metrics.ServerOptions(opts.MetricsAddr),
		HealthProbeBindAddress:  opts.HealthAddr,
		PprofBindAddress:        opts.PprofAddr,
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        "nudgeflow-bridge",
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		// A stopping leader gives its Lease up, so that with a long lease a rollout
		// does not leave the bridge without a leader for LeaseDuration. Safe: the
		// process exits as soon as the manager returns.
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 ptr.To(orDefault(opts.LeaseDuration, DefaultLeaseDuration)),
		RenewDeadline:                 ptr.To(orDefault(opts.RenewDeadline, DefaultRenewDeadline)),
		RetryPeriod:                   ptr.To(orDefault(opts.RetryPeriod, DefaultRetryPeriod)),
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    opts.WebhookHost,
			Port:    opts.WebhookPort,
			CertDir: opts.WebhookCertDir,
			TLSOpts: serving.TLSOptions(opts.Metrics.EnableHTTP2),
		}),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the bridge's manager: %w", err)
	}
	return mgr, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Setup registers every feature's reconcilers and webhooks with the manager.
func Setup(mgr ctrl.Manager, deps Deps) (*Bridge, error) {
	peers, err := ResolvePeers(mgr.GetRESTMapper(), deps.NudgingPeers)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(plrcache.ReturnSyncPeak{Cache: mgr.GetCache()}); err != nil {
		return nil, err
	}
	if err := nudgeconfig.Setup(mgr, peers); err != nil {
		return nil, err
	}
	// One opener for both ways a build reaches a batch (its own routing and another
	// service's held nudge): its per-target lock makes them open one group.
	batches := &autogroups.Opener{Kube: mgr.GetClient(), Live: mgr.GetAPIReader()}
	groups := changegroupcontroller.Options{Temporal: deps.Temporal, TaskQueue: deps.TaskQueue, Settings: deps.ChangeGroup, Batches: batches}
	nudges := builds.Options{Temporal: deps.Temporal, TaskQueue: deps.TaskQueue, Peers: peers,
		ChangeGroups: groups.Starter(mgr.GetClient()), Batches: batches, ISDecisionDeadline: deps.ISDecisionDeadline,
		FailedSnapshotGrace: deps.FailedSnapshotGrace}
	if err := builds.Setup(mgr, nudges); err != nil {
		return nil, err
	}
	groups.Renudger = &builds.Renudger{Client: mgr.GetClient(), Options: nudges}
	router, err := changegroupcontroller.Setup(mgr, groups)
	if err != nil {
		return nil, err
	}
	// Batched nudging: manual groups take over automatic ones; automatic groups
	// follow their NudgeConfig.
	if err := (&autogroupprune.Reconciler{Kube: mgr.GetClient(), Live: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorderFor("nudgeflow")}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the batching reconciler: %w", err)
	}
	// PR groups (ADR 29): pull-request builds and the forge events of their PRs.
	prs, err := prgroups.Setup(mgr, prgroups.Options{Temporal: deps.Temporal, TaskQueue: deps.TaskQueue, Settings: deps.PRGroup})
	if err != nil {
		return nil, err
	}
	router.Also = append(router.Also, prs)
	var more []func() bool
	if deps.Receiver != nil {
		secrets, err := SetupReceiverAPI(mgr, *deps.Receiver, router)
		if err != nil {
			return nil, err
		}
		more = append(more, secrets.HasSynced)
	}
	warmer, err := addCacheWarmer(mgr, more...)
	if err != nil {
		return nil, err
	}
	return &Bridge{PREvents: router, CachesSynced: warmer.check}, nil
}

// SetupReceiverAPI serves the receiver's API on the admission webhook server (the
// receiver reaches the bridge through the webhook Service, over its TLS), feeding
// sink. Setup calls it for Deps.Receiver; the source it returns tells when its
// cache synced.
func SetupReceiverAPI(mgr ctrl.Manager, o ReceiverAPI, sink forgehook.Sink) (*receiverapi.InformerSource, error) {
	if o.Identity == "" {
		return nil, fmt.Errorf("the receiver API needs the receiver's identity")
	}
	secrets, err := receiverapi.NewInformerSource(mgr, o.SecretsNamespace)
	if err != nil {
		return nil, err
	}
	auth, err := receiverapi.NewTokenAuthenticator(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, err
	}
	(&receiverapi.Server{Secrets: secrets, Sink: sink, Auth: auth, Identity: o.Identity}).Register(mgr.GetWebhookServer())
	return secrets, nil
}

// ResolvePeers reads a --nudging-peers value, detecting the peers for "auto".
func ResolvePeers(mapper meta.RESTMapper, value string) (builds.Peers, error) {
	if value == "" {
		return builds.Peers{}, nil
	}
	peers, auto, err := builds.ParsePeers(value)
	if err != nil || !auto {
		return peers, err
	}
	if peers, err = builds.DetectPeers(mapper); err != nil {
		return builds.Peers{}, fmt.Errorf("detecting the Konflux services that nudge (--nudging-peers=auto): %w", err)
	}
	ctrl.Log.WithName("bridge").Info("detected the Konflux services that nudge beside nudgeflow; their edges are theirs",
		"nudgingPeers", peers.String())
	return peers, nil
}

// The values of ManagerOptions.NewFormKeys (--new-form-keys).
const (
	NewFormKeysAuto = "auto"
	NewFormKeysOn   = "on"
	NewFormKeysOff  = "off"
)

// cachesNewForm decides NewFormKeys. Auto asks discovery once, at start: a
// cluster that installs the new-model Component later needs a bridge restart
// (deploy/README.md says so); a discovery error caches them (the cost of an
// empty informer is safer than a build nobody routes).
func cachesNewForm(cfg *rest.Config, mode string) (bool, error) {
	switch mode {
	case NewFormKeysOn:
		return true, nil
	case NewFormKeysOff:
		return false, nil
	case "", NewFormKeysAuto:
	default:
		return false, fmt.Errorf("--new-form-keys is %q: want auto, on or off", mode)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return true, nil
	}
	resources, err := dc.ServerResourcesForGroupVersion(newmodel.GroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		ctrl.Log.WithName("bridge").Error(err, "cannot tell whether the cluster serves new-model Components; caching new-form PipelineRuns too")
		return true, nil
	}
	for _, r := range resources.APIResources {
		if r.Name == "components" {
			return true, nil
		}
	}
	return false, nil
}
