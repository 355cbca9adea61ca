package changegroup

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/changegroups"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

// TestDryRunIsNotAdmitted: a server-side dry run is validated like a create but
// stores nothing, so the Index must not count the group as admitted (it would hold
// the nudges of a group that never exists); a real create is counted.
func TestDryRunIsNotAdmitted(t *testing.T) {
	var objs []*mirrorv1alpha1.Component
	for _, n := range []string{"bundle", "a"} {
		objs = append(objs, &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "ns"}})
	}
	b := fake.NewClientBuilder().WithScheme(kube.NewScheme())
	for _, o := range objs {
		b = b.WithObjects(o)
	}
	c := b.Build()
	index := &changegroups.Index{Cache: c}
	v := &Validator{Index: index, Cache: c, APIReader: c}
	group := func(name string) *appstudiov1alpha1.ChangeGroup {
		return &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
			Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "a"}}}}
	}
	request := func(dryRun bool) context.Context {
		return admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, DryRun: ptr.To(dryRun)}})
	}

	_, err := v.ValidateCreate(request(true), group("dry"))
	require.NoError(t, err)
	held, err := index.FindHolding(context.Background(), "ns", "a", "bundle")
	require.NoError(t, err)
	require.Nil(t, held, "a dry run holds nothing")

	_, err = v.ValidateCreate(request(false), group("real"))
	require.NoError(t, err)
	held, err = index.FindHolding(context.Background(), "ns", "a", "bundle")
	require.NoError(t, err)
	require.NotNil(t, held, "a group admitted a moment ago holds before the cache has it")
	require.Equal(t, "real", held.Name)
}
