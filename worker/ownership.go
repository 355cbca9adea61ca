package worker

import (
	"github.com/nudgeflow/nudgeflow/internal/ownership"
)

// What the ownership checks read (internal/ownership): every Pipelines as Code
// Repository (the oldest claim on a repository may be in any namespace; listed,
// never watched), and the cluster admin's one binding ConfigMap in nudgeflow's own
// namespace (by name: no other ConfigMap through this rule).
// +kubebuilder:rbac:groups=pipelinesascode.tekton.dev,resources=repositories,verbs=get;list
// +kubebuilder:rbac:groups="",resources=configmaps,resourceNames=nudgeflow-repository-bindings,verbs=get

// ownershipChecker is the worker's one checker: every activity that writes to a
// repository or mints a token for it asks it first, and they share its index of
// claims. The binding ConfigMap is read in nudgeflow's own namespace (none read
// when the worker does not know it).
func ownershipChecker(deps Deps) *ownership.Checker {
	if deps.Ownership != nil {
		return deps.Ownership
	}
	return &ownership.Checker{Reader: deps.Kube, BindingNamespace: deps.OperatorNamespace, Events: deps.Kube}
}
