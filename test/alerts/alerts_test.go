// Package alerts_test proves the alerts nudgeflow ships (deploy/monitoring/alerts.yaml)
// with Prometheus's own rule evaluator: for each rule, synthetic series on which it
// fires with the labels a page would carry, and healthy (or merely noisy) series on
// which it stays quiet. The rules are read from the shipped PrometheusRule itself,
// and a rule without both kinds of case fails the test.
package alerts_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/nudgeflow/nudgeflow/internal/metrics"
	"github.com/nudgeflow/nudgeflow/test/localenv"
)

// alertCase is one synthetic history for one alert.
type alertCase struct {
	alert string
	name  string
	// series is a promqltest `load 1m` block: one series a line, values from t=0
	// (`0+1x30`: 31 samples rising by 1; `_x5`: no sample for 5 minutes).
	series string
	// at is when the alert is looked at; the rule is evaluated every 30 s up to it,
	// so its `for` runs as it would in Prometheus.
	at time.Duration
	// firing are the labels of each firing alert beside alertname and the rule's own
	// labels; none: the alert must be quiet at `at`.
	firing []map[string]string
}

const (
	ksm       = `job="kube-state-metrics", namespace="nudgeflow-system"`
	bridgeJob = `job="nudgeflow-bridge-metrics", namespace="nudgeflow-system", instance="10.0.0.7:8080"`
	workerJob = `job="nudgeflow-worker-metrics", namespace="nudgeflow-system", instance="10.0.0.8:8081"`
	apiserver = `job="apiserver", instance="10.0.0.1:6443"`
	// A Temporal SDK series as a ServiceMonitor stores it: the SDK's namespace label
	// (the Temporal namespace) renamed exported_namespace.
	temporal = workerJob + `, exported_namespace="nudgeflow", task_queue="nudgeflow"`
)

var cases = []alertCase{
	{alert: "NudgeflowReplicasUnavailable", name: "one bridge replica missing for 20 minutes",
		series: `
			kube_deployment_spec_replicas{` + ksm + `, deployment="nudgeflow-bridge"} 2x40
			kube_deployment_status_replicas_available{` + ksm + `, deployment="nudgeflow-bridge"} 1x40`,
		at:     20 * time.Minute,
		firing: []map[string]string{{"deployment": "nudgeflow-bridge", "namespace": "nudgeflow-system", "job": "kube-state-metrics"}}},
	{alert: "NudgeflowReplicasUnavailable", name: "a rollout's 10-minute dip is within the grace",
		series: `
			kube_deployment_spec_replicas{` + ksm + `, deployment="nudgeflow-worker"} 2x40
			kube_deployment_status_replicas_available{` + ksm + `, deployment="nudgeflow-worker"} 2x5 1x10 2x20`,
		at: 15 * time.Minute},
	{alert: "NudgeflowReplicasUnavailable", name: "every replica available; another Deployment short",
		series: `
			kube_deployment_spec_replicas{` + ksm + `, deployment="nudgeflow-worker"} 2x40
			kube_deployment_status_replicas_available{` + ksm + `, deployment="nudgeflow-worker"} 2x40
			kube_deployment_spec_replicas{` + ksm + `, deployment="someone-else"} 3x40
			kube_deployment_status_replicas_available{` + ksm + `, deployment="someone-else"} 0x40`,
		at: 30 * time.Minute},

	{alert: "NudgeflowDown", name: "no worker replica for 6 minutes",
		series: `
			kube_deployment_spec_replicas{` + ksm + `, deployment="nudgeflow-worker"} 2x20
			kube_deployment_status_replicas_available{` + ksm + `, deployment="nudgeflow-worker"} 0x20`,
		at:     6 * time.Minute,
		firing: []map[string]string{{"deployment": "nudgeflow-worker", "namespace": "nudgeflow-system", "job": "kube-state-metrics"}}},
	{alert: "NudgeflowDown", name: "scaled to zero on purpose",
		series: `
			kube_deployment_spec_replicas{` + ksm + `, deployment="nudgeflow-bridge"} 0x20
			kube_deployment_status_replicas_available{` + ksm + `, deployment="nudgeflow-bridge"} 0x20`,
		at: 10 * time.Minute},
	{alert: "NudgeflowDown", name: "a 3-minute restart",
		series: `
			kube_deployment_spec_replicas{` + ksm + `, deployment="nudgeflow-bridge"} 1x20
			kube_deployment_status_replicas_available{` + ksm + `, deployment="nudgeflow-bridge"} 1x5 0x3 1x10`,
		at: 9 * time.Minute},

	{alert: "NudgeflowWebhookFailOpen", name: "the build-routing hook failed open again",
		series: `
			apiserver_admission_webhook_fail_open_count{` + apiserver + `, name="build-routing.nudgeflow.konflux-ci.dev", type="admit"} 2x10 3x10`,
		at:     12 * time.Minute,
		firing: []map[string]string{{"name": "build-routing.nudgeflow.konflux-ci.dev"}}},
	{alert: "NudgeflowWebhookFailOpen", name: "the first fail-open of the API server's life (a series born at 1)",
		series: `
			apiserver_admission_webhook_fail_open_count{` + apiserver + `, name="nudge-pipelinerun.nudgeflow.konflux-ci.dev", type="admit"} _x30 1x10`,
		at:     32 * time.Minute,
		firing: []map[string]string{{"name": "nudge-pipelinerun.nudgeflow.konflux-ci.dev"}}},
	{alert: "NudgeflowWebhookFailOpen", name: "old fail-opens, none for 15 minutes; another product's webhook failing open",
		series: `
			apiserver_admission_webhook_fail_open_count{` + apiserver + `, name="build-routing.nudgeflow.konflux-ci.dev", type="admit"} 3x5 4x30
			apiserver_admission_webhook_fail_open_count{` + apiserver + `, name="mutate.example.com", type="admit"} 0+1x40`,
		at: 20 * time.Minute},

	{alert: "NudgeflowWebhookCallErrors", name: "ChangeGroup writes refused: the API server cannot reach the bridge",
		series: `
			apiserver_admission_webhook_rejection_count{` + apiserver + `, name="vchangegroup.nudgeflow.konflux-ci.dev", type="validating", operation="CREATE", error_type="calling_webhook_error", rejection_code="0"} 0+2x30`,
		at:     30 * time.Minute,
		firing: []map[string]string{{"name": "vchangegroup.nudgeflow.konflux-ci.dev"}}},
	{alert: "NudgeflowWebhookCallErrors", name: "the webhook denies invalid NudgeConfigs (its job)",
		series: `
			apiserver_admission_webhook_rejection_count{` + apiserver + `, name="vnudgeconfig.konflux-ci.dev", type="validating", operation="CREATE", error_type="no_error", rejection_code="403"} 0+5x30`,
		at: 20 * time.Minute},

	{alert: "NudgeflowWebhookSlow", name: "p99 between 0.5 s and 1 s",
		series: webhookLatency("nudge-pipelinerun.nudgeflow.konflux-ci.dev", map[string]int{"0.005": 0, "0.025": 50, "0.1": 90, "0.5": 97, "1": 100}),
		at:     30 * time.Minute,
		firing: []map[string]string{{"name": "nudge-pipelinerun.nudgeflow.konflux-ci.dev"}}},
	{alert: "NudgeflowWebhookSlow", name: "p99 under 25 ms; another product's webhook slow",
		series: webhookLatency("build-routing.nudgeflow.konflux-ci.dev", map[string]int{"0.005": 90, "0.025": 100, "0.1": 100, "0.5": 100, "1": 100}) +
			webhookLatency("mutate.example.com", map[string]int{"0.005": 0, "0.025": 0, "0.1": 0, "0.5": 0, "1": 0}),
		at: 30 * time.Minute},

	{alert: "NudgeflowWorkflowNonDeterminism", name: "ChangeGroup tasks keep failing replay after a rollout (new worker, series born at 1)",
		series: `
			temporal_workflow_task_execution_failed_total{` + temporal + `, workflow_type="ChangeGroup", failure_reason="NonDeterminismError"} _x5 1+1x20`,
		at:     17 * time.Minute,
		firing: []map[string]string{{"task_queue": "nudgeflow", "workflow_type": "ChangeGroup"}}},
	{alert: "NudgeflowWorkflowNonDeterminism", name: "a rolling update: an old pod fails a few tasks for 2 minutes, then the new code runs them",
		series: `
			temporal_workflow_task_execution_failed_total{` + temporal + `, workflow_type="ChangeGroup", failure_reason="NonDeterminismError"} _x5 1+1x2 3x20`,
		at: 14 * time.Minute},
	{alert: "NudgeflowWorkflowNonDeterminism", name: "the same rolling update, long after",
		series: `
			temporal_workflow_task_execution_failed_total{` + temporal + `, workflow_type="ChangeGroup", failure_reason="NonDeterminismError"} _x5 1+1x2 3x20`,
		at: 25 * time.Minute},
	{alert: "NudgeflowWorkflowNonDeterminism", name: "a workflow's own errors are not non-determinism",
		series: `
			temporal_workflow_task_execution_failed_total{` + temporal + `, workflow_type="ChangeGroup", failure_reason="WorkflowError"} 0+1x30`,
		at: 20 * time.Minute},

	{alert: "NudgeflowActivityFailures", name: "half the push activities fail",
		series: `
			temporal_activity_execution_failed_total{` + temporal + `, workflow_type="ChangeGroup", activity_type="PushPR", failure_reason="ActivityError"} 0+5x40
			temporal_activity_execution_latency_seconds_count{` + temporal + `, workflow_type="ChangeGroup", activity_type="PushPR"} 0+10x40`,
		at:     35 * time.Minute,
		firing: []map[string]string{{"task_queue": "nudgeflow", "activity_type": "PushPR"}}},
	{alert: "NudgeflowActivityFailures", name: "10% retried failures",
		series: `
			temporal_activity_execution_failed_total{` + temporal + `, workflow_type="ChangeGroup", activity_type="PushPR", failure_reason="ActivityError"} 0+1x40
			temporal_activity_execution_latency_seconds_count{` + temporal + `, workflow_type="ChangeGroup", activity_type="PushPR"} 0+10x40`,
		at: 35 * time.Minute},
	{alert: "NudgeflowActivityFailures", name: "every execution fails, but only 5 in 15 minutes",
		series: `
			temporal_activity_execution_failed_total{` + temporal + `, workflow_type="Nudge", activity_type="RunRenovate", failure_reason="ActivityError"} 0+0.33x40
			temporal_activity_execution_latency_seconds_count{` + temporal + `, workflow_type="Nudge", activity_type="RunRenovate"} 0+0.33x40`,
		at: 35 * time.Minute},

	{alert: "NudgeflowRenovateRunsFailing", name: "two of three runs fail for 40 minutes",
		series: `
			nudgeflow_renovate_runs_total{` + temporal + `, workflow_type="Nudge", outcome="failed"} 0+2x80
			nudgeflow_renovate_runs_total{` + temporal + `, workflow_type="Nudge", outcome="succeeded"} 0+1x80
			nudgeflow_renovate_runs_total{` + temporal + `, workflow_type="Nudge", outcome="held"} 0+5x80`,
		at:     70 * time.Minute,
		firing: []map[string]string{{"task_queue": "nudgeflow"}}},
	{alert: "NudgeflowRenovateRunsFailing", name: "failures split by reason add up: two of three runs fail",
		series: `
			nudgeflow_renovate_runs_total{` + temporal + `, workflow_type="Nudge", outcome="failed", reason="pr-not-opened"} 0+1x80
			nudgeflow_renovate_runs_total{` + temporal + `, workflow_type="Nudge", outcome="failed", reason="registry-auth-failed"} 0+1x80
			nudgeflow_renovate_runs_total{` + temporal + `, workflow_type="Nudge", outcome="succeeded", reason="delivered"} 0+1x80`,
		at:     70 * time.Minute,
		firing: []map[string]string{{"task_queue": "nudgeflow"}}},
	{alert: "NudgeflowRenovateRunsFailing", name: "one tenant's runs fail: a tenth of all",
		series: `
			nudgeflow_renovate_runs_total{` + temporal + `, workflow_type="Nudge", outcome="failed"} 0+1x80
			nudgeflow_renovate_runs_total{` + temporal + `, workflow_type="Nudge", outcome="succeeded"} 0+9x80`,
		at: 70 * time.Minute},
	{alert: "NudgeflowRenovateRunsFailing", name: "every run fails, but only 6 in 30 minutes",
		series: `
			nudgeflow_renovate_runs_total{` + temporal + `, workflow_type="Nudge", outcome="failed"} 0+0.2x80`,
		at: 70 * time.Minute},
	{alert: "NudgeflowRenovateRunsFailing", name: "runs held by ChangeGroups and cancelled are not failures",
		series: `
			nudgeflow_renovate_runs_total{` + temporal + `, workflow_type="Nudge", outcome="held"} 0+5x80
			nudgeflow_renovate_runs_total{` + temporal + `, workflow_type="Nudge", outcome="cancelled"} 0+5x80
			nudgeflow_renovate_runs_total{` + temporal + `, workflow_type="Nudge", outcome="succeeded"} 0+1x80`,
		at: 70 * time.Minute},

	{alert: "NudgeflowForgeErrors", name: "a third of GitHub's answers are 502 or none",
		series: `
			nudgeflow_forge_requests_total{` + workerJob + `, host="api.github.com", method="GET", code="200"} 0+10x40
			nudgeflow_forge_requests_total{` + workerJob + `, host="api.github.com", method="GET", code="502"} 0+3x40
			nudgeflow_forge_requests_total{` + workerJob + `, host="api.github.com", method="PUT", code="error"} 0+2x40`,
		at:     35 * time.Minute,
		firing: []map[string]string{{"host": "api.github.com"}}},
	{alert: "NudgeflowForgeErrors", name: "5% errors; many 404s (answers, not errors)",
		series: `
			nudgeflow_forge_requests_total{` + workerJob + `, host="gitlab.com", method="GET", code="200"} 0+19x40
			nudgeflow_forge_requests_total{` + workerJob + `, host="gitlab.com", method="GET", code="503"} 0+1x40
			nudgeflow_forge_requests_total{` + workerJob + `, host="gitlab.com", method="GET", code="404"} 0+20x40`,
		at: 35 * time.Minute},

	{alert: "NudgeflowForgeRateLimited", name: "GitHub's secondary rate limit (403) on a third of the requests",
		series: `
			nudgeflow_forge_requests_total{` + workerJob + `, host="api.github.com", method="GET", code="200"} 0+10x40
			nudgeflow_forge_requests_total{` + workerJob + `, host="api.github.com", method="POST", code="403"} 0+5x40`,
		at:     35 * time.Minute,
		firing: []map[string]string{{"host": "api.github.com"}}},
	{alert: "NudgeflowForgeRateLimited", name: "a few 429s and many 5xx",
		series: `
			nudgeflow_forge_requests_total{` + workerJob + `, host="api.github.com", method="GET", code="200"} 0+50x40
			nudgeflow_forge_requests_total{` + workerJob + `, host="api.github.com", method="GET", code="429"} 0+1x40
			nudgeflow_forge_requests_total{` + workerJob + `, host="api.github.com", method="GET", code="500"} 0+20x40`,
		at: 35 * time.Minute},

	{alert: "NudgeflowReconcileErrors", name: "a third of the build reconciles fail",
		series: `
			controller_runtime_reconcile_total{` + bridgeJob + `, controller="nudge-builds", result="success"} 0+10x40
			controller_runtime_reconcile_total{` + bridgeJob + `, controller="nudge-builds", result="error"} 0+5x40
			controller_runtime_reconcile_errors_total{` + bridgeJob + `, controller="nudge-builds"} 0+5x40`,
		at:     35 * time.Minute,
		firing: []map[string]string{{"controller": "nudge-builds"}}},
	{alert: "NudgeflowReconcileErrors", name: "the odd conflict; another operator's controller failing",
		series: `
			controller_runtime_reconcile_total{` + bridgeJob + `, controller="changegroup", result="success"} 0+50x40
			controller_runtime_reconcile_total{` + bridgeJob + `, controller="changegroup", result="error"} 0+1x40
			controller_runtime_reconcile_errors_total{` + bridgeJob + `, controller="changegroup"} 0+1x40
			controller_runtime_reconcile_total{job="other-operator", controller="widget", result="error"} 0+10x40
			controller_runtime_reconcile_errors_total{job="other-operator", controller="widget"} 0+10x40`,
		at: 35 * time.Minute},

	{alert: "NudgeflowBuildUnrouted", name: "a finished build unrouted for 17 minutes, seen by both bridge replicas",
		series: `
			nudgeflow_build_oldest_unrouted_seconds{` + bridgeJob + `} 0+60x30
			nudgeflow_build_oldest_unrouted_seconds{job="nudgeflow-bridge-metrics", namespace="nudgeflow-system", instance="10.0.0.9:8080"} 0+60x30`,
		at:     17 * time.Minute,
		firing: []map[string]string{{}}},
	{alert: "NudgeflowBuildUnrouted", name: "routed after 11 minutes; nothing held",
		series: `
			nudgeflow_build_oldest_unrouted_seconds{` + bridgeJob + `} 0+60x11 0x20`,
		at: 20 * time.Minute},

	{alert: "NudgeflowChangeGroupOverdue", name: "a group 32 minutes past its timeout",
		series: `
			nudgeflow_changegroup_oldest_overdue_seconds{` + bridgeJob + `} 0+60x40`,
		at:     32 * time.Minute,
		firing: []map[string]string{{}}},
	{alert: "NudgeflowChangeGroupOverdue", name: "the timeout timer a few minutes late",
		series: `
			nudgeflow_changegroup_oldest_overdue_seconds{` + bridgeJob + `} 0+60x5 0x30`,
		at: 30 * time.Minute},

	{alert: "NudgeflowChangeGroupWaitingLong", name: "a group Waiting for 8 days",
		series: `
			nudgeflow_changegroup_oldest_waiting_seconds{` + bridgeJob + `, phase="Waiting"} 691200+60x70
			nudgeflow_changegroup_oldest_waiting_seconds{` + bridgeJob + `, phase="Ready"} 3600+60x70`,
		at:     65 * time.Minute,
		firing: []map[string]string{{"phase": "Waiting"}}},
	{alert: "NudgeflowChangeGroupWaitingLong", name: "groups a few days old",
		series: `
			nudgeflow_changegroup_oldest_waiting_seconds{` + bridgeJob + `, phase="Initialized"} 259200+60x70`,
		at: 65 * time.Minute},
}

// webhookLatency is the API server's latency histogram of one webhook, its
// cumulative bucket counts growing by per[le] a minute (+Inf: 100).
func webhookLatency(name string, per map[string]int) string {
	var b strings.Builder
	for _, le := range []string{"0.005", "0.025", "0.1", "0.5", "1", "2.5", "10", "25", "+Inf"} {
		n, ok := per[le]
		if !ok {
			n = 100
		}
		fmt.Fprintf(&b, "\napiserver_admission_webhook_admission_duration_seconds_bucket{%s, name=%q, type=\"admit\", operation=\"CREATE\", rejected=\"false\", le=%q} 0+%dx40",
			apiserver, name, le, n)
	}
	return b.String()
}

func repoFile(parts ...string) string {
	return filepath.Join(append([]string{localenv.RepoRoot()}, parts...)...)
}

// shippedRules reads the rule groups of deploy/monitoring/alerts.yaml with
// Prometheus's own parser (which validates expressions and templates).
func shippedRules(t *testing.T) []rulefmt.Rule {
	t.Helper()
	raw, err := os.ReadFile(repoFile("deploy", "monitoring", "alerts.yaml"))
	require.NoError(t, err)
	var pr struct {
		Kind string         `json:"kind"`
		Spec map[string]any `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &pr))
	require.Equal(t, "PrometheusRule", pr.Kind)
	spec, err := yaml.Marshal(pr.Spec)
	require.NoError(t, err)
	groups, errs := rulefmt.Parse(spec, false, model.LegacyValidation)
	require.Empty(t, errs, "the rules parse")
	var out []rulefmt.Rule
	for _, g := range groups.Groups {
		for _, n := range g.Rules {
			require.NotEmpty(t, n.Alert, "group %s holds alerts only", g.Name)
			out = append(out, n)
		}
	}
	require.NotEmpty(t, out)
	return out
}

func TestEveryAlertFiresOnItsSymptomAndOnlyThen(t *testing.T) {
	shipped := map[string]rulefmt.Rule{}
	for _, r := range shippedRules(t) {
		require.NotContains(t, shipped, r.Alert, "alert names are unique")
		shipped[r.Alert] = r
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, c := range cases {
		require.Contains(t, shipped, c.alert, "case %q tests an alert the PrometheusRule ships", c.name)
		if len(c.firing) > 0 {
			fires[c.alert] = true
		} else {
			quiet[c.alert] = true
		}
	}
	for name := range shipped {
		require.True(t, fires[name], "%s has a case where it fires", name)
		require.True(t, quiet[name], "%s has a case where it stays quiet", name)
	}

	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	t.Cleanup(func() { require.NoError(t, engine.Close()) })
	for _, c := range cases {
		t.Run(c.alert+"/"+c.name, func(t *testing.T) {
			r := shipped[c.alert]
			want := make([]map[string]string, 0, len(c.firing))
			for _, f := range c.firing {
				w := maps.Clone(f)
				maps.Copy(w, r.Labels)
				w[labels.AlertName] = r.Alert
				want = append(want, w)
			}
			require.ElementsMatch(t, want, firingAt(t, engine, r, c.series, c.at), "firing at %s", c.at)
		})
	}
}

// runbookURL is where every alert's runbook_url points: a heading of RUNBOOK.md.
const runbookURL = "https://github.com/nudgeflow/nudgeflow/blob/main/deploy/monitoring/RUNBOOK.md#"

// Each alert says what it is, how bad, and where its runbook section is.
func TestEveryAlertHasSeverityTextAndRunbook(t *testing.T) {
	raw, err := os.ReadFile(repoFile("deploy", "monitoring", "RUNBOOK.md"))
	require.NoError(t, err)
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#{2,3} (.+)$`).FindAllStringSubmatch(string(raw), -1) {
		anchors[githubAnchor(m[1])] = true
	}
	for _, r := range shippedRules(t) {
		require.Contains(t, []string{"critical", "warning", "info"}, r.Labels["severity"], "%s's severity", r.Alert)
		for _, a := range []string{"summary", "description", "runbook_url"} {
			require.NotEmpty(t, r.Annotations[a], "%s's %s", r.Alert, a)
		}
		url := r.Annotations["runbook_url"]
		require.True(t, strings.HasPrefix(url, runbookURL), "%s's runbook_url %s is a section of deploy/monitoring/RUNBOOK.md", r.Alert, url)
		anchor := strings.TrimPrefix(url, runbookURL)
		require.Equal(t, strings.ToLower(r.Alert), anchor, "%s's runbook section is named after it", r.Alert)
		require.True(t, anchors[anchor], "RUNBOOK.md has a section #%s", anchor)
	}
}

// githubAnchor is the id GitHub gives a Markdown heading.
func githubAnchor(heading string) string {
	s := strings.ToLower(strings.TrimSpace(heading))
	s = regexp.MustCompile(`[^a-z0-9 _-]`).ReplaceAllString(s, "")
	return strings.ReplaceAll(s, " ", "-")
}

// The selectors name what nudgeflow deploys: every webhook of deploy/webhooks, both
// Deployments, both metrics Services' jobs, and only nudgeflow_* metrics it
// declares. A webhook renamed or added there without the alerts following fails here.
func TestAlertSelectorsMatchWhatNudgeflowDeploys(t *testing.T) {
	webhooks := webhookNames(t)
	require.Len(t, webhooks, 4, "deploy/webhooks: nudge-pipelinerun, build-routing, vchangegroup, vnudgeconfig")
	want := map[string][]string{
		"name":       webhooks,
		"deployment": {"nudgeflow-bridge", "nudgeflow-worker"},
		// The job label a ServiceMonitor gives is the Service's name
		// (deploy/monitoring/servicemonitors.yaml); a job regex must match the
		// bridge's and the worker's. The receiver's series are nudgeflow's own
		// names, selected without a job.
		"job": {"nudgeflow-bridge-metrics", "nudgeflow-worker-metrics"},
	}
	for _, r := range shippedRules(t) {
		expr, err := parser.ParseExpr(r.Expr)
		require.NoError(t, err)
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			if strings.HasPrefix(vs.Name, "nudgeflow_") {
				require.Contains(t, metrics.Declared(), vs.Name, "%s queries a metric nudgeflow declares", r.Alert)
			}
			for _, m := range vs.LabelMatchers {
				values, ok := want[m.Name]
				if !ok || m.Name == "name" && !strings.HasPrefix(vs.Name, "apiserver_admission_webhook_") {
					continue
				}
				for _, v := range values {
					require.True(t, m.Matches(v), "%s: %s selects %s=%q", r.Alert, vs, m.Name, v)
				}
			}
			return nil
		})
	}
}

// webhookNames are the names of the admission webhooks deploy/webhooks registers:
// the name label of the API server's admission metrics.
func webhookNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(repoFile("deploy", "webhooks", "*.yaml"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			var obj struct {
				Kind     string `json:"kind"`
				Webhooks []struct {
					Name string `json:"name"`
				} `json:"webhooks"`
			}
			err := dec.Decode(&obj)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, f)
			if strings.HasSuffix(obj.Kind, "WebhookConfiguration") {
				for _, w := range obj.Webhooks {
					names = append(names, w.Name)
				}
			}
		}
	}
	slices.Sort(names)
	return names
}
