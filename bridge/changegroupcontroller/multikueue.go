package changegroupcontroller

import (
	"gomodules.xyz/jsonpatch/v2"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// ManagedByMultiKueue is the spec.managedBy tekton-kueue's webhook writes on every
// PipelineRun it admits when its configuration says multiKueueOverride
// (tekton-kueue pkg/common ManagedByMultiKueueLabel): the hub's Tekton then leaves
// the run alone and MultiKueue copies it to a spoke cluster when Kueue admits it,
// mirroring the copy's status back. MultiKueue copies the PipelineRun only, as it
// is at that moment, and does not carry later spec changes to the copy.
const ManagedByMultiKueue = "kueue.x-k8s.io/multikueue"

// stayOnThisCluster removes spec.managedBy MultiKueue from a nudge run that must
// run here or nowhere:
//
//   - a run nudgeflow cancels: held on a spoke, it would be out of reach of the
//     held-nudge reconciler, whose keepCancelled is what makes "a held nudge never
//     runs" true when Kueue or a webhook reopens it (a copy made while the hub's
//     run was reopened would run there, whatever the hub's run says next). Kept
//     here, it never starts; Kueue's MultiKueue check rejects its Workload, which
//     costs a cancelled run nothing (tekton-kueue's Stop leaves a cancelled run as
//     it is).
//   - nudgeflow's own Renovate run: its ConfigMap and Secret (a token for one
//     repository the namespace owns) are objects of this cluster, owned by the run
//     here; MultiKueue copies neither, so on a spoke the run could never start,
//     and copying the token to another cluster would put it where nudgeflow does
//     not decide who reads it. The worker's supersede and cancel act on the run
//     here, which a spoke copy would not see either.
//
// spec.managedBy is immutable once the run is stored, so admission is the only
// moment: tekton-kueue's webhook runs after this one, and this one's reinvocation
// (reinvocationPolicy IfNeeded) is where it sees the field. When that call fails
// open, the run keeps MultiKueue: docs/konflux.md says what follows.
func stayOnThisCluster(run *nudgeRun, cancelled bool) []jsonpatch.JsonPatchOperation {
	if run.Spec.managedBy != ManagedByMultiKueue {
		return nil
	}
	if !cancelled && !ownRun(run.Metadata.Labels, run.Metadata.Annotations) {
		return nil
	}
	return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("remove", "/spec/managedBy", nil)}
}

// ownRun: a Renovate run the worker launched (activities/renovate labels and
// annotates it so).
func ownRun(labels, annotations map[string]string) bool {
	return annotations[konflux.AnnotationWorkflowID] != "" && labels[renovaterun.LabelManagedBy] == renovaterun.ManagedByNudgeflow
}
