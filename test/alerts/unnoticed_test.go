package alerts_test

import (
	"fmt"
	"strings"
	"time"
)

// Cases of the nudgeflow.unnoticed group (failures nudgeflow used to swallow or no
// other alert saw) and of NudgeflowWebhookCallErrors at low write volume; they run
// with the others in TestEveryAlertFiresOnItsSymptomAndOnlyThen.
func init() { cases = append(cases, unnoticedCases...) }

var unnoticedCases = []alertCase{
	{alert: "NudgeflowWebhookCallErrors", name: "a refused ChangeGroup write every 20 minutes for an hour (rate > 0 for 10m never fired on it)",
		series: `
			apiserver_admission_webhook_rejection_count{` + apiserver + `, name="vchangegroup.nudgeflow.konflux-ci.dev", type="validating", operation="UPDATE", error_type="calling_webhook_error", rejection_code="0"} 1x5 2x20 3x20 4x20`,
		at:     65 * time.Minute,
		firing: []map[string]string{{"name": "vchangegroup.nudgeflow.konflux-ci.dev"}}},
	{alert: "NudgeflowWebhookCallErrors", name: "one burst of refused writes during a rollout, then none",
		series: `
			apiserver_admission_webhook_rejection_count{` + apiserver + `, name="vnudgeconfig.konflux-ci.dev", type="validating", operation="UPDATE", error_type="calling_webhook_error", rejection_code="0"} 0x10 5 10 10x50`,
		at: 60 * time.Minute},

	{alert: "NudgeflowAdmissionFailOpen", name: "the hold could not read a component's edges",
		series: `
			nudgeflow_admission_fail_open_total{` + bridgeJob + `, webhook="build-routing", reason="edges-unread"} 0x10 1x10
			nudgeflow_admission_fail_open_total{` + bridgeJob + `, webhook="nudge-pipelinerun", reason="changegroups-unread"} 0x20`,
		at:     15 * time.Minute,
		firing: []map[string]string{{"webhook": "build-routing", "reason": "edges-unread"}}},
	{alert: "NudgeflowAdmissionFailOpen", name: "a fail-open before the new bridge's first scrape (a series first seen at 1)",
		series: `
			nudgeflow_admission_fail_open_total{` + bridgeJob + `, webhook="nudge-pipelinerun", reason="changegroups-unread"} _x10 1x10`,
		at:     12 * time.Minute,
		firing: []map[string]string{{"webhook": "nudge-pipelinerun", "reason": "changegroups-unread"}}},
	{alert: "NudgeflowAdmissionFailOpen", name: "fail-opens 25 minutes ago, none since; every other pair at 0",
		series: `
			nudgeflow_admission_fail_open_total{` + bridgeJob + `, webhook="nudge-pipelinerun", reason="gating-unread"} 0x5 2x30
			nudgeflow_admission_fail_open_total{` + bridgeJob + `, webhook="build-routing", reason="edges-unread"} 0x35`,
		at: 30 * time.Minute},

	{alert: "NudgeflowChangeGroupWorkflowClosed", name: "the leader found a group's workflow closed under it; the other replica reports 0",
		series: `
			nudgeflow_changegroup_workflow_closed{` + bridgeJob + `} 1x20
			nudgeflow_changegroup_workflow_closed{job="nudgeflow-bridge-metrics", namespace="nudgeflow-system", instance="10.0.0.9:8080"} 0x20`,
		at:     15 * time.Minute,
		firing: []map[string]string{{}}},
	{alert: "NudgeflowChangeGroupWorkflowClosed", name: "a group marked for 2 minutes while its final status reached the cache",
		series: `
			nudgeflow_changegroup_workflow_closed{` + bridgeJob + `} 0x5 1x2 0x20`,
		at: 15 * time.Minute},

	{alert: "NudgeflowWorkflowTaskBacklog", name: "1 in 4 workflow tasks waits 2-5 s",
		series: sdkLatency("temporal_workflow_task_schedule_to_start_latency_seconds", map[string]float64{"1": 50, "2": 70, "5": 95}),
		at:     20 * time.Minute,
		firing: []map[string]string{{"task_queue": "nudgeflow"}}},
	{alert: "NudgeflowWorkflowTaskBacklog", name: "every workflow task starts within 10 ms",
		series: sdkLatency("temporal_workflow_task_schedule_to_start_latency_seconds", map[string]float64{"0.001": 60, "0.005": 95}),
		at:     20 * time.Minute},
	{alert: "NudgeflowWorkflowTaskBacklog", name: "slow, but 5 tasks in 10 minutes (a worker restart's replays)",
		series: sdkLatencyAt("temporal_workflow_task_schedule_to_start_latency_seconds", 0.5, map[string]float64{"0.001": 0}),
		at:     20 * time.Minute},

	{alert: "NudgeflowActivityBacklog", name: "every activity waits more than 10 s for a slot",
		series: sdkLatency("temporal_activity_schedule_to_start_latency_seconds", map[string]float64{"10": 0}),
		at:     25 * time.Minute,
		firing: []map[string]string{{"task_queue": "nudgeflow"}}},
	{alert: "NudgeflowActivityBacklog", name: "activities start within 0.2 s; a few wait 1-2 s",
		series: sdkLatency("temporal_activity_schedule_to_start_latency_seconds", map[string]float64{"0.05": 80, "0.2": 95, "1": 97, "2": 100}),
		at:     25 * time.Minute},

	{alert: "NudgeflowWorkerSlotsExhausted", name: "no free activity slot in 20 minutes",
		series: `
			temporal_worker_task_slots_available{` + temporal + `, worker_type="ActivityWorker"} 0x30
			temporal_worker_task_slots_available{` + temporal + `, worker_type="WorkflowWorker"} 60x30`,
		at:     20 * time.Minute,
		firing: []map[string]string{{"instance": "10.0.0.8:8081", "task_queue": "nudgeflow", "worker_type": "ActivityWorker"}}},
	{alert: "NudgeflowWorkerSlotsExhausted", name: "busy, but a slot frees every 9 minutes; local activities (not selected) at 0",
		series: `
			temporal_worker_task_slots_available{` + temporal + `, worker_type="ActivityWorker"} 0x8 3 0x8 2 0x8 1 0x5
			temporal_worker_task_slots_available{` + temporal + `, worker_type="LocalActivityWorker"} 0x35`,
		at: 25 * time.Minute},

	{alert: "NudgeflowReceiverRefusing", name: "a third of the deliveries fail their signature (401)",
		series: `
			nudgeflow_forge_webhook_duration_seconds_count{` + receiverJob + `, event="pull_request", code="202"} 0+10x40
			nudgeflow_forge_webhook_duration_seconds_count{` + receiverJob + `, event="pull_request", code="401"} 0+5x40`,
		at:     35 * time.Minute,
		firing: []map[string]string{{"code": "401"}}},
	{alert: "NudgeflowReceiverRefusing", name: "the receiver has no bound secrets (503); the odd probe (401) is no page",
		series: `
			nudgeflow_forge_webhook_duration_seconds_count{` + receiverJob + `, event="push", code="202"} 0+10x40
			nudgeflow_forge_webhook_duration_seconds_count{` + receiverJob + `, event="push", code="503"} 0+3x40
			nudgeflow_forge_webhook_duration_seconds_count{` + receiverJob + `, event="other", code="401"} 0+0.2x40`,
		at:     35 * time.Minute,
		firing: []map[string]string{{"code": "503"}}},
	{alert: "NudgeflowReceiverRefusing", name: "every delivery refused, but 4 in 15 minutes",
		series: `
			nudgeflow_forge_webhook_duration_seconds_count{` + receiverJob + `, event="pull_request", code="401"} 0+0.25x40`,
		at: 35 * time.Minute},

	{alert: "NudgeflowNoLeader", name: "two bridge replicas running, neither leads",
		series: `
			leader_election_master_status{` + bridgeJob + `, name="nudgeflow-bridge"} 0x20
			leader_election_master_status{job="nudgeflow-bridge-metrics", namespace="nudgeflow-system", instance="10.0.0.9:8080", name="nudgeflow-bridge"} 0x20`,
		at:     10 * time.Minute,
		firing: []map[string]string{{}}},
	{alert: "NudgeflowNoLeader", name: "a rolling update hands the lease over within 2 minutes",
		series: `
			leader_election_master_status{` + bridgeJob + `, name="nudgeflow-bridge"} 1x5 0x2
			leader_election_master_status{job="nudgeflow-bridge-metrics", namespace="nudgeflow-system", instance="10.0.0.9:8080", name="nudgeflow-bridge"} 0x7 1x20`,
		at: 20 * time.Minute},
	{alert: "NudgeflowNoLeader", name: "one leader, one standby; another operator's lease unheld",
		series: `
			leader_election_master_status{` + bridgeJob + `, name="nudgeflow-bridge"} 1x20
			leader_election_master_status{job="nudgeflow-bridge-metrics", namespace="nudgeflow-system", instance="10.0.0.9:8080", name="nudgeflow-bridge"} 0x20
			leader_election_master_status{job="other-operator", name="other-operator"} 0x20`,
		at: 15 * time.Minute},
}

// sdkBuckets are the upper bounds of the Temporal SDK's timer histograms as the
// worker exports them (tally's Prometheus reporter, DefaultHistogramBuckets: 1 ms
// to 10 s).
var sdkBuckets = []string{"0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "+Inf"}

// sdkLatency is a Temporal SDK timer histogram of the worker at 100 tasks a minute:
// under[le] of them at most le seconds (cumulative; a bound not given takes the
// previous one's count, +Inf is 100).
func sdkLatency(name string, under map[string]float64) string {
	return sdkLatencyAt(name, 100, under)
}

// sdkLatencyAt is sdkLatency at perMinute tasks a minute (under is per 100).
func sdkLatencyAt(name string, perMinute float64, under map[string]float64) string {
	var b strings.Builder
	n := 0.0
	for _, le := range sdkBuckets {
		if v, ok := under[le]; ok {
			n = v
		}
		if le == "+Inf" {
			n = 100
		}
		fmt.Fprintf(&b, "\n%s_bucket{%s, workflow_type=\"ChangeGroup\", le=%q} 0+%gx40", name, temporal, le, n*perMinute/100)
	}
	fmt.Fprintf(&b, "\n%s_count{%s, workflow_type=\"ChangeGroup\"} 0+%gx40", name, temporal, perMinute)
	return b.String()
}
