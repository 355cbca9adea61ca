// Package autogroupprune is the bridge side of batched nudging (ADR 67 Phase 2) besides
// the build router (bridge/builds opens and joins automatic ChangeGroups): it keeps
// automatic groups in step with what outranks them.
//
//   - A manual ChangeGroup takes precedence: when one collects members of an open
//     automatic group of the same target, those members leave the automatic group
//     (the whole group is deleted when none is left). The automatic group's workflow
//     hands their held builds back; the hand-back nudges are intercepted by the
//     manual group (lookups prefer manual groups), so the builds move over.
//   - An automatic group is owned by its NudgeConfig. When the NudgeConfig is gone,
//     the group is deleted (what the garbage collector does on a cluster; the bridge
//     does not wait for it): its workflow closes the PR and hands every held build
//     back to normal nudging.
package autogroupprune

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
)

// Event reasons on an automatic ChangeGroup.
const (
	ReasonSupersededByManual = "SupersededByManualChangeGroup"
	ReasonOwnerGone          = "NudgeConfigDeleted"
)

// Reconciler reconciles ChangeGroups of batched targets.
type Reconciler struct {
	Kube ctrlclient.Client
	// Live reads the owner NudgeConfig past the cache: a NudgeConfig created a
	// moment ago must not look deleted.
	Live     ctrlclient.Reader
	Recorder record.EventRecorder
}

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=changegroups,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=konflux-ci.dev,resources=nudgeconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=nudgeconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile handles one ChangeGroup.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cg appstudiov1alpha1.ChangeGroup
	if err := r.Kube.Get(ctx, req.NamespacedName, &cg); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	if !grouplookup.Collecting(&cg) {
		return ctrl.Result{}, nil
	}
	if grouplookup.IsAutomatic(&cg) {
		return ctrl.Result{}, r.checkOwner(ctx, &cg)
	}
	return ctrl.Result{}, r.takeOver(ctx, &cg)
}

// checkOwner deletes an automatic group whose NudgeConfig is gone.
func (r *Reconciler) checkOwner(ctx context.Context, cg *appstudiov1alpha1.ChangeGroup) error {
	nc, err := nudgeconfigs.Get(ctx, r.Live, cg.Namespace)
	if err = nudgeconfigs.IgnoreBatchingError(err); err != nil {
		return fmt.Errorf("reading the NudgeConfig that owns ChangeGroup %s/%s: %w", cg.Namespace, cg.Name, err)
	}
	if nc != nil && ownedBy(cg, nc) {
		return nil
	}
	r.Recorder.Event(cg, corev1.EventTypeNormal, ReasonOwnerGone,
		"the NudgeConfig that opened this batch is gone: the group is deleted, its PR closed and every held build handed back to normal nudging")
	log.FromContext(ctx).Info("deleting an automatic ChangeGroup whose NudgeConfig is gone", "changeGroup", cg.Name)
	return ctrlclient.IgnoreNotFound(r.Kube.Delete(ctx, cg, ctrlclient.Preconditions{UID: &cg.UID}))
}

func ownedBy(cg *appstudiov1alpha1.ChangeGroup, nc *konfluxv1alpha1.NudgeConfig) bool {
	refs := cg.GetOwnerReferences()
	if len(refs) == 0 {
		return true // not owned (written by hand): nothing to follow
	}
	return slices.ContainsFunc(refs, func(o metav1.OwnerReference) bool { return o.Kind == "NudgeConfig" && o.UID == nc.UID })
}

// takeOver takes the members a manual group collects out of every open automatic
// group of its target.
func (r *Reconciler) takeOver(ctx context.Context, manual *appstudiov1alpha1.ChangeGroup) error {
	var list appstudiov1alpha1.ChangeGroupList
	if err := r.Kube.List(ctx, &list, ctrlclient.InNamespace(manual.Namespace), ctrlclient.MatchingLabels{grouplookup.LabelAutomatic: "true"}); err != nil {
		return fmt.Errorf("listing automatic ChangeGroups of %s: %w", manual.Namespace, err)
	}
	for i := range list.Items {
		auto := &list.Items[i]
		if auto.Spec.NudgedComponent != manual.Spec.NudgedComponent || !grouplookup.Collecting(auto) {
			continue
		}
		var keep, moved []appstudiov1alpha1.NudgingComponentRef
		for _, m := range auto.Spec.NudgingComponents {
			if len(manual.Spec.NudgingComponents) == 0 || grouplookup.Holds(manual, m.Name, manual.Spec.NudgedComponent) {
				moved = append(moved, m)
			} else {
				keep = append(keep, m)
			}
		}
		if len(moved) == 0 {
			continue
		}
		names := refNames(moved)
		if len(keep) == 0 {
			r.Recorder.Event(auto, corev1.EventTypeNormal, ReasonSupersededByManual, fmt.Sprintf(
				"ChangeGroup %s collects every member of this batch (%s): this group is deleted and hands its held builds over", manual.Name, names))
			log.FromContext(ctx).Info("manual ChangeGroup takes over an automatic one", "manual", manual.Name, "automatic", auto.Name)
			if err := r.Kube.Delete(ctx, auto, ctrlclient.Preconditions{UID: &auto.UID}); ctrlclient.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting automatic ChangeGroup %s superseded by %s: %w", auto.Name, manual.Name, err)
			}
			continue
		}
		patch := ctrlclient.MergeFromWithOptions(auto.DeepCopy(), ctrlclient.MergeFromWithOptimisticLock{})
		auto.Spec.NudgingComponents = keep
		if err := r.Kube.Patch(ctx, auto, patch); ctrlclient.IgnoreNotFound(err) != nil {
			return fmt.Errorf("moving %s from automatic ChangeGroup %s to %s: %w", names, auto.Name, manual.Name, err)
		}
		r.Recorder.Event(auto, corev1.EventTypeNormal, ReasonSupersededByManual, fmt.Sprintf(
			"ChangeGroup %s now collects %s: they left this batch, which hands their held builds over", manual.Name, names))
		log.FromContext(ctx).Info("manual ChangeGroup takes members of an automatic one", "manual", manual.Name, "automatic", auto.Name, "members", names)
	}
	return nil
}

func refNames(refs []appstudiov1alpha1.NudgingComponentRef) string {
	out := ""
	for i, r := range refs {
		if i > 0 {
			out += ", "
		}
		out += r.Name
	}
	return out
}

// SetupWithManager watches ChangeGroups, and NudgeConfigs for their deletion (each
// enqueues the namespace's automatic groups).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	toAutomatic := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o ctrlclient.Object) []reconcile.Request {
		var list appstudiov1alpha1.ChangeGroupList
		if err := mgr.GetClient().List(ctx, &list, ctrlclient.InNamespace(o.GetNamespace()), ctrlclient.MatchingLabels{grouplookup.LabelAutomatic: "true"}); err != nil {
			log.FromContext(ctx).Error(err, "listing automatic ChangeGroups for a NudgeConfig change")
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for _, cg := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: cg.Namespace, Name: cg.Name}})
		}
		return out
	})
	deletes := builder.WithPredicates(predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	})
	b := ctrl.NewControllerManagedBy(mgr).Named("changegroup-batching").
		For(&appstudiov1alpha1.ChangeGroup{}, builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	// Either kind may own automatic groups; a manager cannot watch a kind the API
	// server does not serve.
	shipped, own, err := nudgeconfigs.Served(mgr.GetRESTMapper())
	if err != nil {
		return err
	}
	if own {
		b = b.Watches(&konfluxv1alpha1.NudgeConfig{}, toAutomatic, deletes)
	}
	if shipped {
		b = b.Watches(&mirrorv1beta2.NudgeConfig{}, toAutomatic, deletes)
	}
	return b.Complete(r)
}
