package metrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/internal/metrics"
	"github.com/nudgeflow/nudgeflow/internal/metrics/metricstest"
)

// gathered is the registry's exposition of the named families.
func gathered(t *testing.T, names ...string) string {
	t.Helper()
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	var b strings.Builder
	for _, f := range families {
		for _, n := range names {
			if f.GetName() == n {
				b.WriteString(f.String())
				b.WriteString("\n")
			}
		}
	}
	return b.String()
}

// What workflows count through the SDK's handler reaches the registry under its
// Prometheus name, with its labels.
func TestTemporalHandlerReportsPrometheusNames(t *testing.T) {
	h := metrics.TemporalHandler()
	require.Equal(t, h, metrics.TemporalHandler(), "one handler per process")
	metrics.Count(h, metrics.Nudges, 2, "mode", metrics.ModeImmediate, "outcome", "NudgeSucceeded")
	metrics.Count(h, metrics.Nudges, 0, "mode", metrics.ModeImmediate, "outcome", "Ignored")
	require.Eventually(t, func() bool {
		out := gathered(t, metrics.Nudges+"_total")
		return strings.Contains(out, `value:"immediate"`) && strings.Contains(out, "value:2")
	}, 10*time.Second, 20*time.Millisecond, "the tally scope reports the counter")
	require.NotContains(t, gathered(t, metrics.Nudges+"_total"), "Ignored", "nothing is recorded for n <= 0")
}

func TestForgeTransportCountsByStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c := &http.Client{Transport: metrics.ForgeTransport(nil)}
	for _, p := range []string{"/repos", "/repos", "/missing"} {
		resp, err := c.Get(srv.URL + p)
		require.NoError(t, err)
		resp.Body.Close()
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	want := `
# HELP nudgeflow_forge_requests_total Forge (GitHub, GitLab) API requests by host, method and HTTP status code (error: no answer).
# TYPE nudgeflow_forge_requests_total counter
nudgeflow_forge_requests_total{code="200",host="` + host + `",method="GET"} 2
nudgeflow_forge_requests_total{code="404",host="` + host + `",method="GET"} 1
`
	require.NoError(t, testutil.GatherAndCompare(metrics.Registry, strings.NewReader(want), metrics.ForgeRequests))
}

func TestForgeWebhookLatencyByEventAndCode(t *testing.T) {
	h := metrics.ForgeWebhook(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	req.Header.Set("X-GitHub-Event", "pull_request")
	h.ServeHTTP(httptest.NewRecorder(), req)
	out := gathered(t, metrics.ForgeWebhookDuration)
	require.Contains(t, out, `value:"pull_request"`)
	require.Contains(t, out, `value:"401"`)
	require.Contains(t, out, "sample_count:1")
}

func TestChangeGroupsGaugeReportsEveryPhase(t *testing.T) {
	metrics.CountChangeGroupsWith(func(context.Context) (map[string]int, error) {
		return map[string]int{"Waiting": 2, "Completed": 1}, nil
	})
	want := `
# HELP nudgeflow_changegroups ChangeGroups by phase, as the bridge's cache sees them.
# TYPE nudgeflow_changegroups gauge
nudgeflow_changegroups{phase="Cancelled"} 0
nudgeflow_changegroups{phase="Completed"} 1
nudgeflow_changegroups{phase="Failed"} 0
nudgeflow_changegroups{phase="Initialized"} 0
nudgeflow_changegroups{phase="Ready"} 0
nudgeflow_changegroups{phase="Waiting"} 2
`
	require.NoError(t, testutil.GatherAndCompare(metrics.Registry, strings.NewReader(want), metrics.ChangeGroups))
}

// The event label comes from headers anyone can send before the signature is
// checked: values outside the known events collapse into "other", so a client
// cannot add a series per request.
func TestForgeWebhookEventLabelIsBounded(t *testing.T) {
	h := metrics.ForgeWebhook(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot) // a code no other test uses: its series are this test's
	}))
	send := func(header, event string) {
		req := httptest.NewRequest(http.MethodPost, "/", nil)
		if header != "" {
			req.Header.Set(header, event)
		}
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	for i := range 50 {
		send("X-GitHub-Event", fmt.Sprintf("made-up-%d", i))
	}
	send("X-Gitlab-Event", "Merge Request Hook")
	send("X-Forgejo-Event", "pull_request")
	send("", "")
	out := gathered(t, metrics.ForgeWebhookDuration)
	require.NotContains(t, out, "made-up")
	counts := map[string]string{}
	for _, m := range regexp.MustCompile(`value:"418"\}\s+label:\{name:"event"\s+value:"([^"]+)"\}\s+histogram:\{sample_count:(\d+)`).FindAllStringSubmatch(out, -1) {
		counts[m[1]] = m[2]
	}
	require.Equal(t, map[string]string{"other": "50", "Merge Request Hook": "1", "pull_request": "1", "unknown": "1"}, counts, out)
}

// Every webhook and reason is exported at 0 before anything fails, so the first
// fail-open of a process is an increase, not a series born at 1; a reason or a
// webhook outside the declared set counts as "other", never as a new series.
func TestFailOpenCounterStartsAtZeroAndStaysBounded(t *testing.T) {
	for webhook, reasons := range metrics.FailOpenReasons {
		for _, reason := range reasons {
			require.GreaterOrEqual(t, metricstest.FailOpens(t, webhook, reason), 0.0, "%s/%s exported", webhook, reason)
		}
	}
	edges := metricstest.FailOpens(t, metrics.WebhookBuildRouting, metrics.FailOpenEdgesUnread)
	other := metricstest.FailOpens(t, metrics.WebhookBuildRouting, metrics.FailOpenOther)
	nudgeOther := metricstest.FailOpens(t, metrics.WebhookNudgePipelineRun, metrics.FailOpenOther)
	metrics.CountFailOpen(metrics.WebhookBuildRouting, metrics.FailOpenEdgesUnread)
	metrics.CountFailOpen(metrics.WebhookBuildRouting, "made-up")
	metrics.CountFailOpen(metrics.WebhookBuildRouting, metrics.FailOpenChangeGroupsUnread) // the other webhook's reason
	metrics.CountFailOpen("made-up-webhook", metrics.FailOpenEdgesUnread)
	require.Equal(t, edges+1, metricstest.FailOpens(t, metrics.WebhookBuildRouting, metrics.FailOpenEdgesUnread))
	require.Equal(t, other+2, metricstest.FailOpens(t, metrics.WebhookBuildRouting, metrics.FailOpenOther))
	require.Equal(t, nudgeOther+1, metricstest.FailOpens(t, metrics.WebhookNudgePipelineRun, metrics.FailOpenOther))
	require.Equal(t, -1.0, metricstest.FailOpens(t, metrics.WebhookBuildRouting, "made-up"))
	require.Equal(t, -1.0, metricstest.FailOpens(t, "made-up-webhook", metrics.FailOpenEdgesUnread))
	require.Equal(t, -1.0, metricstest.FailOpens(t, metrics.WebhookBuildRouting, metrics.FailOpenChangeGroupsUnread))
}
