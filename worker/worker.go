// Package worker hosts nudgeflow's workflows and activities on a Temporal task queue.
package worker

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	"github.com/nudgeflow/nudgeflow/activities/changegroupcr"
	"github.com/nudgeflow/nudgeflow/activities/changegrouppr"
	"github.com/nudgeflow/nudgeflow/activities/grouproute"
	"github.com/nudgeflow/nudgeflow/activities/handback"
	"github.com/nudgeflow/nudgeflow/activities/nudgewrite"
	prgroupacts "github.com/nudgeflow/nudgeflow/activities/prgroup"
	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/activities/writerchoice"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/autogroups"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
	"github.com/nudgeflow/nudgeflow/workflows/changegroup"
	"github.com/nudgeflow/nudgeflow/workflows/nudge"
	"github.com/nudgeflow/nudgeflow/workflows/prgroup"
	"github.com/nudgeflow/nudgeflow/workflows/validatednudge"
)

// DefaultTaskQueue is the task queue of nudgeflow's worker and bridge.
const DefaultTaskQueue = "nudgeflow"

// DefaultNamespace is the Temporal namespace nudgeflow uses unless told otherwise.
const DefaultNamespace = "nudgeflow"

// Deps is what activities need: clients of the outside world. Secrets are read by
// activities when they need them, never passed through workflows.
type Deps struct {
	// Kube reads Components, Secrets and ConfigMaps and writes CR status and PipelineRuns.
	Kube ctrlclient.Client
	// Temporal lets activities signal other workflows.
	Temporal client.Client
	// PullRequest configures the forge activities (bot identity, App Secret).
	PullRequest changegrouppr.Config
	// OperatorNamespace is nudgeflow's own namespace; Renovate runs get the trusted
	// CA bundle of a ConfigMap there labelled
	// config.openshift.io/inject-trusted-cabundle=true, and the cluster admin's
	// repository bindings (internal/ownership) in ConfigMap
	// nudgeflow-repository-bindings. Empty: neither.
	OperatorNamespace string
	// Ownership, when set, replaces the checker made of Kube and OperatorNamespace
	// (tests).
	Ownership *ownership.Checker
	// StandInForge says which forge hosts only stand-in Renovate runs go to (test
	// worlds, whose runs there end by a status a test writes and push nothing): a
	// run's delivery there is what its log says (renovate.Activities.StandInForge).
	// Nil in a deployment: there the forge decides.
	StandInForge func(host string) bool
}

// Options tune the worker.
type Options struct {
	TaskQueue string
	// FailWorkflowOnPanic turns a non-deterministic change into a failed workflow
	// instead of a blocked task; tests set it.
	FailWorkflowOnPanic bool
	// Tuning sizes the worker; zero fields take the defaults below.
	Tuning Tuning
	// ImmediateWriter is who writes an immediate nudge's pull request where no
	// NudgeConfig says (the worker's --immediate-writer); empty: auto, nudgeflow's
	// direct writer where it does what the tenant's configuration asks.
	ImmediateWriter konfluxv1alpha1.ImmediateWriter
}

// Tuning sizes a worker: how many workflows it keeps in memory, how much work it
// runs at once, how many long polls it keeps open.
type Tuning struct {
	// StickyCacheSize is how many workflow executions the process keeps in memory
	// between their tasks (process-global: the SDK's sticky cache is shared by every
	// worker of the process and sized when the first one starts).
	StickyCacheSize int
	// MaxConcurrentActivities bounds the activities running at once.
	MaxConcurrentActivities int
	// MaxConcurrentWorkflowTasks bounds the workflow tasks running at once.
	MaxConcurrentWorkflowTasks int
	// WorkflowTaskPollers and ActivityTaskPollers are the long polls kept open on
	// the task queue for each kind of task.
	WorkflowTaskPollers int
	ActivityTaskPollers int
	// StopTimeout is how long a stopping worker lets the activities it runs finish
	// before it cancels them (the SDK's WorkerStopTimeout). Unlike the fields above,
	// zero is kept: cancel at once, the SDK's default, which tests and benchmarks
	// want; the worker command's --worker-stop-timeout defaults to
	// DefaultStopTimeout.
	StopTimeout time.Duration
}

// The defaults, chosen for nudgeflow's load: many long-lived, mostly idle
// workflows (a ChangeGroup waits hours or days for builds; a validated edge waits for
// its Snapshot) and I/O-bound activities (the Kubernetes API and the forge).
//
// StickyCacheSize: a cached execution costs its goroutines and its state, 55–70 KB
// of worker RSS for an idle ChangeGroup (`nudgeflow-dev bench`, docs/performance.md);
// one that is not cached is rebuilt by replaying its history when its next task
// comes, a few milliseconds of CPU and one history read for an idle group's short
// history. An idle group needs no memory between its events, so the cache only has
// to hold the groups busy at the same time. With 10,000 open groups, 2,000 kept the
// worker at 199 MB RSS (137 MB above its start), however many more groups open;
// the SDK's default, 10,000, took it to 617 MB, growing with the open groups.
//
// MaxConcurrentActivities: activities wait on the API server and the forge. 100 at
// once keeps one worker within GitHub's secondary rate limit (no more than 100
// concurrent requests, REST and GraphQL together) and bounds the requests it has in
// flight at the API server; the SDK's default is 1,000.
//
// MaxConcurrentWorkflowTasks: workflow tasks are CPU-bound (a cache miss also waits
// for its history); 64 is far more than the cores a worker has, yet bounds the
// histories held in memory at once by cache misses; the SDK's default is 1,000.
//
// Pollers: one long poll returns one task, so a burst (a resync starting thousands
// of groups) is dispatched at about pollers per round trip to the frontend. In
// `nudgeflow-dev bench` (300 new groups, a CPU-bound dev server on a loaded machine) 8
// each started 6.7–9.5 groups/s, 2 each 6.0–6.7: a modest gain, within the noise.
// 4 each, twice the SDK's 2, hold 8 polls open per worker.
//
// StopTimeout: on a rollout or a node drain the kubelet sends SIGTERM, then SIGKILL
// terminationGracePeriodSeconds later (90 s in deploy/base/worker.yaml). The
// worker stops polling at once and lets what runs finish for 80 s, leaving 10 s to
// close its connections before the kill. An activity still running then is
// cancelled through its context (forge and API calls abort) and Temporal retries
// it on another worker after its heartbeat timeout (the PR sync: a minute) or its
// start-to-close timeout; without a stop timeout every rollout cancelled every
// push in flight. Keep the flag below the grace period when changing either.
const (
	DefaultStopTimeout = 80 * time.Second
)

const (
	DefaultStickyCacheSize            = 2000
	DefaultMaxConcurrentActivities    = 100
	defaultMaxConcurrentWorkflowTasks = 64
	defaultWorkflowTaskPollers        = 4
	defaultActivityTaskPollers        = 4
)

// WithDefaults fills the zero fields.
func (t Tuning) WithDefaults() Tuning {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&t.StickyCacheSize, DefaultStickyCacheSize)
	def(&t.MaxConcurrentActivities, DefaultMaxConcurrentActivities)
	def(&t.MaxConcurrentWorkflowTasks, defaultMaxConcurrentWorkflowTasks)
	def(&t.WorkflowTaskPollers, defaultWorkflowTaskPollers)
	def(&t.ActivityTaskPollers, defaultActivityTaskPollers)
	return t
}

// Validate rejects what the SDK would panic on: it alternates workflow-task polls
// between the sticky and the normal queue, so one poller or one slot cannot work.
func (t Tuning) Validate() error {
	t = t.WithDefaults()
	if t.WorkflowTaskPollers < 2 {
		return fmt.Errorf("workflow task pollers must be at least 2, got %d", t.WorkflowTaskPollers)
	}
	if t.MaxConcurrentWorkflowTasks < 2 {
		return fmt.Errorf("concurrent workflow tasks must be at least 2, got %d", t.MaxConcurrentWorkflowTasks)
	}
	return nil
}

// New returns a worker with every workflow and activity registered; Start or Run it.
// It sizes the process's sticky cache (opts.Tuning), which applies when no worker of
// the process runs yet.
func New(c client.Client, deps Deps, opts Options) sdkworker.Worker {
	if opts.TaskQueue == "" {
		opts.TaskQueue = DefaultTaskQueue
	}
	sdkworker.SetStickyWorkflowCacheSize(opts.Tuning.WithDefaults().StickyCacheSize)
	w := sdkworker.New(c, opts.TaskQueue, opts.sdkOptions())
	register(w, deps, opts)
	return w
}

// sdkOptions are the SDK's worker options for opts.
func (opts Options) sdkOptions() sdkworker.Options {
	t := opts.Tuning.WithDefaults()
	wo := sdkworker.Options{
		MaxConcurrentActivityExecutionSize:     t.MaxConcurrentActivities,
		MaxConcurrentWorkflowTaskExecutionSize: t.MaxConcurrentWorkflowTasks,
		MaxConcurrentWorkflowTaskPollers:       t.WorkflowTaskPollers,
		MaxConcurrentActivityTaskPollers:       t.ActivityTaskPollers,
		WorkerStopTimeout:                      t.StopTimeout,
	}
	if opts.FailWorkflowOnPanic {
		wo.WorkflowPanicPolicy = sdkworker.FailWorkflow
	}
	return wo
}

// register adds every workflow (under the stable names stored histories carry)
// and every feature's activities: the one place that says what the worker runs.
func register(r sdkworker.Registry, deps Deps, opts Options) {
	for _, w := range []struct {
		fn   any
		name string
	}{
		{nudge.Workflow, nudgeapi.WorkflowName},
		{validatednudge.Workflow, validatednudge.WorkflowName},
		{changegroup.Workflow, changegroupapi.WorkflowName},
		{prgroup.Workflow, prgroup.WorkflowName}, // PR groups (ADR 29)
	} {
		r.RegisterWorkflowWithOptions(w.fn, workflow.RegisterOptions{Name: w.name})
	}
	// Every workflow verifies a build when it enters (Temporal is reachable by more
	// than nudgeflow: a signal may carry a digest nobody built).
	(&buildcheck.Activities{Kube: deps.Kube}).Register(r)
	owner := ownershipChecker(deps)
	prConfig := deps.PullRequest
	prConfig.Ownership = owner
	(&changegroupcr.Activities{Kube: deps.Kube, Ownership: owner}).Register(r)
	batches := &autogroups.Opener{Kube: deps.Kube, Live: deps.Kube}
	(&handback.Activities{Kube: deps.Kube, Temporal: deps.Temporal, Batches: batches}).Register(r)
	(&grouproute.Activities{Temporal: deps.Temporal, Batches: batches}).Register(r)
	changegrouppr.New(deps.Kube, prConfig).Register(r)
	// The Renovate activities the Nudge and ValidatedNudge workflows run.
	nudges := renovate.New(deps.Kube, deps.OperatorNamespace)
	nudges.GitHubApp, nudges.Transport, nudges.Ownership, nudges.AppTokens = prConfig.AppSecret, prConfig.Transport, owner, prConfig.AppTokens
	nudges.StandInForge = deps.StandInForge
	r.RegisterActivity(nudges)
	// The direct writer of immediate nudges: Renovate's pull request, written
	// through the forge's API with the launch's reading of a nudge.
	nudgewrite.New(deps.Kube, changegrouppr.New(deps.Kube, prConfig), nudges).Register(r)
	// Which writer writes an immediate nudge: nudgeflow's or a Renovate run.
	(&writerchoice.Activities{Kube: deps.Kube, Default: opts.ImmediateWriter}).Register(r)
	(&prgroupacts.Activities{Kube: deps.Kube, PR: changegrouppr.New(deps.Kube, prConfig)}).Register(r)
}
