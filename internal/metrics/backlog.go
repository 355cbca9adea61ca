package metrics

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Names of the backlog gauges: how long the oldest piece of work has been waiting,
// so that stuck work shows (deploy/monitoring/alerts.yaml alerts on them). The
// bridge computes them from its informer cache on each scrape.
//
// None carries a namespace label: a Konflux cluster has thousands of tenant
// namespaces, and an age is only worth a page when it is the oldest one anywhere.
// Which group or build it is, the runbook's one-liners find
// (deploy/monitoring/RUNBOOK.md).
const (
	// ChangeGroupOldestWaiting is the age (since creation) of the oldest ChangeGroup
	// in each phase that is not final (Initialized, Waiting, Ready), 0 when none. By
	// phase, three series: a group waiting for its builds for days is a tenant's
	// business, one released (Ready) and not merged for as long is a person's; both
	// read differently from a group that never got going.
	ChangeGroupOldestWaiting = "nudgeflow_changegroup_oldest_waiting_seconds"
	// ChangeGroupOldestOverdue is how long the most overdue ChangeGroup still
	// collecting (Initialized, Waiting) has been past its spec.timeout, 0 when none.
	// The group's workflow ends a collecting group at its timeout: one overdue for
	// minutes is one nudgeflow lost track of (workflow not running, status not
	// written). A Ready group has released CI and follows its PR, timeout or not.
	ChangeGroupOldestOverdue = "nudgeflow_changegroup_oldest_overdue_seconds"
	// BuildOldestUnrouted is how long the oldest finished build PipelineRun still held
	// under the bridge's build-routing finalizer has been finished (or deleted), 0
	// when none. A running build is held by design; a finished one is a build
	// nudgeflow has not routed yet: its nudges have not started and Tekton's pruner
	// cannot delete it.
	BuildOldestUnrouted = "nudgeflow_build_oldest_unrouted_seconds"
	// ChangeGroupWorkflowClosed counts the ChangeGroups whose status is not final
	// (no status, Initialized, Waiting, Ready) although the bridge found their
	// workflow closed (a signal-with-start refused: the ID is never reused). Such a
	// group stays in its phase for good: nothing writes its status any more, and
	// its CR keeps intercepting nudges that the bridge then hands back one by one.
	// Only the leader reconciles and delivers, so only it counts (others report 0).
	ChangeGroupWorkflowClosed = "nudgeflow_changegroup_workflow_closed"
)

// changeGroupWaitingPhases are the phases ChangeGroupOldestWaiting always reports.
var changeGroupWaitingPhases = []string{"Initialized", "Waiting", "Ready"}

// Backlog is what the backlog gauges report at one scrape.
type Backlog struct {
	// OldestWaiting is the age of the oldest group by phase (ChangeGroupWaitingPhases).
	OldestWaiting map[string]time.Duration
	// OldestOverdue is the longest time a group has been past its timeout.
	OldestOverdue time.Duration
	// OldestUnrouted is the longest time a finished build has stayed held.
	OldestUnrouted time.Duration
	// WorkflowClosed counts the groups not final whose workflow is closed.
	WorkflowClosed int
}

// BacklogReader measures the backlog now.
type BacklogReader func(ctx context.Context) (Backlog, error)

var (
	oldestWaitingDesc = prometheus.NewDesc(ChangeGroupOldestWaiting,
		"Age in seconds of the oldest ChangeGroup in each phase that is not final (0: none), from the bridge's cache.", []string{"phase"}, nil)
	oldestOverdueDesc = prometheus.NewDesc(ChangeGroupOldestOverdue,
		"Seconds the most overdue ChangeGroup still collecting (Initialized, Waiting) has been past its spec.timeout (0: none).", nil, nil)
	oldestUnroutedDesc = prometheus.NewDesc(BuildOldestUnrouted,
		"Seconds since the oldest finished build PipelineRun still held under the build-routing finalizer finished (0: none).", nil, nil)
	workflowClosedDesc = prometheus.NewDesc(ChangeGroupWorkflowClosed,
		"ChangeGroups whose status is not final although the bridge found their workflow closed (counted by the leader).", nil, nil)
	backlogReader atomic.Pointer[BacklogReader]
)

func init() { Registry.MustRegister(backlogCollector{}) }

// MeasureBacklogWith makes the backlog gauges report what read measures on each
// scrape. Until it is called they report nothing (the worker).
func MeasureBacklogWith(read BacklogReader) { backlogReader.Store(&read) }

type backlogCollector struct{}

func (backlogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- oldestWaitingDesc
	ch <- oldestOverdueDesc
	ch <- oldestUnroutedDesc
	ch <- workflowClosedDesc
}

func (backlogCollector) Collect(ch chan<- prometheus.Metric) {
	b, ok := readForScrape(&backlogReader, "backlog")
	if !ok {
		return
	}
	for _, p := range changeGroupWaitingPhases {
		ch <- prometheus.MustNewConstMetric(oldestWaitingDesc, prometheus.GaugeValue, b.OldestWaiting[p].Seconds(), p)
	}
	ch <- prometheus.MustNewConstMetric(oldestOverdueDesc, prometheus.GaugeValue, b.OldestOverdue.Seconds())
	ch <- prometheus.MustNewConstMetric(oldestUnroutedDesc, prometheus.GaugeValue, b.OldestUnrouted.Seconds())
	ch <- prometheus.MustNewConstMetric(workflowClosedDesc, prometheus.GaugeValue, float64(b.WorkflowClosed))
}
