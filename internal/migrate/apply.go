package migrate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
)

// Load reads the Components and NudgeConfigs of one namespace, or of all when ns is
// empty, and plans each namespace that has Components or a NudgeConfig.
func Load(ctx context.Context, c client.Reader, ns string) ([]*Plan, error) {
	var comps mirrorv1alpha1.ComponentList
	if err := c.List(ctx, &comps, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing Components: %w", err)
	}
	byNS := map[string][]mirrorv1alpha1.Component{}
	for _, comp := range comps.Items {
		byNS[comp.Namespace] = append(byNS[comp.Namespace], comp)
	}
	existing, err := listNudgeConfigs(ctx, c, ns)
	if err != nil {
		return nil, err
	}
	for n := range existing {
		if byNS[n] == nil {
			byNS[n] = []mirrorv1alpha1.Component{}
		}
	}
	if ns != "" && byNS[ns] == nil {
		byNS[ns] = nil
	}
	namespaces := make([]string, 0, len(byNS))
	for n := range byNS {
		namespaces = append(namespaces, n)
	}
	slices.Sort(namespaces)
	// The shipped kind's limit as the API server serves it now, read once per run.
	limit := nudgeconfigs.ShippedLimit(ctx, c)
	var groups mirrorv1beta2.ComponentGroupList
	if err := c.List(ctx, &groups, client.InNamespace(ns)); err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("listing ComponentGroups: %w", err)
	}
	groupsByNS := map[string][]mirrorv1beta2.ComponentGroup{}
	for _, g := range groups.Items {
		groupsByNS[g.Namespace] = append(groupsByNS[g.Namespace], g)
	}
	plans := make([]*Plan, 0, len(namespaces))
	for _, n := range namespaces {
		p := build(n, byNS[n], existing[n])
		p.ShippedLimit = limit
		p.Groups = groupsByNS[n]
		p.gate()
		plans = append(plans, p)
	}
	return plans, nil
}

// listNudgeConfigs reads the NudgeConfigs of both kinds (a kind the cluster does
// not serve has none), by namespace; where a namespace has both, integration-service's
// is the one in effect, as nudgeconfigs.Get reads it.
func listNudgeConfigs(ctx context.Context, c client.Reader, ns string) (map[string]*konfluxv1alpha1.NudgeConfig, error) {
	out := map[string]*konfluxv1alpha1.NudgeConfig{}
	var own konfluxv1alpha1.NudgeConfigList
	if err := c.List(ctx, &own, client.InNamespace(ns)); err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("listing NudgeConfigs (%s): %w", nudgeconfigs.Own.GroupVersion(), err)
	}
	for i := range own.Items {
		if nc := &own.Items[i]; nc.Name == nudgeconfigs.Name {
			nc.SetGroupVersionKind(nudgeconfigs.Own)
			out[nc.Namespace] = nc
		}
	}
	var shipped mirrorv1beta2.NudgeConfigList
	if err := c.List(ctx, &shipped, client.InNamespace(ns)); err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("listing NudgeConfigs (%s): %w", nudgeconfigs.Shipped.GroupVersion(), err)
	}
	for i := range shipped.Items {
		if s := &shipped.Items[i]; s.Name == nudgeconfigs.Name {
			nc, err := nudgeconfigs.FromShipped(s)
			if err != nil {
				// Converting would drop the policies it cannot read: refuse instead.
				return nil, fmt.Errorf("fix the annotation first: %w", err)
			}
			out[nc.Namespace] = nc
		}
	}
	return out, nil
}

// errNotApplicable is returned for a plan with graph problems or an edge it cannot convert.
var errNotApplicable = errors.New("the migrated nudge graph is invalid or has an edge the target kind cannot hold")

// Apply writes the plan's NudgeConfig with server-side apply under FieldManager. It
// writes nothing when the plan adds no edge, so a second run leaves the object (and
// its resourceVersion) untouched. The existing resourceVersion is part of the applied
// object: a concurrent edit makes the apply fail instead of being overwritten.
func Apply(ctx context.Context, c client.Client, p *Plan) (applied bool, err error) {
	if !p.Applicable() {
		return false, fmt.Errorf("namespace %s: %w", p.Namespace, errNotApplicable)
	}
	if !p.Changes() {
		return false, nil
	}
	u, err := Manifest(p, true)
	if err != nil {
		return false, err
	}
	// spec.nudges is an atomic list: whoever applies it owns all of it. The list
	// applied holds every existing entry unchanged, so forcing ownership moves no edge.
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return false, fmt.Errorf("applying NudgeConfig in %s: %w", p.Namespace, err)
	}
	return true, nil
}

// Manifest is the plan's NudgeConfig as an object to apply. withTarget adds the
// namespace and the resourceVersion precondition; without them it is the manifest a
// GitOps repository holds (its namespace comes from where it is synced).
//
// The manifest is of p.Target's kind. Converted to another kind it carries the
// existing NudgeConfig's labels, annotations and batching policies; written as the
// same kind it holds only spec.nudges (server-side apply leaves the rest as it is).
func Manifest(p *Plan, withTarget bool) (*unstructured.Unstructured, error) {
	nc := &konfluxv1alpha1.NudgeConfig{Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: p.Nudges}}
	if p.Converts() {
		nc.Labels, nc.Annotations, nc.Spec.Batching = maps.Clone(p.Labels), maps.Clone(p.Annotations), p.Batching
	}
	nc.SetGroupVersionKind(nudgeconfigs.Own)
	nc.Name = konfluxv1alpha1.NudgeConfigName
	if withTarget {
		nc.Namespace = p.Namespace
		if !p.Converts() {
			nc.ResourceVersion = p.ResourceVersion
		}
	}
	var target runtime.Object = nc
	if p.Target == nudgeconfigs.Shipped.GroupVersion().String() {
		shipped, err := nudgeconfigs.ToShippedWithin(nc, p.ShippedLimit)
		if err != nil {
			return nil, err
		}
		shipped.ResourceVersion = nc.ResourceVersion
		target = shipped
	} else if p.Converts() {
		delete(nc.Annotations, nudgeconfigs.AnnotationBatching)
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(target)
	if err != nil {
		return nil, fmt.Errorf("converting the NudgeConfig of %s: %w", p.Namespace, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	// Neither status nor a zero creationTimestamp belong in an applied manifest.
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}
