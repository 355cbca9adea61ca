// Package nudges registers issue 5's workflows and activities on a worker: the
// Nudge and ValidatedNudge workflows and the Renovate activities.
package nudges

import (
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/workflows/nudge"
	"github.com/nudgeflow/nudgeflow/workflows/validatednudge"
)

// Register adds the workflows (under their stable names) and the activities;
// operatorNamespace is where the Renovate activities look for the trusted CA bundle.
func Register(r sdkworker.Registry, kube ctrlclient.Client, operatorNamespace string) {
	r.RegisterWorkflowWithOptions(nudge.Workflow, workflow.RegisterOptions{Name: nudge.WorkflowName})
	r.RegisterWorkflowWithOptions(validatednudge.Workflow, workflow.RegisterOptions{Name: validatednudge.WorkflowName})
	r.RegisterActivity(renovate.New(kube, operatorNamespace))
}
