package nudgeconfig

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
	"github.com/nudgeflow/nudgeflow/internal/components"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
	"github.com/nudgeflow/nudgeflow/internal/nudgegraph"
)

// The webhook's configuration is handwritten in deploy/webhooks/nudgeconfig.yaml
// (controller-gen's marker cannot express the namespaceSelector) and names WebhookPath.
//
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=components,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=componentgroups,verbs=get;list;watch

// webhookPath is where the API server sends NudgeConfig admission reviews.
const webhookPath = "/validate-konflux-ci-dev-v1alpha1-nudgeconfig"

// Validator admits a NudgeConfig only when its graph is sound and, for the edges a
// request adds, both components exist. Edges that were already stored are not checked
// for existence again: a component deleted later is the stale-reference controller's to
// report, and it must never block an unrelated edit of the config.
type Validator struct {
	// Reader reads the API server directly: the manager's cache may not have seen a
	// Component created a moment before the NudgeConfig that names it.
	Reader client.Reader
}

var _ admission.CustomValidator = &Validator{}

var (
	nudgesPath   = field.NewPath("spec", "nudges")
	batchingPath = field.NewPath("spec", "batching")
)

// ValidateCreate checks every edge.
func (v *Validator) ValidateCreate(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	nc, ok := obj.(*konfluxv1alpha1.NudgeConfig)
	if !ok {
		return nil, fmt.Errorf("expected a NudgeConfig, got %T", obj)
	}
	all := make([]int, len(nc.Spec.Nudges))
	for i := range all {
		all[i] = i
	}
	return v.validate(ctx, nc, all, addedValidated(nil, nc.Spec.Nudges), addedUngated(nil, nc.Spec.Nudges))
}

// ValidateUpdate checks the whole graph and the existence of the edges the update adds.
func (v *Validator) ValidateUpdate(ctx context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	prev, ok := oldObj.(*konfluxv1alpha1.NudgeConfig)
	if !ok {
		return nil, fmt.Errorf("expected a NudgeConfig, got %T", oldObj)
	}
	nc, ok := newObj.(*konfluxv1alpha1.NudgeConfig)
	if !ok {
		return nil, fmt.Errorf("expected a NudgeConfig, got %T", newObj)
	}
	return v.validate(ctx, nc, nudgegraph.Added(prev.Spec.Nudges, nc.Spec.Nudges), addedValidated(prev.Spec.Nudges, nc.Spec.Nudges),
		addedUngated(prev.Spec.Nudges, nc.Spec.Nudges))
}

// addedValidated are the indexes of nc's validated entries that prev did not have
// as validated: new pairs, and immediate entries turned validated. Only these are
// checked against build-nudges-ref (validatedAlsoInNudgesRef), so a CR stored
// before the rule stays updatable.
func addedValidated(prev, next []konfluxv1alpha1.NudgeRelationship) []int {
	was := map[[2]string]bool{}
	for _, e := range prev {
		if e.EffectiveMode() == konfluxv1alpha1.ModeValidated {
			was[[2]string{e.From, e.To}] = true
		}
	}
	var out []int
	for i, e := range next {
		if e.EffectiveMode() == konfluxv1alpha1.ModeValidated && !was[[2]string{e.From, e.To}] {
			out = append(out, i)
		}
	}
	return out
}

// addedUngated are the indexes of nc's validated entries without a gatingGroup that
// prev did not have as such: new pairs, immediate entries turned validated, and
// gatingGroups removed. ADR 67 requires the group when mode is validated; nudgeflow
// admitted ungated edges for a while (they gate on any Snapshot holding the build,
// as integration-service's kind allows), so only what a request adds is refused and
// a CR stored then stays updatable.
func addedUngated(prev, next []konfluxv1alpha1.NudgeRelationship) []int {
	ungated := func(e konfluxv1alpha1.NudgeRelationship) bool {
		return e.EffectiveMode() == konfluxv1alpha1.ModeValidated && e.GatingGroup == ""
	}
	was := map[[2]string]bool{}
	for _, e := range prev {
		if ungated(e) {
			was[[2]string{e.From, e.To}] = true
		}
	}
	var out []int
	for i, e := range next {
		if ungated(e) && !was[[2]string{e.From, e.To}] {
			out = append(out, i)
		}
	}
	return out
}

// ungatedProblems refuses the added ungated validated edges, each naming the field
// to add and the ComponentGroups that hold the source (one LIST of the namespace's
// groups), so the fix is one line.
func (v *Validator) ungatedProblems(ctx context.Context, nc *konfluxv1alpha1.NudgeConfig, ungated []int) (field.ErrorList, error) {
	var groups mirrorv1beta2.ComponentGroupList
	if err := v.Reader.List(ctx, &groups, client.InNamespace(nc.Namespace)); err != nil {
		return nil, fmt.Errorf("listing ComponentGroups in %s to name gating groups: %w", nc.Namespace, err)
	}
	var errs field.ErrorList
	for _, i := range ungated {
		e := nc.Spec.Nudges[i]
		candidates := "no ComponentGroup in namespace " + nc.Namespace + " lists " + e.From + " yet"
		if held := nudgeconfigs.GroupsHolding(groups.Items, e.From); len(held) > 0 {
			candidates = "ComponentGroups listing " + e.From + ": " + strings.Join(held, ", ")
		}
		errs = append(errs, field.Required(nudgesPath.Index(i).Child("gatingGroup"), fmt.Sprintf(
			"validated edge %s -> %s needs a gatingGroup (ADR 67: required when mode is validated): add `gatingGroup: <a ComponentGroup>` naming the group whose Snapshot must pass before %s is nudged (%s), or make this edge immediate",
			e.From, e.To, e.To, candidates)))
	}
	return errs, nil
}

// ValidateDelete admits every delete: removing all edges is always safe.
func (v *Validator) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func (v *Validator) validate(ctx context.Context, nc *konfluxv1alpha1.NudgeConfig, added, validated, ungated []int) (admission.Warnings, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("namespace", nc.Namespace, "edges", len(nc.Spec.Nudges), "added", len(added))
	var errs field.ErrorList
	for _, p := range nudgegraph.Check(nc.Spec.Nudges) {
		path := nudgesPath
		if p.Kind != nudgegraph.Cycle {
			path = nudgesPath.Index(p.Entries[len(p.Entries)-1])
		}
		errs = append(errs, field.Forbidden(path, p.Message))
	}
	errs = append(errs, batchingProblems(nc)...)

	var warnings admission.Warnings
	if len(added) > 0 {
		// One LIST per admission, not one GET per edge: a 5000-edge config stays one call.
		existing, err := componentNames(ctx, v.Reader, nc.Namespace)
		if err != nil {
			return nil, err
		}
		errs = append(errs, unknownComponents(nc, added, existing)...)
		if warnings, err = v.gatingGroupWarnings(ctx, nc, added); err != nil {
			return nil, err
		}
	}
	if len(ungated) > 0 {
		problems, err := v.ungatedProblems(ctx, nc, ungated)
		if err != nil {
			return nil, err
		}
		errs = append(errs, problems...)
	}
	if len(validated) > 0 {
		problems, err := v.validatedAlsoInNudgesRef(ctx, nc, validated)
		if err != nil {
			return nil, err
		}
		errs = append(errs, problems...)
	}
	if len(errs) > 0 {
		log.V(1).Info("rejecting NudgeConfig", "problems", len(errs))
		return warnings, apierrors.NewInvalid(konfluxv1alpha1.GroupVersion.WithKind("NudgeConfig").GroupKind(), nc.Name, errs)
	}
	return warnings, nil
}

// validatedAlsoInNudgesRef refuses a validated edge whose source Component still
// names the target in build-nudges-ref. build-service ignores
// this kind of NudgeConfig and nudges every build-nudges-ref target at build time,
// ungated; nudgeflow would nudge the same target again after the tests: two pull
// requests, the first one past the gate. Refused rather than held: the refusal
// keeps the gate with nothing to coordinate, and its message says the one edit
// that fixes it. It holds wherever build-service may run (the bridge's peer
// setting is the deployment's, and can change after the CR is stored); where it
// does not, the entry is dead configuration beside a NudgeConfig anyway. One LIST
// of the namespace's Components.
func (v *Validator) validatedAlsoInNudgesRef(ctx context.Context, nc *konfluxv1alpha1.NudgeConfig, validated []int) (field.ErrorList, error) {
	var list mirrorv1alpha1.ComponentList
	if err := v.Reader.List(ctx, &list, client.InNamespace(nc.Namespace)); err != nil {
		return nil, fmt.Errorf("listing Components in %s: %w", nc.Namespace, err)
	}
	refs := make(map[string][]string, len(list.Items))
	for _, c := range list.Items {
		refs[c.Name] = c.Spec.BuildNudgesRef
	}
	var errs field.ErrorList
	for _, i := range validated {
		e := nc.Spec.Nudges[i]
		if slices.Contains(refs[e.From], e.To) {
			errs = append(errs, field.Forbidden(nudgesPath.Index(i), fmt.Sprintf(
				"validated edge %s -> %s: Component %s still lists %s in spec.build-nudges-ref, so build-service nudges %s at build time, before the tests gate it; remove %q from Component %s's build-nudges-ref first (or make this edge immediate)",
				e.From, e.To, e.From, e.To, e.To, e.To, e.From)))
		}
	}
	return errs, nil
}

// unknownComponents gives one error per component that does not exist, naming the
// entries that reference it, so a large paste with one typo reads as one line.
func unknownComponents(nc *konfluxv1alpha1.NudgeConfig, added []int, existing map[string]bool) field.ErrorList {
	refs := map[string][]int{}
	var order []string
	note := func(name string, i int) {
		if existing[name] {
			return
		}
		if refs[name] == nil {
			order = append(order, name)
		}
		if r := refs[name]; len(r) == 0 || r[len(r)-1] != i {
			refs[name] = append(r, i)
		}
	}
	for _, i := range added {
		note(nc.Spec.Nudges[i].From, i)
		note(nc.Spec.Nudges[i].To, i)
	}
	slices.Sort(order)
	var errs field.ErrorList
	for _, name := range order {
		entries := refs[name]
		errs = append(errs, field.NotFound(nudgesPath.Index(entries[0]),
			fmt.Sprintf("component %s does not exist in namespace %s (referenced by %s)",
				name, nc.Namespace, describeEntries(nc.Spec.Nudges, entries))))
	}
	return errs
}

// gatingGroupWarnings warns, without rejecting, about validated edges whose gating
// ComponentGroup does not exist yet: groups are often created after the config, and
// such an edge simply waits until its group exists.
func (v *Validator) gatingGroupWarnings(ctx context.Context, nc *konfluxv1alpha1.NudgeConfig, added []int) (admission.Warnings, error) {
	byGroup := map[string][]int{}
	for _, i := range added {
		e := nc.Spec.Nudges[i]
		if e.EffectiveMode() == konfluxv1alpha1.ModeValidated && e.GatingGroup != "" {
			byGroup[e.GatingGroup] = append(byGroup[e.GatingGroup], i)
		}
	}
	if len(byGroup) == 0 {
		return nil, nil
	}
	groups := &metav1.PartialObjectMetadataList{}
	groups.SetGroupVersionKind(mirrorv1beta2.GroupVersion.WithKind("ComponentGroupList"))
	if err := v.Reader.List(ctx, groups, client.InNamespace(nc.Namespace)); err != nil {
		return nil, fmt.Errorf("listing ComponentGroups in %s to check gating groups: %w", nc.Namespace, err)
	}
	exists := map[string]bool{}
	for _, g := range groups.Items {
		exists[g.Name] = true
	}
	var missing []string
	for g := range byGroup {
		if !exists[g] {
			missing = append(missing, g)
		}
	}
	slices.Sort(missing)
	var warnings admission.Warnings
	for _, g := range missing {
		warnings = append(warnings, fmt.Sprintf(
			"gatingGroup %s does not exist yet in namespace %s: validated nudges %s wait until it exists",
			g, nc.Namespace, describeEntries(nc.Spec.Nudges, byGroup[g])))
	}
	return warnings, nil
}

// componentNames lists the names of the Components of a namespace, of either kind
// (appstudio and new-model konflux-ci.dev), metadata only.
func componentNames(ctx context.Context, r client.Reader, ns string) (map[string]bool, error) {
	return components.Names(ctx, r, ns)
}

// describeEntries renders "entry 3 (a -> b)" lists, bounded so a message about
// thousands of entries stays readable.
func describeEntries(nudges []konfluxv1alpha1.NudgeRelationship, entries []int) string {
	const most = 5
	parts := make([]string, 0, most+1)
	for _, i := range entries[:min(len(entries), most)] {
		parts = append(parts, fmt.Sprintf("entry %d (%s -> %s)", i, nudges[i].From, nudges[i].To))
	}
	if len(entries) > most {
		parts = append(parts, fmt.Sprintf("%d more", len(entries)-most))
	}
	return strings.Join(parts, ", ")
}

// batchingProblems checks spec.batching against the graph (what CEL cannot see): a
// batched target must be nudged by some edge, and a quorum cannot exceed the
// number of its nudgers (a window could then never release). Each message says how
// to fix it.
func batchingProblems(nc *konfluxv1alpha1.NudgeConfig) field.ErrorList {
	var errs field.ErrorList
	for i, p := range nc.Spec.Batching {
		nudgers := nc.Spec.NudgersOf(p.Target)
		path := batchingPath.Index(i)
		if len(nudgers) == 0 {
			errs = append(errs, field.Invalid(path.Child("target"), p.Target, fmt.Sprintf(
				"no nudge targets %s: add an entry with to: %s to spec.nudges, or remove this batching policy", p.Target, p.Target)))
			continue
		}
		if p.Quorum != nil && int(*p.Quorum) > len(nudgers) {
			errs = append(errs, field.Invalid(path.Child("quorum"), *p.Quorum, fmt.Sprintf(
				"quorum %d is more than the %d component(s) nudging %s (%s): lower it to at most %d, or use release: all",
				*p.Quorum, len(nudgers), p.Target, strings.Join(nudgers, ", "), len(nudgers))))
		}
	}
	return errs
}
