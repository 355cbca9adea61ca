package changegroupcontroller

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
	"github.com/nudgeflow/nudgeflow/internal/autogroups"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
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
// resends the signal and the workflow deduplicates by (component, digest). It also
// keeps every run the interceptor cancelled cancelled (keepCancelled).
type HeldReconciler struct {
	Kube ctrlclient.Client
	// APIReader reads past the cache: the webhook saw the group a moment ago.
	APIReader ctrlclient.Reader
	Starter   *Starter
	Recorder  record.EventRecorder
	Renudger  Renudger
	// Batches opens or finds the automatic ChangeGroup of a batched target, for
	// the targets the interceptor held for a batch (nil: those are nudged again).
	Batches *autogroups.Opener
}

// +kubebuilder:rbac:groups=tekton.dev,resources=pipelineruns,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=components,verbs=get;list;watch
// integration-service's nudge run objects (isobjects.go), bounded by the
// ValidatingAdmissionPolicy nudgeflow-bridge-deletes; no read, no deletecollection.
// +kubebuilder:rbac:groups="",resources=secrets;configmaps,verbs=delete

// Reconcile signals the groups that hold the PipelineRun's nudges.
func (r *HeldReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var plr tektonv1.PipelineRun
	if err := r.Kube.Get(ctx, req.NamespacedName, &plr); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	// Before anything else, and for settled runs too: Kueue may admit a held run
	// (clear spec.status) long after its build went to a group.
	if stale, err := r.keepCancelled(ctx, &plr); err != nil || stale {
		// An error is retried with backoff. A stale copy is reconciled again at
		// once by the watch event of the newer version; the requeue is a backstop.
		return ctrl.Result{RequeueAfter: staleRetry}, err
	}
	// Before decided, too: a run settled before this bridge version still has them.
	if err := r.deleteISRunObjects(ctx, &plr); err != nil {
		return ctrl.Result{}, err
	}
	if decided(&plr) {
		return ctrl.Result{}, nil
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
	source := konflux.NudgingKey.Get(plr.Annotations)
	built, err := r.buildOf(ctx, &plr, source)
	if err != nil {
		r.Recorder.Event(&plr, corev1.EventTypeWarning, "BuildNotFound", err.Error())
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	}
	renudge := strings.Fields(plr.Annotations[konflux.AnnotationRenudge])
	tookBy := map[string]string{}
	for _, target := range sortedKeys(held) {
		group, err := r.deliver(ctx, &plr, held[target], source, target, built)
		if err != nil {
			return ctrl.Result{}, err
		}
		if group == "" {
			renudge = append(renudge, target)
			continue
		}
		tookBy[target] = group
		log.FromContext(ctx).Info("build handed to ChangeGroup", "changeGroup", group, "component", source, "digest", built.Digest)
	}
	if plr.Annotations[konflux.AnnotationWorkflowID] != "" {
		// nudgeflow's own Renovate run: its Nudge workflow waits for this verdict,
		// and tries again itself when no group took the build.
		return ctrl.Result{}, r.writeHeldOutcome(ctx, &plr, tookBy, renudge)
	}
	sort.Strings(renudge)
	if len(renudge) > 0 {
		if r.Renudger == nil {
			r.Recorder.Event(&plr, corev1.EventTypeWarning, "NudgeNotDelivered",
				fmt.Sprintf("no ChangeGroup collects %s's build for %s any more; nudge them again (for example re-run the build)", source, strings.Join(renudge, ", ")))
		} else if err := r.Renudger.Renudge(ctx, &plr, renudge); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, r.settle(ctx, &plr, tookBy, renudge)
}

// ReasonHoldReapplied is the reason of the Event on a held nudge PipelineRun that
// the held-nudge reconciler cancelled again.
const ReasonHoldReapplied = "HoldReapplied"

// reopened tells whether plr is a run the interceptor cancelled at admission
// (konflux.HeldAtAdmission) whose spec.status someone changed since and that has
// not finished, so it may start: tekton-kueue's webhook set PipelineRunPending
// after the interceptor and the reinvocation did not put the cancel back (it
// failed open), or Kueue admitted the run by clearing spec.status. Only the
// interceptor's annotations count: nudgeflow's own Renovate runs are created
// pending and released by the worker, and one that no group held carries none, so
// its release is never undone here.
func reopened(plr *tektonv1.PipelineRun) bool {
	if !konflux.HeldAtAdmission(plr.Annotations) || plr.Spec.Status == tektonv1.PipelineRunSpecStatusCancelled {
		return false
	}
	// A finished run cannot start again, and one being deleted will not start.
	return !plr.IsDone() && plr.Status.CompletionTime == nil && plr.DeletionTimestamp.IsZero()
}

// staleRetry is when a run whose cached copy was stale is looked at again.
const staleRetry = time.Second

// keepCancelled cancels a reopened run again and says so in an Event. The patch is
// conditional on the version read: a stale cached copy (one this reconciler
// already cancelled again, or one that finished) conflicts and is reported stale,
// to be looked at again, instead of being cancelled, or announced, twice.
func (r *HeldReconciler) keepCancelled(ctx context.Context, plr *tektonv1.PipelineRun) (stale bool, err error) {
	if !reopened(plr) {
		return false, nil
	}
	was := plr.Spec.Status
	patch := ctrlclient.MergeFromWithOptions(plr.DeepCopy(), ctrlclient.MergeFromWithOptimisticLock{})
	plr.Spec.Status = tektonv1.PipelineRunSpecStatusCancelled
	if err := r.Kube.Patch(ctx, plr, patch); err != nil {
		if apierrors.IsConflict(err) {
			return true, nil
		}
		return false, fmt.Errorf("cancelling held nudge PipelineRun %s/%s again (spec.status %q): %w", plr.Namespace, plr.Name, was, err)
	}
	shown := string(was)
	if shown == "" {
		shown = "empty (the run may start)"
	}
	r.Recorder.Eventf(plr, corev1.EventTypeWarning, ReasonHoldReapplied,
		"another webhook or controller changed spec.status to %s after nudgeflow cancelled this nudge (%s); cancelled again",
		shown, plr.Annotations[konflux.AnnotationCancelReason])
	log.FromContext(ctx).Info("held nudge PipelineRun cancelled again", "pipelineRun", plr.Name, "namespace", plr.Namespace,
		"specStatusWas", string(was), "heldBy", plr.Annotations[konflux.AnnotationHeldBy], "heldForBatch", plr.Annotations[konflux.AnnotationHeldForBatch])
	return false, nil
}

// decided: nothing is left to do for the run. Another service's run is settled
// once each target went to a group or was nudged again (AnnotationHeldSettled);
// nudgeflow's own run once its Nudge was told (AnnotationHeldOutcome). Deciding
// again later could only go wrong: a group past retention no longer remembers the
// build it took, and the build would be nudged a second time.
func decided(plr *tektonv1.PipelineRun) bool {
	a := plr.Annotations
	if a[konflux.AnnotationWorkflowID] != "" {
		return a[konflux.AnnotationHeldOutcome] != ""
	}
	return a[konflux.AnnotationHeldSettled] != ""
}

// deliver gives the build to the group that held target and returns the group that
// took it, "" when none did (nudge it again). A batch that ended without it passes
// it to the target's next batch (opened when none is open), as a late build is,
// rather than letting it go out on its own.
func (r *HeldReconciler) deliver(ctx context.Context, plr *tektonv1.PipelineRun, group, source, target string, built cgwf.ComponentBuilt) (string, error) {
	var cg appstudiov1alpha1.ChangeGroup
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: plr.Namespace, Name: group}, &cg)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("reading ChangeGroup %s: %w", group, err)
	}
	if err == nil {
		// The workflow decides, not the CR status: a group whose workflow has not
		// started yet is started with the build; one that has ended holds nothing.
		took, err := r.Starter.Deliver(ctx, &cg, built)
		if err != nil || took {
			return group, err
		}
		if !grouplookup.IsAutomatic(&cg) {
			return "", nil
		}
	} else if plr.Annotations[konflux.AnnotationWorkflowID] != "" {
		return "", nil
	}
	next, err := r.batchFor(ctx, plr.Namespace, source, target, group)
	if err != nil || next == nil {
		return "", err
	}
	took, err := r.Starter.Deliver(ctx, next, built)
	if err != nil || !took {
		return "", err
	}
	return next.Name, nil
}

// batchFor is the batch that takes source's build for target now, except the
// group named except: nil when the live NudgeConfig no longer has the immediate
// edge or no longer batches the target (then the build is nudged normally; a
// validated edge must not reach a PR untested).
func (r *HeldReconciler) batchFor(ctx context.Context, namespace, source, target, except string) (*appstudiov1alpha1.ChangeGroup, error) {
	if r.Batches == nil {
		return nil, nil
	}
	nc, err := nudgeConfigOf(ctx, r.apiReader(), namespace)
	if err != nil || nc == nil || !batchesEdge(nc, source, target) {
		return nil, err
	}
	cg, err := r.Batches.HolderExcept(ctx, nc, source, target, except)
	if err != nil {
		return nil, fmt.Errorf("finding the batch of %s for %s's build: %w", target, source, err)
	}
	return cg, nil
}

func (r *HeldReconciler) apiReader() ctrlclient.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Kube
}

// settle writes on another service's run that its targets are done with
// (AnnotationHeldSettled): each given to a group or nudged again.
func (r *HeldReconciler) settle(ctx context.Context, plr *tektonv1.PipelineRun, tookBy map[string]string, renudged []string) error {
	var parts []string
	if len(tookBy) > 0 {
		parts = append(parts, "delivered="+FormatHeldBy(tookBy))
	}
	if len(renudged) > 0 {
		parts = append(parts, "renudged="+strings.Join(renudged, ","))
	}
	patch := ctrlclient.MergeFrom(plr.DeepCopy())
	plr.Annotations[konflux.AnnotationHeldSettled] = strings.Join(parts, " ")
	if err := r.Kube.Patch(ctx, plr, patch); err != nil {
		return fmt.Errorf("recording that %s's held nudges are settled: %w", plr.Name, err)
	}
	return nil
}

// decideBatches turns each target held for a batch into a decision written on the
// run before anything is delivered: target=<group> in AnnotationHeldBy (the batch
// that takes the build, opened when none is open) or the target in
// AnnotationRenudge (no longer batched: nudged normally). From then on the run is
// an ordinary held run, so a resync delivers to that same group, which deduplicates,
// and never opens a second batch for a build the first one already took.
func (r *HeldReconciler) decideBatches(ctx context.Context, plr *tektonv1.PipelineRun) error {
	// The cached copy may predate this reconciler's own decision: deciding on it
	// again could open a second batch. Decide on what the API server has.
	if err := r.apiReader().Get(ctx, ctrlclient.ObjectKeyFromObject(plr), plr); err != nil {
		return ctrlclient.IgnoreNotFound(err)
	}
	pending := strings.Fields(plr.Annotations[konflux.AnnotationHeldForBatch])
	if len(pending) == 0 {
		return nil
	}
	source := konflux.NudgingKey.Get(plr.Annotations)
	held := ParseHeldBy(plr.Annotations[konflux.AnnotationHeldBy])
	renudge := strings.Fields(plr.Annotations[konflux.AnnotationRenudge])
	for _, target := range pending {
		if held[target] != "" || slices.Contains(renudge, target) {
			continue
		}
		cg, err := r.batchFor(ctx, plr.Namespace, source, target, "")
		if err != nil {
			return fmt.Errorf("deciding the batch of %s for %s's nudge %s: %w", target, source, plr.Name, err)
		}
		if cg == nil {
			renudge = append(renudge, target)
			continue
		}
		held[target] = cg.Name
	}
	patch := ctrlclient.MergeFromWithOptions(plr.DeepCopy(), ctrlclient.MergeFromWithOptimisticLock{})
	delete(plr.Annotations, konflux.AnnotationHeldForBatch)
	if len(held) > 0 {
		plr.Annotations[konflux.AnnotationHeldBy] = FormatHeldBy(held)
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
func (r *HeldReconciler) writeHeldOutcome(ctx context.Context, plr *tektonv1.PipelineRun, tookBy map[string]string, returned []string) error {
	outcome := konflux.HeldOutcomeReturned
	if len(returned) == 0 && len(tookBy) > 0 {
		delivered := make([]string, 0, len(tookBy))
		for _, t := range sortedKeys(tookBy) {
			delivered = append(delivered, tookBy[t])
		}
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
//
// BuiltAt is the build's start: the build run's, else the one nudgeflow's own
// Renovate runs carry (renovaterun.AnnotationBuiltAt), else unknown (zero). Never the
// nudge run's creation: a held run may be created long after its build (a
// retried or handed-back Nudge), and that time would make an older build look
// newer than a build the group holds, which it would then replace, and hand back
// as newer. Unknown sorts before every known start, so a build of unknown start
// never replaces a known one in the group (its state keeps the newer), and a
// Nudge of it supersedes no other build's run (supersede.go compares known starts only).
// Only another service's run comes without a start, and then its digest is the
// Component's last promoted image: not newer than a build the group holds.
func (r *HeldReconciler) buildOf(ctx context.Context, plr *tektonv1.PipelineRun, source string) (cgwf.ComponentBuilt, error) {
	b := cgwf.ComponentBuilt{Component: source, PipelineRun: plr.Name}
	if name := konflux.NudgingPipelineKey.Get(plr.Annotations); name != "" {
		var run tektonv1.PipelineRun
		err := r.Kube.Get(ctx, types.NamespacedName{Namespace: plr.Namespace, Name: name}, &run)
		if err == nil {
			// The build whole, ordered by its start as bridge/builds and
			// integration-service order builds: one order whichever path delivers.
			if built, ok := konflux.BuildOf(&run); ok {
				b.Build = built
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
	b.Build = konflux.BuildOfImage(c.Status.LastPromotedImage)
	if b.Digest == "" {
		return b, fmt.Errorf("no build results, and Component %q has no lastPromotedImage", source)
	}
	b.BuiltAt = carriedBuiltAt(plr)
	return b, nil
}

// heldOnly passes the PipelineRuns nudgeflow cancelled: held for a group or a
// batch, or with targets to nudge again (all a run may carry once its batches are
// decided), so a restart finds every run not yet settled, and every change of
// their spec.status reaches keepCancelled.
var heldOnly = predicate.NewPredicateFuncs(func(o ctrlclient.Object) bool {
	a := o.GetAnnotations()
	return konflux.HeldAtAdmission(a) || a[konflux.AnnotationRenudge] != ""
})

// SetupWithManager watches PipelineRuns nudgeflow cancelled.
func (r *HeldReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&tektonv1.PipelineRun{}, builder.WithPredicates(heldOnly)).
		Named("held-nudge").
		Complete(r)
}

// carriedBuiltAt is the build start a nudge run carries (nudgeflow's own runs),
// zero when it carries none.
func carriedBuiltAt(plr *tektonv1.PipelineRun) time.Time {
	t, err := time.Parse(time.RFC3339Nano, plr.Annotations[renovaterun.AnnotationBuiltAt])
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}
