package nudgeconfig

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/nudgegraph"
)

// Reconciler keeps the Valid condition of each NudgeConfig true to the Components that
// exist. It reports stale references and never deletes an entry: a component removed
// and re-created (a rename, a GitOps resync) must find its nudges intact.
type Reconciler struct {
	Client client.Client
}

// SetupWithManager watches NudgeConfigs (spec changes only: our own status writes must
// not wake us) and the creation and deletion of Components, which map to their
// namespace's singleton. Components are cached as metadata only: the names are all
// this controller reads.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	component := &metav1.PartialObjectMetadata{}
	component.SetGroupVersionKind(mirrorv1alpha1.GroupVersion.WithKind("Component"))
	return ctrl.NewControllerManagedBy(mgr).
		Named("nudgeconfig-stale-references").
		For(&konfluxv1alpha1.NudgeConfig{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesMetadata(component, handler.EnqueueRequestsFromMapFunc(toNamespaceConfig),
			builder.WithPredicates(predicate.Funcs{
				UpdateFunc: func(event.UpdateEvent) bool { return false },
			})).
		Complete(r)
}

func toNamespaceConfig(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{
		Namespace: obj.GetNamespace(), Name: konfluxv1alpha1.NudgeConfigName,
	}}}
}

// +kubebuilder:rbac:groups=konflux-ci.dev,resources=nudgeconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=konflux-ci.dev,resources=nudgeconfigs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=components,verbs=get;list;watch

// Reconcile compares the referenced components with those that exist and patches status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var nc konfluxv1alpha1.NudgeConfig
	if err := r.Client.Get(ctx, req.NamespacedName, &nc); err != nil {
		// A Component event in a namespace without a NudgeConfig lands here: nothing to do.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	existing, err := ComponentNames(ctx, r.Client, req.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	missing := nudgegraph.Missing(nc.Spec.Nudges, func(n string) bool { return existing[n] })

	base := nc.DeepCopy()
	meta.SetStatusCondition(&nc.Status.Conditions, ValidCondition(missing, nc.Generation))
	now := metav1.Now()
	nc.Status.LastValidationTime = &now
	if err := r.Client.Status().Patch(ctx, &nc, client.MergeFrom(base)); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("patching status of NudgeConfig %s: %w", req.NamespacedName, err)
	}
	log.V(1).Info("validated NudgeConfig references", "missing", missing, "edges", len(nc.Spec.Nudges))
	return ctrl.Result{}, nil
}

// ValidCondition is the Valid condition for a set of missing components (ADR 67's
// wording).
func ValidCondition(missing []string, generation int64) metav1.Condition {
	if len(missing) == 0 {
		return metav1.Condition{
			Type: konfluxv1alpha1.ConditionValid, Status: metav1.ConditionTrue,
			Reason: konfluxv1alpha1.ReasonAllComponentsExist, ObservedGeneration: generation,
			Message: "All referenced components exist in namespace",
		}
	}
	return metav1.Condition{
		Type: konfluxv1alpha1.ConditionValid, Status: metav1.ConditionFalse,
		Reason: konfluxv1alpha1.ReasonStaleReferences, ObservedGeneration: generation,
		Message: fmt.Sprintf("Components [%s] referenced in nudges no longer exist", strings.Join(missing, ", ")),
	}
}
