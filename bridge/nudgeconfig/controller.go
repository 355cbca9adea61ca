package nudgeconfig

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
	newmodel "github.com/nudgeflow/nudgeflow/api/mirror/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
	"github.com/nudgeflow/nudgeflow/internal/nudgegraph"
)

// Events on a NudgeConfig.
const (
	// ReasonNudgedBy says who nudges the config's edges (nudgeflow, build-service or
	// integration-service), once per spec generation.
	ReasonNudgedBy = builds.ReasonNudgedBy
	// ReasonBatchingIgnored: the shipped kind's batching annotation cannot be read.
	ReasonBatchingIgnored = "BatchingIgnored"
)

// Reconciler keeps the stale-reference condition of each NudgeConfig true to the
// Components that exist, and says who nudges its edges. It never deletes an entry:
// a component removed and re-created (a rename, a GitOps resync) must find its
// nudges intact.
//
// On nudgeflow's own kind it writes the Valid condition (ADR 67's wording). On
// integration-service's kind it writes the StaleReferences condition exactly as
// integration-service does (same type, reasons and message), which
// integration-service only refreshes when a build of the namespace nudges; the two
// writers never disagree.
type Reconciler struct {
	Client client.Client
	// Shipped: this reconciler serves appstudio.redhat.com/v1beta2, else konflux-ci.dev.
	Shipped  bool
	Peers    builds.Peers
	Recorder record.EventRecorder

	// reported remembers, per NudgeConfig UID, the generation and summary last told
	// in a NudgedBy Event, so component churn does not repeat it. A restart tells
	// it once more.
	reported sync.Map
}

// SetupWithManager watches NudgeConfigs (spec changes only: our own status writes must
// not wake us) and the creation and deletion of Components, which map to their
// namespace's singleton. Components are cached as metadata only: the names are all
// this controller reads.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	component := &metav1.PartialObjectMetadata{}
	component.SetGroupVersionKind(mirrorv1alpha1.GroupVersion.WithKind("Component"))
	var obj client.Object = &konfluxv1alpha1.NudgeConfig{}
	name := "nudgeconfig-stale-references"
	if r.Shipped {
		obj, name = &mirrorv1beta2.NudgeConfig{}, "nudgeconfig-appstudio-stale-references"
	}
	createOrDelete := builder.WithPredicates(predicate.Funcs{
		UpdateFunc: func(event.UpdateEvent) bool { return false },
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(obj, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesMetadata(component, handler.EnqueueRequestsFromMapFunc(toNamespaceConfig), createOrDelete)
	// New-model Components (konflux-ci.dev, ADR 56) name edges too, where their CRD
	// is served: a watch of a kind the API server does not serve would stop the
	// manager from starting. A CRD installed later is watched after a restart;
	// until then its Components still count at every reconcile (components.Names).
	newComponent := &metav1.PartialObjectMetadata{}
	newComponent.SetGroupVersionKind(newmodel.GroupVersion.WithKind("Component"))
	if _, err := mgr.GetRESTMapper().RESTMapping(newmodel.GroupVersion.WithKind("Component").GroupKind(), newmodel.GroupVersion.Version); err == nil {
		b = b.WatchesMetadata(newComponent, handler.EnqueueRequestsFromMapFunc(toNamespaceConfig), createOrDelete)
	}
	return b.Complete(r)
}

func toNamespaceConfig(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{
		Namespace: obj.GetNamespace(), Name: konfluxv1alpha1.NudgeConfigName,
	}}}
}

// +kubebuilder:rbac:groups=konflux-ci.dev,resources=nudgeconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=konflux-ci.dev,resources=nudgeconfigs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=nudgeconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=nudgeconfigs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=components,verbs=get;list;watch
// +kubebuilder:rbac:groups=konflux-ci.dev,resources=components,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile compares the referenced components with those that exist and patches status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.Shipped {
		return r.reconcileShipped(ctx, req)
	}
	log := ctrl.LoggerFrom(ctx)
	var nc konfluxv1alpha1.NudgeConfig
	if err := r.Client.Get(ctx, req.NamespacedName, &nc); err != nil {
		// A Component event in a namespace without a NudgeConfig lands here: nothing to do.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	existing, err := componentNames(ctx, r.Client, req.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	missing := nudgegraph.Missing(nc.Spec.Nudges, func(n string) bool { return existing[n] })

	base := nc.DeepCopy()
	meta.SetStatusCondition(&nc.Status.Conditions, validCondition(missing, nc.Generation))
	now := metav1.Now()
	nc.Status.LastValidationTime = &now
	if err := r.Client.Status().Patch(ctx, &nc, client.MergeFrom(base)); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("patching status of NudgeConfig %s: %w", req.NamespacedName, err)
	}
	nc.SetGroupVersionKind(nudgeconfigs.Own)
	r.tellNudgedBy(ctx, &nc, &nc)
	log.V(1).Info("validated NudgeConfig references", "missing", missing, "edges", len(nc.Spec.Nudges))
	return ctrl.Result{}, nil
}

func (r *Reconciler) reconcileShipped(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var shipped mirrorv1beta2.NudgeConfig
	if err := r.Client.Get(ctx, req.NamespacedName, &shipped); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	nc, err := nudgeconfigs.FromShipped(&shipped)
	var batching *nudgeconfigs.BatchingError
	if errors.As(err, &batching) {
		r.Recorder.Event(&shipped, corev1.EventTypeWarning, ReasonBatchingIgnored, batching.Error())
	} else if err != nil {
		return ctrl.Result{}, err
	}
	existing, err := componentNames(ctx, r.Client, req.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	cond := staleReferencesCondition(shipped.Spec.Nudges, existing, req.Namespace, shipped.Generation)
	if prev := meta.FindStatusCondition(shipped.Status.Conditions, cond.Type); prev == nil ||
		prev.Status != cond.Status || prev.Reason != cond.Reason || prev.Message != cond.Message {
		// Optimistic lock: the list of conditions is integration-service's too, so it
		// is written back only over the version read.
		base := shipped.DeepCopy()
		meta.SetStatusCondition(&shipped.Status.Conditions, cond)
		if err := r.Client.Status().Patch(ctx, &shipped, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsNotFound(err) {
				return ctrl.Result{}, nil
			}
			return ctrl.Result{}, fmt.Errorf("patching status of NudgeConfig %s (%s): %w", req.NamespacedName, nudgeconfigs.Shipped.GroupVersion(), err)
		}
	}
	r.tellNudgedBy(ctx, &shipped, nc)
	return ctrl.Result{}, nil
}

// staleReferencesCondition is integration-service's StaleReferences condition
// (helpers/nudges.go FindMissingNudgeConfigReferences and the build-pipeline
// adapter's checkNudgeConfigForStaleReferences), byte for byte.
func staleReferencesCondition(nudges []mirrorv1beta2.NudgeRelationship, existing map[string]bool, namespace string, generation int64) metav1.Condition {
	var missingFrom, missingTo []string
	seenFrom, seenTo := map[string]bool{}, map[string]bool{}
	for _, n := range nudges {
		if !existing[n.From] && !seenFrom[n.From] {
			seenFrom[n.From] = true
			missingFrom = append(missingFrom, n.From)
		}
		if !existing[n.To] && !seenTo[n.To] {
			seenTo[n.To] = true
			missingTo = append(missingTo, n.To)
		}
	}
	cond := metav1.Condition{Type: mirrorv1beta2.ConditionStaleReferences, ObservedGeneration: generation}
	if len(missingFrom) == 0 && len(missingTo) == 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, mirrorv1beta2.ReasonNoStaleReferences
		cond.Message = "All Components referenced in the NudgeConfig are present, no stale references found."
		return cond
	}
	msg := fmt.Sprintf("NudgeConfig references non-existent Component(s) in namespace %q", namespace)
	if len(missingFrom) > 0 {
		msg += fmt.Sprintf("; missing 'from' component(s): %s", strings.Join(missingFrom, ", "))
	}
	if len(missingTo) > 0 {
		msg += fmt.Sprintf("; missing 'to' component(s): %s", strings.Join(missingTo, ", "))
	}
	cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, mirrorv1beta2.ReasonStaleReferencesDetected, msg
	return cond
}

// nudgedBy summarises who nudges the edges of nc beside peers, by runner, e.g.
// "integration-service: a -> b; nudgeflow: a -> c (validated)". nudgesRef are
// the build-nudges-ref of the namespace's Components, by name.
func nudgedBy(nc *konfluxv1alpha1.NudgeConfig, peers builds.Peers, nudgesRef map[string][]string) string {
	byRunner := map[builds.Runner][]string{}
	for _, n := range nc.Spec.Nudges {
		comp := &mirrorv1alpha1.Component{Spec: mirrorv1alpha1.ComponentSpec{BuildNudgesRef: nudgesRef[n.From]}}
		for _, e := range builds.EdgesFrom(nc, comp, n.From) {
			if e.To != n.To {
				continue
			}
			desc := e.From + " -> " + e.To
			if e.Mode == konfluxv1alpha1.ModeValidated {
				desc += " (validated)"
			}
			runner := peers.RunnerOf(e)
			byRunner[runner] = append(byRunner[runner], desc)
		}
	}
	runners := make([]string, 0, len(byRunner))
	for r := range byRunner {
		runners = append(runners, string(r))
	}
	sort.Strings(runners)
	parts := make([]string, 0, len(runners))
	for _, r := range runners {
		edges := byRunner[builds.Runner(r)]
		const most = 20
		if len(edges) > most {
			edges = append(edges[:most:most], fmt.Sprintf("and %d more", len(byRunner[builds.Runner(r)])-most))
		}
		who := r
		if builds.Runner(r) == builds.RunnerIntegrationService {
			// Its GitHub App path nudges nothing (bridge/builds/takeover.go).
			who += " (nudgeflow for a target it leaves out or does not decide on in time)"
		}
		parts = append(parts, who+": "+strings.Join(edges, ", "))
	}
	if len(parts) == 0 {
		return "no edges"
	}
	return strings.Join(parts, "; ")
}

// tellNudgedBy records the NudgedBy Event on obj once per generation and summary.
func (r *Reconciler) tellNudgedBy(ctx context.Context, obj client.Object, nc *konfluxv1alpha1.NudgeConfig) {
	if r.Recorder == nil {
		return
	}
	refs, err := nudgesRefs(ctx, r.Client, nc.Namespace)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "cannot tell who nudges the NudgeConfig's edges")
		return
	}
	summary := nudgedBy(nc, r.Peers, refs)
	key := fmt.Sprintf("%d/%s", obj.GetGeneration(), summary)
	if prev, ok := r.reported.Load(obj.GetUID()); ok && prev == key {
		return
	}
	r.reported.Store(obj.GetUID(), key)
	r.Recorder.Eventf(obj, corev1.EventTypeNormal, ReasonNudgedBy, "edges nudged by (peers: %s): %s", r.Peers, summary)
}

// nudgesRefs reads each Component's build-nudges-ref (which edges build-service
// runs beside nudgeflow's own kind).
func nudgesRefs(ctx context.Context, c client.Reader, ns string) (map[string][]string, error) {
	var list mirrorv1alpha1.ComponentList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing Components in %s: %w", ns, err)
	}
	out := make(map[string][]string, len(list.Items))
	for _, comp := range list.Items {
		if len(comp.Spec.BuildNudgesRef) > 0 {
			out[comp.Name] = comp.Spec.BuildNudgesRef
		}
	}
	return out, nil
}

// validCondition is the Valid condition for a set of missing components (ADR 67's
// wording).
func validCondition(missing []string, generation int64) metav1.Condition {
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
