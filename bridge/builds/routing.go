package builds

import (
	"context"
	"fmt"
	"sort"
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// Nothing lost to pruning. Tekton's pruner deletes finished PipelineRuns;
// a build it deletes before the bridge saw it succeed (bridge down, slow, restarting)
// would never be nudged. So, as build-service and integration-service do, the bridge
// holds the push builds of components with nudge edges with a finalizer
// (konflux.FinalizerBuildRouting) from their creation (the admission webhook, Holder)
// or from when it first sees them running (the reconciler's fallback), and releases
// them once routed, in the one write that acknowledges them
// (konflux.AnnotationNudgeRouted). Builds of components without edges are never
// held or annotated.

// Why an acknowledged build names no target (values of konflux.AnnotationNudgeRouted).
const (
	// RoutedNoEdges: the build was held, but its component has no edge any more.
	RoutedNoEdges = "no-edges"
	// RoutedFailed: the build failed or was cancelled; failed builds never nudge.
	RoutedFailed = "failed"
	// RoutedDeletedUnfinished: the build was deleted before it finished.
	RoutedDeletedUnfinished = "deleted-unfinished"
	// RoutedNoResults: the build succeeded without IMAGE_URL or IMAGE_DIGEST.
	RoutedNoResults = "no-results"
	// RoutedExecutedElsewhere: under the exclusive executor, every edge is run by
	// another Konflux service and no ChangeGroup held one.
	RoutedExecutedElsewhere = "executed-elsewhere"
	// RoutedMergeQueue: a build of a GitHub merge-queue branch (IsMergeQueueBuild),
	// held before it could be told apart or before this rule, released unrouted.
	RoutedMergeQueue = "merge-queue"
)

// IsMergeQueueBuild reports whether a build ran for a push to a GitHub merge-queue
// branch (konflux.MergeQueueBuild, integration-service's test): no edge, group or
// batch ever gets it.
func IsMergeQueueBuild(plr *tektonv1.PipelineRun) bool {
	return konflux.MergeQueueBuild(plr.Annotations)
}

// Holds reports whether the bridge's finalizer is on the build.
func Holds(plr *tektonv1.PipelineRun) bool {
	return controllerutil.ContainsFinalizer(plr, konflux.FinalizerBuildRouting)
}

// Acknowledged reports whether the bridge has routed the build.
func Acknowledged(plr *tektonv1.PipelineRun) bool {
	_, ok := plr.Annotations[konflux.AnnotationNudgeRouted]
	return ok
}

// Settled reports whether nothing is left to do for the build: routed and released.
// A resync of a settled build reads nothing else and calls no Temporal API.
func Settled(plr *tektonv1.PipelineRun) bool {
	return Acknowledged(plr) && !Holds(plr)
}

// finished: the build will not change any more. Being deleted counts (the pruner, or
// a person, deleted it while the finalizer held it), as it does for build-service.
func finished(plr *tektonv1.PipelineRun) bool {
	return plr.IsDone() || !plr.DeletionTimestamp.IsZero()
}

// needsReconcile filters the build reconciler's events: push builds that are not
// settled, and among running ones only those not held yet (a running build the bridge
// holds has nothing to do until it finishes; Tekton updates its status often).
//
// A merge-queue build is nudgeflow's only while it holds it (to release it); it is
// released at once, finished or not.
func needsReconcile(plr *tektonv1.PipelineRun) bool {
	if IsMergeQueueBuild(plr) {
		return IsPushBuild(plr) && Holds(plr)
	}
	return IsPushBuild(plr) && !Settled(plr) && (finished(plr) || !Holds(plr))
}

// isNudged reads integration-service's acknowledgement on a build
// (konflux.AnnotationISNudgeProcessed): the targets it nudged from it. A reason value
// names no target. (A component literally named like a reason would be read as the
// reason: Kubernetes allows the name, nobody picks it.)
func isNudged(plr *tektonv1.PipelineRun) map[string]bool {
	v := strings.TrimSpace(konflux.ISNudgeProcessedKey.Get(plr.Annotations))
	switch v {
	case "", konflux.ISNudgeNoMatchingEdges, konflux.ISNudgeNoValidTargets, konflux.ISNudgeBuildResultError,
		konflux.ISNudgeCredentialsError, konflux.ISNudgeNoCredentials, ISNudgeTakenOver:
		return nil
	}
	out := map[string]bool{}
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out[t] = true
		}
	}
	return out
}

// routedValue is the acknowledgement for the routed targets: sorted, comma-joined,
// so two bridges write the same value.
func routedValue(targets map[string]bool) string {
	if len(targets) == 0 {
		return RoutedExecutedElsewhere
	}
	out := make([]string, 0, len(targets))
	for t := range targets {
		out = append(out, t)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// hold puts the finalizer on a running build the admission webhook did not hold
// (nudgeflow was down at its creation, or the edge is newer than the build).
func (r *BuildReconciler) hold(ctx context.Context, plr *tektonv1.PipelineRun) error {
	err := r.patchBuild(ctx, plr, func(p *tektonv1.PipelineRun) bool {
		// The API server refuses new finalizers on an object being deleted; a build
		// routed meanwhile (another bridge) needs no hold.
		if !p.DeletionTimestamp.IsZero() || Acknowledged(p) {
			return false
		}
		return controllerutil.AddFinalizer(p, konflux.FinalizerBuildRouting)
	})
	if err != nil {
		return fmt.Errorf("holding the build with %s: %w", konflux.FinalizerBuildRouting, err)
	}
	return nil
}

// acknowledge writes the acknowledgement and removes the finalizer in one write: a
// build is never released unacknowledged (it would be routed again) nor acknowledged
// but still held (the pruner would wait for nothing). An acknowledgement another
// bridge wrote first is kept.
func (r *BuildReconciler) acknowledge(ctx context.Context, plr *tektonv1.PipelineRun, routed string) error {
	err := r.patchBuild(ctx, plr, func(p *tektonv1.PipelineRun) bool {
		changed := false
		if !Acknowledged(p) {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[konflux.AnnotationNudgeRouted] = routed
			changed = true
		}
		return controllerutil.RemoveFinalizer(p, konflux.FinalizerBuildRouting) || changed
	})
	if err != nil {
		return fmt.Errorf("acknowledging the build as routed (%s): %w", routed, err)
	}
	log.FromContext(ctx).Info("build routed and released", "routed", routed)
	return nil
}

// patchBuild applies change to the build's metadata and writes it as one merge patch
// guarded by the resourceVersion it read (only metadata goes out, so the build's spec
// and status are never written back). Tekton, and tests acting as Tekton, write a
// build's status at any time: on a conflict the build is re-read from the API server,
// past the cache, and change applied again to that copy. A build already gone needs
// nothing.
func (r *BuildReconciler) patchBuild(ctx context.Context, plr *tektonv1.PipelineRun, change func(*tektonv1.PipelineRun) bool) error {
	key := ctrlclient.ObjectKeyFromObject(plr)
	reread := false
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if reread {
			if err := r.apiReader().Get(ctx, key, plr); err != nil {
				return err
			}
		}
		reread = true
		before := plr.DeepCopy()
		if !change(plr) {
			return nil
		}
		return r.Client.Patch(ctx, plr, ctrlclient.MergeFromWithOptions(before, ctrlclient.MergeFromWithOptimisticLock{}))
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("patching build %s: %w", key, err)
	}
	return nil
}

func (r *BuildReconciler) apiReader() ctrlclient.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}
