// Package components reads Konflux Components of either kind: the appstudio.redhat.com
// Component (old model) and the konflux-ci.dev one (new model, ADR 56), which
// build-service already builds (BS:internal/controller/component_build_controller_v2.go
// at ccde63a) and whose builds carry ADR 69's new keys.
//
// Names resolve to the appstudio Component while one of that name exists, else to
// the konflux-ci.dev one. Konflux's migration keeps both for the same component
// while it dual-writes (build-service shares one ServiceAccount between "old and
// new model component with the same name", BS 7d3f204), and during that phase the
// appstudio one is what every other Konflux service (integration-service,
// release-service, build-nudges-ref) still reads: preferring it keeps nudgeflow on
// the same object as its peers, and the name keeps meaning one thing whichever
// kind is created or deleted first. Once the appstudio one is deleted the name
// falls through to the new one with no configuration change.
package components

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	newmodel "github.com/nudgeflow/nudgeflow/api/mirror/konflux/v1alpha1"
)

// Get reads the Component name in namespace into out: the appstudio one, or else the
// new-model one seen in the appstudio shape (FromNewModel). out's TypeMeta names
// the kind read, so Ref points at the right object. A missing Component of both
// kinds is a NotFound error; a cluster without the new-model CRD has none of it.
func Get(ctx context.Context, r ctrlclient.Reader, namespace, name string, out *mirrorv1alpha1.Component) error {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	err := r.Get(ctx, key, out)
	if err == nil {
		out.APIVersion, out.Kind = mirrorv1alpha1.GroupVersion.String(), "Component"
		return nil
	}
	if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
		return err
	}
	var n newmodel.Component
	nerr := r.Get(ctx, key, &n)
	switch {
	case nerr == nil:
		*out = fromNewModel(&n)
		return nil
	case apierrors.IsNotFound(nerr) || meta.IsNoMatchError(nerr):
		return err // the appstudio kind's NotFound (or no-match) stands
	default:
		return fmt.Errorf("reading the konflux-ci.dev Component %s: %w", key, nerr)
	}
}

// fromNewModel is a new-model Component in the appstudio mirror's shape: its
// repository, the branch of its first version (spec order; the branch nudged, as
// the appstudio Component's spec.source.git.revision is) and its image repository.
// A Component with no version nudges the repository's default branch.
func fromNewModel(n *newmodel.Component) mirrorv1alpha1.Component {
	c := mirrorv1alpha1.Component{ObjectMeta: *n.ObjectMeta.DeepCopy()}
	c.APIVersion, c.Kind = newmodel.GroupVersion.String(), "Component"
	c.Spec.ComponentName = n.Name
	c.Spec.ContainerImage = n.Spec.ContainerImage
	git := &mirrorv1alpha1.GitSource{URL: n.Spec.Source.URL}
	if len(n.Spec.Source.Versions) > 0 {
		git.Revision, git.Context = n.Spec.Source.Versions[0].Revision, n.Spec.Source.Versions[0].Context
	}
	c.Spec.Source.GitSource = git
	return c
}

// Ref is the object reference of a Component read by Get (an Event's subject, an
// ownership refusal's object). A Component built by hand without TypeMeta is
// taken for an appstudio one.
func Ref(c *mirrorv1alpha1.Component) *corev1.ObjectReference {
	apiVersion := c.APIVersion
	if apiVersion == "" {
		apiVersion = mirrorv1alpha1.GroupVersion.String()
	}
	return &corev1.ObjectReference{APIVersion: apiVersion, Kind: "Component", Namespace: c.Namespace, Name: c.Name, UID: c.UID}
}

// Names are the names of the namespace's Components of either kind (metadata
// only). A cluster without the new-model CRD lists only appstudio ones.
func Names(ctx context.Context, r ctrlclient.Reader, namespace string) (map[string]bool, error) {
	names := map[string]bool{}
	for _, gv := range []schema.GroupVersion{mirrorv1alpha1.GroupVersion, newmodel.GroupVersion} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gv.WithKind("ComponentList"))
		err := r.List(ctx, list, ctrlclient.InNamespace(namespace))
		if meta.IsNoMatchError(err) && gv == newmodel.GroupVersion {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s Components in %s: %w", gv, namespace, err)
		}
		for _, c := range list.Items {
			names[c.Name] = true
		}
	}
	return names, nil
}
