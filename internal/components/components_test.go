package components

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	newmodel "github.com/nudgeflow/nudgeflow/api/mirror/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

func newModel(name, url string, versions ...newmodel.ComponentVersion) *newmodel.Component {
	return &newmodel.Component{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("new-" + name)},
		Spec: newmodel.ComponentSpec{Source: newmodel.ComponentSource{URL: url, Versions: versions}, ContainerImage: "quay.io/org/" + name}}
}

func appstudio(name, url string) *mirrorv1alpha1.Component {
	return &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("old-" + name)},
		Spec: mirrorv1alpha1.ComponentSpec{Source: mirrorv1alpha1.ComponentSource{GitSource: &mirrorv1alpha1.GitSource{URL: url, Revision: "main"}}}}
}

// TestGetResolvesEitherKind: a name is the appstudio Component while one exists
// (Konflux's dual-write phase keeps both), else the new-model one, whose target
// fields (repository, branch, image) read like an appstudio one's.
func TestGetResolvesEitherKind(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(
		appstudio("both", "https://github.com/org/old"), newModel("both", "https://github.com/org/new"),
		newModel("new-only", "https://github.com/org/new-only",
			newmodel.ComponentVersion{Name: "v2", Revision: "release-2", Context: "sub"}, newmodel.ComponentVersion{Name: "v1", Revision: "release-1"}),
		newModel("no-versions", "https://github.com/org/nv"),
	).Build()

	var got mirrorv1alpha1.Component
	require.NoError(t, Get(ctx, c, "ns", "both", &got))
	require.Equal(t, "https://github.com/org/old", got.Spec.Source.GitSource.URL, "the appstudio one while it exists")
	require.Equal(t, mirrorv1alpha1.GroupVersion.String(), Ref(&got).APIVersion)

	got = mirrorv1alpha1.Component{}
	require.NoError(t, Get(ctx, c, "ns", "new-only", &got))
	require.Equal(t, "https://github.com/org/new-only", got.Spec.Source.GitSource.URL)
	require.Equal(t, "release-2", got.Spec.Source.GitSource.Revision, "the first version's branch")
	require.Equal(t, "sub", got.Spec.Source.GitSource.Context)
	require.Equal(t, "quay.io/org/new-only", got.Spec.ContainerImage)
	ref := Ref(&got)
	require.Equal(t, "konflux-ci.dev/v1alpha1", ref.APIVersion, "Events and refusals name the kind read")
	require.Equal(t, "new-new-only", string(ref.UID))

	got = mirrorv1alpha1.Component{}
	require.NoError(t, Get(ctx, c, "ns", "no-versions", &got))
	require.Empty(t, got.Spec.Source.GitSource.Revision, "no version: the default branch")

	require.True(t, apierrors.IsNotFound(Get(ctx, c, "ns", "missing", &mirrorv1alpha1.Component{})))

	names, err := Names(ctx, c, "ns")
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"both": true, "new-only": true, "no-versions": true}, names)
}

// TestGetWithoutTheNewModelCRD: a cluster that does not serve konflux-ci.dev
// Components resolves appstudio ones as before, and a missing name is NotFound.
func TestGetWithoutTheNewModelCRD(t *testing.T) {
	ctx := context.Background()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(mirrorv1alpha1.GroupVersion.WithKind("Component"), meta.RESTScopeNamespace)
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithRESTMapper(mapper).WithObjects(appstudio("a", "https://github.com/org/a")).Build()
	var got mirrorv1alpha1.Component
	require.NoError(t, Get(ctx, c, "ns", "a", &got))
	err := Get(ctx, c, "ns", "b", &got)
	require.True(t, apierrors.IsNotFound(err), "%v", err)
	names, err := Names(ctx, c, "ns")
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"a": true}, names)
}
