package changegroup

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/batching"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	cgwf "github.com/nudgeflow/nudgeflow/workflows/changegroup"
)

// Renudger nudges targets of a cancelled nudge PipelineRun that no active ChangeGroup
// collects (partially held runs, or a group that ended in between), so that their
// nudges are not lost.
type Renudger interface {
	Renudge(ctx context.Context, plr *tektonv1.PipelineRun, targets []string) error
}

// HeldReconciler turns a nudge PipelineRun cancelled by a ChangeGroup into a
// component-built signal for that group's workflow. It is stateless: a resync
// resends the signal and the workflow deduplicates by (component, digest).
type HeldReconciler struct {
	Kube ctrlclient.Client
	// APIReader reads past the cache: the webhook saw the group a moment ago.
	APIReader ctrlclient.Reader
	Starter   *Starter
	Recorder  record.EventRecorder
	Renudger  Renudger
	// Batches opens or finds the automatic ChangeGroup of a batched target, for
	// the targets the interceptor held for a batch (nil: those are nudged again).
	Batches *batching.Opener
}

// +kubebuilder:rbac:groups=tekton.dev,resources=pipelineruns,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=components,verbs=get;list;watch

// Reconcile signals the groups that hold the PipelineRun's nudges.
func (r *HeldReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var plr tektonv1.PipelineRun
	if err := r.Kube.Get(ctx, req.NamespacedName, &plr); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	if plr.Annotations[konflux.AnnotationHeldForBatch] != "" {
		if err := r.decideBatches(ctx, &plr); err != nil {
			return ctrl.Result{}, err
		}
	}
	held := ParseHeldBy(plr.Annotations[konflux.AnnotationHeldBy])
	if len(held) == 0 && plr.Annotations[konflux.AnnotationRenudge] == "" {
		return ctrl.Result{}, nil
	}
	source := plr.Annotations[konflux.AnnotationNudging]
	built, err := r.buildOf(ctx, &plr, source)
	if err != nil {
		r.Recorder.Event(&plr, corev1.EventTypeWarning, "BuildNotFound", err.Error())
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	}
	renudge := strings.Fields(plr.Annotations[konflux.AnnotationRenudge])
	var delivered []string
	for _, target := range sortedKeys(held) {
		var cg appstudiov1alpha1.ChangeGroup
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: plr.Namespace, Name: held[target]}, &cg)
		if apierrors.IsNotFound(err) {
			renudge = append(renudge, target)
			continue
		}
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("reading ChangeGroup %s: %w", held[target], err)
		}
		// The workflow decides, not the CR status: a group whose workflow has not
		// started yet is started with the build; one that has ended holds nothing.
		took, err := r.Starter.Deliver(ctx, &cg, built)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !took {
			renudge = append(renudge, target)
			continue
		}
		delivered = append(delivered, cg.Name)
		log.FromContext(ctx).Info("build handed to ChangeGroup", "changeGroup", cg.Name, "component", source, "digest", built.Digest)
	}
	if plr.Annotations[konflux.AnnotationWorkflowID] != "" {
		// nudgeflow's own Renovate run: its Nudge workflow waits for this verdict,
		// and tries again itself when no group took the build.
		return ctrl.Result{}, r.writeHeldOutcome(ctx, &plr, delivered, renudge)
	}
	if len(renudge) == 0 {
		return ctrl.Result{}, nil
	}
	sort.Strings(renudge)
	if r.Renudger == nil {
		r.Recorder.Event(&plr, corev1.EventTypeWarning, "NudgeNotDelivered",
			fmt.Sprintf("no ChangeGroup collects %s's build for %s any more; nudge them again (for example re-run the build)", source, strings.Join(renudge, ", ")))
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.Renudger.Renudge(ctx, &plr, renudge)
}

// decideBatches turns each target held for a batch into a decision written on the
// run before anything is delivered: target=<group> in AnnotationHeldBy (the batch
// that takes the build, opened when none is open) or the target in
// AnnotationRenudge (no longer batched: nudged normally). From then on the run is
// an ordinary held run, so a resync delivers to that same group, which deduplicates,
// and never opens a second batch for a build the first one already took.
func (r *HeldReconciler) decideBatches(ctx context.Context, plr *tektonv1.PipelineRun) error {
	source := plr.Annotations[konflux.AnnotationNudging]
	held := ParseHeldBy(plr.Annotations[konflux.AnnotationHeldBy])
	renudge := strings.Fields(plr.Annotations[konflux.AnnotationRenudge])
	for _, target := range strings.Fields(plr.Annotations[konflux.AnnotationHeldForBatch]) {
		if held[target] != "" || slices.Contains(renudge, target) {
			continue
		}
		var cg *appstudiov1alpha1.ChangeGroup
		if r.Batches != nil {
			var err error
			if cg, err = r.Batches.HolderFor(ctx, plr.Namespace, source, target, ""); err != nil {
				return fmt.Errorf("finding the batch of %s for %s's nudge %s: %w", target, source, plr.Name, err)
			}
		}
		if cg == nil {
			renudge = append(renudge, target)
			continue
		}
		held[target] = cg.Name
	}
	pairs := make([]string, 0, len(held))
	for _, t := range sortedKeys(held) {
		pairs = append(pairs, t+"="+held[t])
	}
	patch := ctrlclient.MergeFromWithOptions(plr.DeepCopy(), ctrlclient.MergeFromWithOptimisticLock{})
	delete(plr.Annotations, konflux.AnnotationHeldForBatch)
	if len(pairs) > 0 {
		plr.Annotations[konflux.AnnotationHeldBy] = strings.Join(pairs, ",")
	}
	if len(renudge) > 0 {
		plr.Annotations[konflux.AnnotationRenudge] = strings.Join(renudge, " ")
	}
	if err := r.Kube.Patch(ctx, plr, patch); err != nil {
		return fmt.Errorf("recording the batches that take %s's nudge %s: %w", source, plr.Name, err)
	}
	log.FromContext(ctx).Info("nudge held for a batch given to its automatic ChangeGroup", "pipelineRun", plr.Name,
		"heldBy", plr.Annotations[konflux.AnnotationHeldBy], "renudge", plr.Annotations[konflux.AnnotationRenudge])
	return nil
}

// writeHeldOutcome tells the Nudge workflow that launched plr where its build went
// (konflux.AnnotationHeldOutcome). Its run nudges one target: delivered when a group
// took it, returned otherwise.
func (r *HeldReconciler) writeHeldOutcome(ctx context.Context, plr *tektonv1.PipelineRun, delivered, returned []string) error {
	outcome := konflux.HeldOutcomeReturned
	if len(returned) == 0 && len(delivered) > 0 {
		outcome = konflux.HeldOutcomeDeliveredPrefix + strings.Join(delivered, ",")
	}
	if plr.Annotations[konflux.AnnotationHeldOutcome] == outcome {
		return nil
	}
	patch := ctrlclient.MergeFrom(plr.DeepCopy())
	plr.Annotations[konflux.AnnotationHeldOutcome] = outcome
	if err := r.Kube.Patch(ctx, plr, patch); err != nil {
		return fmt.Errorf("writing the held outcome %q on %s: %w", outcome, plr.Name, err)
	}
	log.FromContext(ctx).Info("held Renovate run decided", "pipelineRun", plr.Name, "outcome", outcome)
	return nil
}

// buildOf finds the digest the nudge carries: the build PipelineRun's results, else
// the nudging Component's last promoted image.
func (r *HeldReconciler) buildOf(ctx context.Context, plr *tektonv1.PipelineRun, source string) (cgwf.ComponentBuilt, error) {
	b := cgwf.ComponentBuilt{Component: source, PipelineRun: plr.Name, BuiltAt: plr.CreationTimestamp.UTC()}
	if name := plr.Annotations[konflux.AnnotationNudgingPLR]; name != "" {
		var build tektonv1.PipelineRun
		err := r.Kube.Get(ctx, types.NamespacedName{Namespace: plr.Namespace, Name: name}, &build)
		if err == nil {
			url, digest := konflux.BuildResults(&build)
			if url != "" && digest != "" {
				b.Digest, b.PullSpec, b.BuildPipelineRun, b.BuildUID = digest, repoOf(url)+"@"+digest, name, string(build.UID)
				// Builds are ordered by when they started, as bridge/builds and
				// integration-service order them: one order whichever path delivers.
				b.BuiltAt = build.CreationTimestamp.UTC()
				if build.Status.StartTime != nil {
					b.BuiltAt = build.Status.StartTime.UTC()
				}
				return b, nil
			}
		} else if !apierrors.IsNotFound(err) {
			return b, fmt.Errorf("reading build PipelineRun %s: %w", name, err)
		}
	}
	var c mirrorv1alpha1.Component
	if err := r.Kube.Get(ctx, types.NamespacedName{Namespace: plr.Namespace, Name: source}, &c); err != nil {
		return b, fmt.Errorf("no build results and no Component %q to read the image from: %w", source, err)
	}
	repo, digest, ok := strings.Cut(c.Status.LastPromotedImage, "@")
	if !ok {
		return b, fmt.Errorf("no build results, and Component %q has no lastPromotedImage", source)
	}
	b.Digest, b.PullSpec = digest, repoOf(repo)+"@"+digest
	return b, nil
}

// repoOf strips a tag (not a registry port) from an image reference.
func repoOf(image string) string {
	image, _, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[:i]
	}
	return image
}

// SetupWithManager watches PipelineRuns nudgeflow cancelled.
func (r *HeldReconciler) SetupWithManager(mgr ctrl.Manager) error {
	heldOnly := predicate.NewPredicateFuncs(func(o ctrlclient.Object) bool {
		a := o.GetAnnotations()
		return a[konflux.AnnotationHeldBy] != "" || a[konflux.AnnotationHeldForBatch] != ""
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&tektonv1.PipelineRun{}, builder.WithPredicates(heldOnly)).
		Named("held-nudge").
		Complete(r)
}
