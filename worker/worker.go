// Package worker hosts nudgeflow's workflows and activities on a Temporal task queue.
package worker

import (
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/changegroupcr"
	"github.com/nudgeflow/nudgeflow/activities/handback"
	prgroupacts "github.com/nudgeflow/nudgeflow/activities/prgroup"
	"github.com/nudgeflow/nudgeflow/activities/pullrequest"
	"github.com/nudgeflow/nudgeflow/internal/nudges"
	"github.com/nudgeflow/nudgeflow/workflows/changegroup"
	"github.com/nudgeflow/nudgeflow/workflows/prgroup"
)

// DefaultTaskQueue is the task queue of nudgeflow's worker and bridge.
const DefaultTaskQueue = "nudgeflow"

// Deps is what activities need: clients of the outside world. Secrets are read by
// activities when they need them, never passed through workflows.
type Deps struct {
	// Kube reads Components, Secrets and ConfigMaps and writes CR status and PipelineRuns.
	Kube ctrlclient.Client
	// Temporal lets activities signal other workflows.
	Temporal client.Client
	// PullRequest configures the forge activities (bot identity, App Secret).
	PullRequest pullrequest.Config
	// OperatorNamespace is nudgeflow's own namespace; Renovate runs get the trusted
	// CA bundle of a ConfigMap there labelled
	// config.openshift.io/inject-trusted-cabundle=true. Empty: none.
	OperatorNamespace string
}

// Options tune the worker.
type Options struct {
	TaskQueue string
	// FailWorkflowOnPanic turns a non-deterministic change into a failed workflow
	// instead of a blocked task; tests set it.
	FailWorkflowOnPanic bool
}

// New returns a worker with every workflow and activity registered; Start or Run it.
func New(c client.Client, deps Deps, opts Options) sdkworker.Worker {
	if opts.TaskQueue == "" {
		opts.TaskQueue = DefaultTaskQueue
	}
	wo := sdkworker.Options{}
	if opts.FailWorkflowOnPanic {
		wo.WorkflowPanicPolicy = sdkworker.FailWorkflow
	}
	w := sdkworker.New(c, opts.TaskQueue, wo)
	register(w, deps)
	return w
}

// register adds each feature's workflows and activities, one line per feature.
func register(r sdkworker.Registry, deps Deps) {
	r.RegisterWorkflowWithOptions(changegroup.Workflow, workflow.RegisterOptions{Name: changegroup.WorkflowName})
	(&changegroupcr.Activities{Kube: deps.Kube}).Register(r)
	(&handback.Activities{Kube: deps.Kube, Temporal: deps.Temporal}).Register(r)
	pullrequest.New(deps.Kube, deps.PullRequest).Register(r)
	nudges.Register(r, deps.Kube, deps.OperatorNamespace)
	// PR groups (ADR 29).
	r.RegisterWorkflowWithOptions(prgroup.Workflow, workflow.RegisterOptions{Name: prgroup.WorkflowName})
	(&prgroupacts.Activities{Kube: deps.Kube, PR: pullrequest.New(deps.Kube, deps.PullRequest)}).Register(r)
}
