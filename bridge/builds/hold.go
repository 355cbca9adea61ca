package builds

import (
	"context"
	"encoding/json"
	"fmt"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
)

// HoldPath serves the mutating webhook that holds push builds at creation;
// HoldWebhookName is its name in the webhook configuration (deploy/webhooks).
const (
	HoldPath        = "/mutate-tekton-dev-v1-pipelinerun-build"
	HoldWebhookName = "build-routing.nudgeflow.konflux-ci.dev"
)

// Holder puts the build-routing finalizer on a push build PipelineRun of a component
// with nudge edges as it is created: the earliest moment, so even a build that ends
// and is pruned while the bridge's reconciler is down or behind is still there to be
// routed.
//
// failurePolicy is Ignore and every problem admits the build unchanged: a build must
// never be blocked or delayed by nudgeflow being down. The build reconciler holds a
// running build it finds without the finalizer, and routes a finished one it still
// sees, so the webhook only narrows the window in which a prune can lose a build.
type Holder struct {
	// Reader must read through to the API server: a Component or NudgeConfig created
	// a moment before its first build already counts. Not the informer cache: a
	// build admitted unheld because the cache had not seen its edges yet, and that
	// finishes before the cache has, is routed only at the next resync, hours later,
	// if a pruner has not deleted it by then (the build reconciler re-reads edges
	// live only for builds it holds). The object selector of this webhook
	// (deploy/base) limits the read to build PipelineRuns.
	Reader ctrlclient.Reader
}

// +kubebuilder:webhook:path=/mutate-tekton-dev-v1-pipelinerun-build,mutating=true,failurePolicy=ignore,sideEffects=None,groups=tekton.dev,resources=pipelineruns,verbs=create,versions=v1,name=build-routing.nudgeflow.konflux-ci.dev,admissionReviewVersions=v1,timeoutSeconds=5
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=components,verbs=get;list;watch
// +kubebuilder:rbac:groups=konflux-ci.dev,resources=nudgeconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=nudgeconfigs,verbs=get;list;watch

// Handle decides on one PipelineRun.
func (h *Holder) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("only creation is held")
	}
	// Only the metadata is decoded: the spec is Tekton's business, and an unknown
	// field in it must not turn into a patch.
	var head struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(req.Object.Raw, &head); err != nil {
		log.FromContext(ctx).Error(err, "decoding the build; admitting it unheld", "namespace", req.Namespace, "name", req.Name)
		return failOpen(metrics.FailOpenUndecodable, "not a PipelineRun nudgeflow can read; not held")
	}
	plr := &tektonv1.PipelineRun{ObjectMeta: head.Metadata}
	if !IsPushBuild(plr) {
		return admission.Allowed("not a push build")
	}
	if IsMergeQueueBuild(plr) {
		return admission.Allowed("a merge-queue build is speculative and never nudged")
	}
	if Holds(plr) || Acknowledged(plr) {
		return admission.Allowed("already held or routed")
	}
	component := konflux.ComponentOf(plr.Labels)
	logger := log.FromContext(ctx).WithValues("namespace", req.Namespace, "component", component)
	edges, err := edgesOf(ctx, h.Reader, req.Namespace, component, false)
	if err != nil {
		logger.Error(err, "cannot tell whether the build nudges; admitting it unheld (the reconciler holds it when it sees it)")
		return failOpen(metrics.FailOpenEdgesUnread, "nudge edges could not be read")
	}
	if len(edges) == 0 {
		return admission.Allowed("the component nudges nothing")
	}
	var obj map[string]any
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		logger.Error(err, "decoding the build; admitting it unheld")
		return failOpen(metrics.FailOpenUndecodable, "not a PipelineRun nudgeflow can read; not held")
	}
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		logger.Error(nil, "the build has no metadata object; admitting it unheld")
		return failOpen(metrics.FailOpenUndecodable, "no metadata; not held")
	}
	finalizers, _ := meta["finalizers"].([]any)
	meta["finalizers"] = append(finalizers, konflux.FinalizerBuildRouting)
	mutated, err := json.Marshal(obj)
	if err != nil {
		logger.Error(err, "encoding the held build; admitting it unheld")
		return failOpen(metrics.FailOpenPatchFailed, "encoding failed")
	}
	resp := admission.PatchResponseFromRaw(req.Object.Raw, mutated)
	if !resp.Allowed {
		// PatchResponseFromRaw answers a diff failure with a denial: admit instead.
		logger.Error(nil, "computing the admission patch failed; admitting the build unheld", "reason", resp.Result.Message)
		return failOpen(metrics.FailOpenPatchFailed, "patch failed; not held")
	}
	logger.V(1).Info("build held until routed", "finalizer", konflux.FinalizerBuildRouting)
	return resp
}

// failOpen admits the build unheld because of the hook's own error, and counts it
// (metrics.AdmissionFailOpen): the API server records this as an ordinary "allowed",
// so without the count a hook that cannot read its edges would go unnoticed until
// pruned builds were missed.
func failOpen(reason, message string) admission.Response {
	metrics.CountFailOpen(metrics.WebhookBuildRouting, reason)
	return admission.Allowed(message)
}

// HeldBuildsField indexes the PipelineRuns held under the build-routing finalizer
// (value "true"): a scrape reads those few, not every build of the cluster (75,000
// at 100,000 PipelineRuns, each expanded from the cache's compact form).
const HeldBuildsField = "nudgeflow.build-routing.held"

// IndexHeldBuilds registers HeldBuildsField with indexer.
func IndexHeldBuilds(indexer ctrlclient.FieldIndexer) error {
	err := indexer.IndexField(context.Background(), &tektonv1.PipelineRun{}, HeldBuildsField, func(o ctrlclient.Object) []string {
		if plr, ok := o.(*tektonv1.PipelineRun); ok && Holds(plr) {
			return []string{"true"}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("indexing the builds held for routing: %w", err)
	}
	return nil
}
