package bridge

import (
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// cacheOptions keep the bridge's informer cache small. The bridge watches every
// PipelineRun of the cluster (build runs carry pipelines.appstudio.openshift.io/type,
// nudge runs build.appstudio.redhat.com/type: two label keys, which one label
// selector cannot express), so what each cached run weighs matters most.
//
// Every object loses metadata.managedFields (the bridge never reads them, and an
// Update from the cache omits them, which the API server takes as "unchanged").
// PipelineRuns also lose the status fields the bridge never reads: the resolved
// pipeline (status.pipelineSpec, tens of KB for a Konflux build), child references,
// skipped tasks, provenance and span context. Kept: all metadata but managedFields,
// the whole spec, and status conditions, results, start and completion times — what
// bridge/builds, the held-nudge and Renovate-run reconcilers read. Spec and metadata
// stay whole on purpose: an Update of a cached PipelineRun (a finalizer, say) writes
// them back unchanged, while status is a subresource an Update never writes. Do not
// Status().Update a cached PipelineRun: it would drop the stripped fields.
func cacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[ctrlclient.Object]cache.ByObject{
			&tektonv1.PipelineRun{}: {Transform: StripPipelineRun},
		},
	}
}

// StripPipelineRun is the cache transform of PipelineRuns (see cacheOptions).
func StripPipelineRun(in any) (any, error) {
	plr, ok := in.(*tektonv1.PipelineRun)
	if !ok {
		return in, nil // a tombstone: client-go hands it on untransformed
	}
	plr.ManagedFields = nil
	st := &plr.Status.PipelineRunStatusFields
	st.PipelineSpec = nil
	st.ChildReferences = nil
	st.SkippedTasks = nil
	st.Provenance = nil
	st.SpanContext = nil
	return plr, nil
}
