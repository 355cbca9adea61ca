// Package metrics holds every Prometheus metric nudgeflow exports, so the names a
// dashboard or an alert uses live in one place (deploy/monitoring reads them).
//
// Both processes serve one registry, controller-runtime's, on their
// --metrics-bind-address (HTTPS to authorized scrapers, internal/serving). It
// holds three families:
//
//   - the Temporal SDK's own metrics (temporal_*: requests, polls, task latencies,
//     sticky cache), through a tally scope with the Prometheus naming conventions
//     (TemporalHandler, passed to client.Options.MetricsHandler);
//   - controller-runtime's and client-go's (controller_runtime_*, workqueue_*,
//     rest_client_*), including the admission webhooks' latency;
//   - nudgeflow's own (nudgeflow_*), declared below.
//
// Workflow code records through workflow.GetMetricsHandler(ctx), which is
// replay-safe (nothing is recorded while a history replays) and issues no command,
// so counting never changes a workflow's command sequence. Activities and the
// bridge record where the event happens.
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
	sdktally "go.temporal.io/sdk/contrib/tally"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Registry is the one registry both processes serve (controller-runtime's).
var Registry = ctrlmetrics.Registry

// Names of nudgeflow's metrics recorded through the Temporal SDK's metrics handler
// (from workflows and activities). The Prometheus naming scope appends _total to
// counters, so Prometheus sees e.g. nudgeflow_changegroup_builds_held_total; every
// series also carries the SDK's namespace, task_queue and workflow_type labels.
const (
	// BuildsHeld counts builds a ChangeGroup took and holds (a newer build of a
	// member counts again: each is a nudge that did not happen on its own).
	BuildsHeld = "nudgeflow_changegroup_builds_held"
	// BuildsDelivered counts held builds that were in the group's merged pull request.
	BuildsDelivered = "nudgeflow_changegroup_builds_delivered"
	// BuildsHandedBack counts held builds handed back to normal nudging.
	BuildsHandedBack = "nudgeflow_changegroup_builds_handed_back"
	// CIBuildsSaved counts CI runs a released group saved: its ready members − 1
	// (the group triggers one CI build where each member's nudge would trigger one).
	CIBuildsSaved = "nudgeflow_changegroup_ci_builds_saved"
	// Nudges counts nudges by mode (immediate, validated, handback) and outcome
	// (the reason recorded on the Component: NudgeSucceeded, NudgeRunFailed, NudgeFailed,
	// NudgeHeldByChangeGroup, NudgeCancelled, and BuildNotVerified: a digest the
	// cluster did not build, nothing launched).
	Nudges = "nudgeflow_nudges"
	// RenovateRuns counts ended Renovate PipelineRuns by outcome (succeeded, failed, gone, held:
	// a ChangeGroup held the run and took its build, cancelled: someone cancelled it)
	// and reason (Reason* below, a bounded set: why a run failed, or delivered).
	RenovateRuns = "nudgeflow_renovate_runs"
)

// Names of nudgeflow's metrics recorded straight into the registry.
const (
	// ChangeGroups is a gauge of ChangeGroups by phase (bridge, from its cache).
	ChangeGroups = "nudgeflow_changegroups"
	// ForgeRequests counts forge API requests by host, method and status code
	// ("error" when no answer came).
	ForgeRequests = "nudgeflow_forge_requests_total"
	// ForgeWebhookDuration is the forge webhook receiver's latency by event and code.
	ForgeWebhookDuration = "nudgeflow_forge_webhook_duration_seconds"
)

// Label values of Nudges and RenovateRuns.
const (
	ModeImmediate = "immediate"
	ModeValidated = "validated"

	RunSucceeded = "succeeded"
	RunFailed    = "failed"
	RunGone      = "gone"
	RunHeld      = "held"
	RunCancelled = "cancelled"
)

// Values of RenovateRuns' reason label: one per way a run ends, never free text.
const (
	ReasonDelivered = "delivered"
	// ReasonGone, ReasonHeld and ReasonCancelled are their outcome's word.
	ReasonGone                 = RunGone
	ReasonHeld                 = RunHeld
	ReasonHeldReturned         = "held-returned"
	ReasonSuperseded           = "superseded"
	ReasonCancelled            = RunCancelled
	ReasonRegistryAuth         = "registry-auth-failed"
	ReasonImageLookup          = "image-lookup-failed"
	ReasonRepositoryNotUpdated = "repository-not-updated"
	ReasonPRNotOpened          = "pr-not-opened"
	ReasonNotDelivered         = "not-delivered"
	ReasonDeliveryUnknown      = "delivery-unknown"
	ReasonTimeout              = "timeout"
	// ReasonRenovateFailed: Renovate exited non-zero, or its task failed otherwise.
	ReasonRenovateFailed = "renovate-failed"
)

// RunReasons lists every value of RenovateRuns' reason label.
var RunReasons = []string{ReasonDelivered, ReasonGone, ReasonHeld, ReasonHeldReturned, ReasonSuperseded, ReasonCancelled,
	ReasonRegistryAuth, ReasonImageLookup, ReasonRepositoryNotUpdated, ReasonPRNotOpened, ReasonNotDelivered,
	ReasonDeliveryUnknown, ReasonTimeout, ReasonRenovateFailed}

// Declared lists every nudgeflow_* series name as Prometheus shows it: what a
// dashboard may query besides the SDK's and controller-runtime's metrics.
func Declared() []string {
	return []string{
		BuildsHeld + "_total", BuildsDelivered + "_total", BuildsHandedBack + "_total", CIBuildsSaved + "_total",
		Nudges + "_total", RenovateRuns + "_total",
		ChangeGroups, ForgeRequests,
		ChangeGroupOldestWaiting, ChangeGroupOldestOverdue, BuildOldestUnrouted,
		ForgeWebhookDuration + "_bucket", ForgeWebhookDuration + "_sum", ForgeWebhookDuration + "_count",
		AdmissionFailOpen, ChangeGroupWorkflowClosed,
	}
}

// Count adds n to the counter name with the given label pairs (key, value, ...)
// on h: a workflow's, an activity's or a client's metrics handler. Nothing is
// recorded for n <= 0.
func Count(h client.MetricsHandler, name string, n int, labels ...string) {
	if h == nil || n <= 0 {
		return
	}
	if len(labels) > 0 {
		tags := make(map[string]string, len(labels)/2)
		for i := 0; i+1 < len(labels); i += 2 {
			tags[labels[i]] = labels[i+1]
		}
		h = h.WithTags(tags)
	}
	h.Counter(name).Inc(int64(n))
}

var (
	temporalOnce    sync.Once
	temporalHandler client.MetricsHandler
)

// TemporalHandler is the Temporal SDK metrics handler of this process, reporting
// into Registry with Prometheus names (counters _total, timers _seconds histograms).
// One per process: the bridge and the worker in one process (nudgeflow-dev dev) share it.
func TemporalHandler() client.MetricsHandler {
	temporalOnce.Do(func() {
		reporter := tallyprom.NewReporter(tallyprom.Options{
			Registerer:       Registry,
			DefaultTimerType: tallyprom.HistogramTimerType,
			OnRegisterError: func(err error) {
				slog.Warn("a Temporal SDK metric could not be registered", "error", err)
			},
		})
		scope, _ := tally.NewRootScope(tally.ScopeOptions{
			CachedReporter:  reporter,
			Separator:       tallyprom.DefaultSeparator,
			SanitizeOptions: &sdktally.PrometheusSanitizeOptions,
		}, time.Second)
		temporalHandler = sdktally.NewMetricsHandler(sdktally.NewPrometheusNamingScope(scope))
	})
	return temporalHandler
}

var (
	forgeRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: ForgeRequests,
		Help: "Forge (GitHub, GitLab) API requests by host, method and HTTP status code (error: no answer).",
	}, []string{"host", "method", "code"})
	forgeWebhookDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    ForgeWebhookDuration,
		Help:    "Latency of the bridge's forge webhook receiver by event and HTTP status code.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
	}, []string{"event", "code"})
)

func init() {
	Registry.MustRegister(forgeRequests, forgeWebhookDuration, changeGroupsCollector{})
}

// ForgeTransport counts every request that goes through base (http.DefaultTransport
// when nil) in nudgeflow_forge_requests_total.
func ForgeTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return countingTransport{base: base}
}

type countingTransport struct{ base http.RoundTripper }

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	forgeRequests.WithLabelValues(req.URL.Host, req.Method, code).Inc()
	return resp, err
}

// ForgeWebhook measures h, the forge webhook receiver, by event and status code.
// The event is read from headers anyone can send before the signature is checked,
// so it is bounded to WebhookEvents: another value is "other", none is "unknown".
// An unbounded label would let an unauthenticated client create a series per
// request.
func ForgeWebhook(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		forgeWebhookDuration.WithLabelValues(webhookEvent(r.Header), strconv.Itoa(rec.code)).Observe(time.Since(start).Seconds())
	})
}

// webhookEvents are the event label's values besides "other" and "unknown": the
// events a forge sends a nudgeflow webhook (GitHub's and Forgejo's X-*-Event,
// GitLab's X-Gitlab-Event).
var webhookEvents = []string{"pull_request", "ping", "push", "issue_comment", "pull_request_review",
	"check_run", "check_suite", "status", "installation", "installation_repositories",
	"Merge Request Hook", "Note Hook", "Push Hook", "Pipeline Hook", "System Hook"}

func webhookEvent(h http.Header) string {
	event := h.Get("X-GitHub-Event")
	for _, other := range []string{"X-Forgejo-Event", "X-Gitea-Event", "X-Gitlab-Event"} {
		if event != "" {
			break
		}
		event = h.Get(other)
	}
	switch {
	case event == "":
		return "unknown"
	case slices.Contains(webhookEvents, event):
		return event
	}
	return "other"
}

type statusRecorder struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.code, r.wroteHeader = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

// PhaseCounter counts ChangeGroups by phase.
type PhaseCounter func(ctx context.Context) (map[string]int, error)

// changeGroupPhases are the phases the gauge always reports (0 when none).
var changeGroupPhases = []string{"Initialized", "Waiting", "Ready", "Completed", "Cancelled", "Failed"}

var (
	changeGroupsDesc = prometheus.NewDesc(ChangeGroups, "ChangeGroups by phase, as the bridge's cache sees them.", []string{"phase"}, nil)
	phaseCounter     atomic.Pointer[PhaseCounter]
)

// CountChangeGroupsWith makes nudgeflow_changegroups{phase} report count on each
// scrape (the bridge counts its informer cache: no API call). Until it is called
// the gauge reports nothing (the worker).
func CountChangeGroupsWith(count PhaseCounter) { phaseCounter.Store(&count) }

type changeGroupsCollector struct{}

func (changeGroupsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- changeGroupsDesc }

func (changeGroupsCollector) Collect(ch chan<- prometheus.Metric) {
	counts, ok := readForScrape(&phaseCounter, "ChangeGroups by phase")
	if !ok {
		return
	}
	phases := append([]string(nil), changeGroupPhases...)
	for p := range counts {
		if !slices.Contains(phases, p) {
			phases = append(phases, p)
		}
	}
	for _, p := range phases {
		ch <- prometheus.MustNewConstMetric(changeGroupsDesc, prometheus.GaugeValue, float64(counts[p]), p)
	}
}
