// Package nudges registers nudging on a worker: the Nudge workflow (one build
// nudged into one target now), the ValidatedNudge workflow (a nudge that waits for
// its gating ComponentGroup's tests) and the Renovate activities both run.
package nudges

import (
	"net/http"

	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/workflows/nudge"
	"github.com/nudgeflow/nudgeflow/workflows/validatednudge"
)

// Register adds the workflows (under their stable names) and the activities;
// operatorNamespace is where the Renovate activities look for the trusted CA bundle,
// githubApp the GitHub App Secret (zero: build-service's) whose repository-scoped
// tokens Renovate pushes with on GitHub, transport what makes the App's calls.
func Register(r sdkworker.Registry, kube ctrlclient.Client, operatorNamespace string, githubApp types.NamespacedName, transport http.RoundTripper) {
	r.RegisterWorkflowWithOptions(nudge.Workflow, workflow.RegisterOptions{Name: nudge.WorkflowName})
	r.RegisterWorkflowWithOptions(validatednudge.Workflow, workflow.RegisterOptions{Name: validatednudge.WorkflowName})
	a := renovate.New(kube, operatorNamespace)
	a.GitHubApp, a.Transport = githubApp, transport
	r.RegisterActivity(a)
}
