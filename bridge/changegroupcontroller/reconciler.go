// Package changegroupcontroller is the bridge side of ChangeGroups: it starts and signals
// each group's workflow from CR events, turns override annotations into updates,
// cancels the workflow when the CR is deleted, intercepts nudge PipelineRuns of held
// components and turns them and forge events into signals.
package changegroupcontroller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	cgwf "github.com/nudgeflow/nudgeflow/workflows/changegroup"
)

// Reconciler keeps each ChangeGroup's workflow in step with the CR.
type Reconciler struct {
	Kube     ctrlclient.Client
	Temporal client.Client
	Starter  *Starter
	Recorder record.EventRecorder
}

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=changegroups,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=changegroups/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile sends the spec to the workflow, starting it when needed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	var cg appstudiov1alpha1.ChangeGroup
	if err := r.Kube.Get(ctx, req.NamespacedName, &cg); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	id := cgwf.WorkflowID(cg.Namespace, cg.Name, string(cg.UID))

	if !cg.DeletionTimestamp.IsZero() || cg.Status.Phase.IsFinal() {
		forgetClosed(cg.UID)
	}
	if !cg.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(&cg, konflux.FinalizerChangeGroup) {
			return ctrl.Result{}, nil
		}
		err := r.Temporal.SignalWorkflow(ctx, id, "", cgwf.SignalCancel, cgwf.CancelRequest{Reason: "the ChangeGroup was deleted"})
		if err != nil && !isGone(err) {
			return ctrl.Result{}, fmt.Errorf("cancelling workflow %s: %w", id, err)
		}
		logger.Info("ChangeGroup deleted; workflow cancelled", "workflowID", id)
		controllerutil.RemoveFinalizer(&cg, konflux.FinalizerChangeGroup)
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(r.Kube.Update(ctx, &cg))
	}
	if cg.Status.Phase.IsFinal() {
		return ctrl.Result{}, r.rejectAction(ctx, &cg, fmt.Sprintf("the group has ended (%s)", cg.Status.Phase))
	}
	if controllerutil.AddFinalizer(&cg, konflux.FinalizerChangeGroup) {
		if err := r.Kube.Update(ctx, &cg); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
	}
	if err := r.signalWithStart(ctx, &cg, id); err != nil {
		return ctrl.Result{}, err
	}
	if action := cg.Annotations[konflux.AnnotationAction]; action != "" {
		return r.applyAction(ctx, &cg, id, action)
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) signalWithStart(ctx context.Context, cg *appstudiov1alpha1.ChangeGroup, id string) error {
	spec := cgwf.SpecChanged{Generation: cg.Generation}
	for _, n := range cg.Spec.NudgingComponents {
		spec.NudgingComponents = append(spec.NudgingComponents, n.Name)
	}
	if cg.Spec.Timeout != nil {
		spec.Timeout = cg.Spec.Timeout.Duration
	}
	spec.AutoRelease = AutoReleaseOf(cg)
	err := r.Starter.SignalWithStart(ctx, cg, cgwf.SignalSpecChanged, spec)
	if errors.Is(err, ErrEnded) {
		// A spec edit after the end changes nothing. The CR is not final, so the
		// workflow closed without writing its end: counted
		// (metrics.ChangeGroupWorkflowClosed) and said on the group, for the
		// operator (RUNBOOK.md#nudgeflowchangegroupworkflowclosed).
		r.Recorder.Event(cg, corev1.EventTypeWarning, "WorkflowClosed",
			fmt.Sprintf("workflow %s has closed but this ChangeGroup's status is %q: nothing will end it; see the nudgeflow runbook (NudgeflowChangeGroupWorkflowClosed)", id, cg.Status.Phase))
		return nil
	}
	return err
}

// applyAction turns the override annotation into a Temporal update, then removes it.
func (r *Reconciler) applyAction(ctx context.Context, cg *appstudiov1alpha1.ChangeGroup, id, action string) (ctrl.Result, error) {
	name, args, err := ParseAction(action)
	if err != nil {
		return ctrl.Result{}, r.rejectAction(ctx, cg, err.Error())
	}
	uctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	handle, err := r.Temporal.UpdateWorkflow(uctx, client.UpdateWorkflowOptions{
		WorkflowID:   id,
		UpdateID:     fmt.Sprintf("annotation/%s/%s", cg.ResourceVersion, action),
		UpdateName:   name,
		Args:         args,
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var result string
	if err == nil {
		err = handle.Get(uctx, &result)
	}
	if err != nil {
		// Only a refusal of the request itself (or a workflow that is not running)
		// clears the annotation; an update that failed otherwise (the worker is down,
		// a validator panicked) was not applied, so it is kept and tried again.
		var rejected *temporal.ApplicationError
		if (errors.As(err, &rejected) && rejected.Type() == cgwf.OverrideRejected) || isGone(err) {
			return ctrl.Result{}, r.rejectAction(ctx, cg, err.Error())
		}
		if !errors.Is(err, context.DeadlineExceeded) && uctx.Err() == nil {
			r.Recorder.Event(cg, corev1.EventTypeWarning, "OverrideNotApplied", fmt.Sprintf("%s: %v; trying again", action, err))
		}
		log.FromContext(ctx).Info("override not applied yet; trying again", "action", action, "error", err)
		return ctrl.Result{RequeueAfter: 10 * time.Second}, nil
	}
	r.Recorder.Event(cg, corev1.EventTypeNormal, "OverrideApplied", fmt.Sprintf("%s: %s", action, result))
	return ctrl.Result{}, r.clearAction(ctx, cg)
}

func (r *Reconciler) rejectAction(ctx context.Context, cg *appstudiov1alpha1.ChangeGroup, why string) error {
	action := cg.Annotations[konflux.AnnotationAction]
	if action == "" {
		return nil
	}
	r.Recorder.Event(cg, corev1.EventTypeWarning, "OverrideRejected", fmt.Sprintf("%s: %s", action, why))
	return r.clearAction(ctx, cg)
}

// clearAction removes the override annotation once it is handled; one a person
// wrote meanwhile is applied by the next reconcile.
func (r *Reconciler) clearAction(ctx context.Context, cg *appstudiov1alpha1.ChangeGroup) error {
	replaced, err := ClearOverride(ctx, r.Kube, cg)
	if replaced {
		log.FromContext(ctx).Info("a new override arrived while one was applied; it is applied next", "handled", cg.Annotations[konflux.AnnotationAction])
		return errOverrideReplaced
	}
	return err
}

// ClearOverride removes the override annotation only if it still holds the value cg
// has (the override just handled), in one JSON patch whose test operation makes the
// API server refuse the removal otherwise: a cancel written while a rebase was
// applied is kept, not swallowed. replaced reports that refusal.
func ClearOverride(ctx context.Context, c ctrlclient.Client, cg *appstudiov1alpha1.ChangeGroup) (replaced bool, err error) {
	path := "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(konflux.AnnotationAction)
	ops, err := json.Marshal([]map[string]any{
		{"op": "test", "path": path, "value": cg.Annotations[konflux.AnnotationAction]},
		{"op": "remove", "path": path},
	})
	if err != nil {
		return false, fmt.Errorf("building the patch that clears the override: %w", err)
	}
	err = c.Patch(ctx, cg.DeepCopy(), ctrlclient.RawPatch(types.JSONPatchType, ops))
	switch {
	case apierrors.IsInvalid(err) || apierrors.ReasonForError(err) == metav1.StatusReasonInvalid || apierrors.IsConflict(err) || isStatus(err, http.StatusUnprocessableEntity):
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("clearing the override of ChangeGroup %s/%s: %w", cg.Namespace, cg.Name, err)
	}
	return false, nil
}

func isStatus(err error, code int32) bool {
	var st apierrors.APIStatus
	return errors.As(err, &st) && st.Status().Code == code
}

// errOverrideReplaced requeues the group: its override annotation changed while
// the previous one was applied.
var errOverrideReplaced = errors.New("the override annotation changed while it was applied")

// ParseAction reads an override: release-now, cancel[=reason], rebase, drop=<component>.
func ParseAction(action string) (update string, args []any, err error) {
	verb, arg, _ := strings.Cut(strings.TrimSpace(action), "=")
	switch verb {
	case "release-now":
		return cgwf.UpdateReleaseNow, nil, nil
	case "rebase":
		return cgwf.UpdateRebase, nil, nil
	case "cancel":
		return cgwf.UpdateCancel, []any{cgwf.CancelRequest{Reason: arg}}, nil
	case "drop":
		if arg == "" {
			return "", nil, errors.New("drop needs a component: drop=<component>")
		}
		return cgwf.UpdateDropComponent, []any{cgwf.DropRequest{Component: arg}}, nil
	}
	return "", nil, fmt.Errorf("unknown action %q: use release-now, cancel, rebase or drop=<component>", action)
}

// isGone reports a workflow that is not running (never started or finished).
func isGone(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf) || apierrors.IsNotFound(err)
}

func deletionStarted() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !e.ObjectNew.GetDeletionTimestamp().IsZero()
	}}
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		// Status writes by the worker do not concern the workflow: only spec,
		// annotation (overrides) and deletion changes are sent on.
		For(&appstudiov1alpha1.ChangeGroup{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deletionStarted()))).
		Named("changegroup").
		Complete(r)
}
