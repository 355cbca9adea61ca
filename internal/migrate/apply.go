package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
)

// Load reads the Components and NudgeConfigs of one namespace, or of all when ns is
// empty, and plans each namespace that has Components or a NudgeConfig.
func Load(ctx context.Context, c client.Reader, ns string) ([]*Plan, error) {
	var comps mirrorv1alpha1.ComponentList
	if err := c.List(ctx, &comps, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing Components: %w", err)
	}
	var configs konfluxv1alpha1.NudgeConfigList
	if err := c.List(ctx, &configs, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing NudgeConfigs: %w", err)
	}
	byNS := map[string][]mirrorv1alpha1.Component{}
	for _, comp := range comps.Items {
		byNS[comp.Namespace] = append(byNS[comp.Namespace], comp)
	}
	existing := map[string]*konfluxv1alpha1.NudgeConfig{}
	for i := range configs.Items {
		if nc := &configs.Items[i]; nc.Name == konfluxv1alpha1.NudgeConfigName {
			existing[nc.Namespace] = nc
			if byNS[nc.Namespace] == nil {
				byNS[nc.Namespace] = []mirrorv1alpha1.Component{}
			}
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
	plans := make([]*Plan, 0, len(namespaces))
	for _, n := range namespaces {
		plans = append(plans, Build(n, byNS[n], existing[n]))
	}
	return plans, nil
}

// ErrNotApplicable is returned for a plan with graph problems.
var ErrNotApplicable = errors.New("the migrated nudge graph is invalid")

// Apply writes the plan's NudgeConfig with server-side apply under FieldManager. It
// writes nothing when the plan adds no edge, so a second run leaves the object (and
// its resourceVersion) untouched. The existing resourceVersion is part of the applied
// object: a concurrent edit makes the apply fail instead of being overwritten.
func Apply(ctx context.Context, c client.Client, p *Plan) (applied bool, err error) {
	if !p.Applicable() {
		return false, fmt.Errorf("namespace %s: %w", p.Namespace, ErrNotApplicable)
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
func Manifest(p *Plan, withTarget bool) (*unstructured.Unstructured, error) {
	nc := &konfluxv1alpha1.NudgeConfig{Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: p.Nudges}}
	nc.SetGroupVersionKind(konfluxv1alpha1.GroupVersion.WithKind("NudgeConfig"))
	nc.Name = konfluxv1alpha1.NudgeConfigName
	if withTarget {
		nc.Namespace = p.Namespace
		nc.ResourceVersion = p.ResourceVersion
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(nc)
	if err != nil {
		return nil, fmt.Errorf("converting the NudgeConfig of %s: %w", p.Namespace, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	// Neither status nor a zero creationTimestamp belong in an applied manifest.
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}
