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

	ghforge "github.com/nudgeflow/nudgeflow/internal/forge/github"
	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
	"github.com/nudgeflow/nudgeflow/workflows/nudge"
	"github.com/nudgeflow/nudgeflow/workflows/validatednudge"
)

// Options configure the Renovate activities.
type Options struct {
	// OperatorNamespace is where they look for the trusted CA bundle.
	OperatorNamespace string
	// GitHubApp is the GitHub App Secret (zero: build-service's) whose
	// repository-scoped tokens Renovate pushes with on GitHub; Transport makes the
	// App's calls.
	GitHubApp types.NamespacedName
	Transport http.RoundTripper
	// Ownership checks that a namespace owns what it nudges (nil: the activities'
	// own checker); AppTokens caches the App's tokens (nil: the process's).
	Ownership *ownership.Checker
	AppTokens *ghforge.AppTokens
	// StandInForge: see renovate.Activities.StandInForge (test worlds).
	StandInForge func(host string) bool
}

// Register adds the workflows (under their stable names) and the activities.
func Register(r sdkworker.Registry, kube ctrlclient.Client, o Options) {
	r.RegisterWorkflowWithOptions(nudge.Workflow, workflow.RegisterOptions{Name: nudge.WorkflowName})
	r.RegisterWorkflowWithOptions(validatednudge.Workflow, workflow.RegisterOptions{Name: validatednudge.WorkflowName})
	a := renovate.New(kube, o.OperatorNamespace)
	a.GitHubApp, a.Transport, a.Ownership, a.AppTokens = o.GitHubApp, o.Transport, o.Ownership, o.AppTokens
	a.StandInForge = o.StandInForge
	r.RegisterActivity(a)
}
