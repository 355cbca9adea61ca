package changegroupcontroller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
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
	index := &grouplookup.Index{Cache: c}
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

// Manual groups take precedence over automatic ones (batching): a manual group is
// admitted over an open automatic group and is then the one holding; an automatic
// group is refused over any collecting group, and two racing automatic groups are
// decided atomically (the second sees the first through the Index).
func TestManualOutranksAutomaticAtAdmission(t *testing.T) {
	b := fake.NewClientBuilder().WithScheme(kube.NewScheme())
	for _, n := range []string{"bundle", "a", "b"} {
		b = b.WithObjects(&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "ns"}})
	}
	c := b.Build()
	index := &grouplookup.Index{Cache: c}
	v := &Validator{Index: index, Cache: c, APIReader: c}
	group := func(name string, automatic bool, members ...string) *appstudiov1alpha1.ChangeGroup {
		cg := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
			Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle"}}
		if automatic {
			cg.Labels = map[string]string{grouplookup.LabelAutomatic: "true"}
		}
		for _, m := range members {
			cg.Spec.NudgingComponents = append(cg.Spec.NudgingComponents, appstudiov1alpha1.NudgingComponentRef{Name: m})
		}
		return cg
	}
	ctx := context.Background()
	_, err := v.ValidateCreate(ctx, group("bundle-batch-1", true, "a", "b"))
	require.NoError(t, err)
	_, err = v.ValidateCreate(ctx, group("bundle-batch-2", true, "a", "b"))
	require.ErrorContains(t, err, `automatic ChangeGroup for bundle overlaps ChangeGroup "bundle-batch-1", which already collects a, b: its builds join that group`)

	_, err = v.ValidateCreate(ctx, group("manual", false, "a"))
	require.NoError(t, err, "a manual group is admitted over an automatic one")
	held, err := index.FindHolding(ctx, "ns", "a", "bundle")
	require.NoError(t, err)
	require.Equal(t, "manual", held.Name, "the manual group holds, although the automatic one is older")
	held, err = index.FindHolding(ctx, "ns", "b", "bundle")
	require.NoError(t, err)
	require.Equal(t, "bundle-batch-1", held.Name)

	_, err = v.ValidateCreate(ctx, group("manual-2", false, "a"))
	require.ErrorContains(t, err, `ChangeGroup "manual" is already active for bundle and collects a`, "manual groups still exclude each other")
}

// The cache may still show a group active a moment after it completed or was
// deleted: a person's new group for the same members is admitted then, because a
// refusal is confirmed on the API server's copy; a group still collecting there is
// refused as before.
func TestRefusalIsConfirmedPastTheCache(t *testing.T) {
	old := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "g2", Namespace: "ns", UID: "uid-g2"},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "a"}}}}
	cached := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(old,
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "bundle", Namespace: "ns"}},
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}).Build()
	completed := old.DeepCopy()
	completed.Status.Phase = appstudiov1alpha1.PhaseCompleted
	for _, tc := range []struct {
		name  string
		live  []ctrlclient.Object
		admit bool
	}{
		{"completed on the API server", []ctrlclient.Object{completed}, true},
		{"deleted on the API server", nil, true},
		{"still collecting", []ctrlclient.Object{old.DeepCopy()}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(tc.live...).Build()
			v := &Validator{Index: &grouplookup.Index{Cache: cached}, Cache: cached, APIReader: live}
			g3 := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "g3", Namespace: "ns", UID: "uid-g3"},
				Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "a"}}}}
			_, err := v.ValidateCreate(context.Background(), g3)
			if tc.admit {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, `ChangeGroup "g2" is already active for bundle`)
			}
		})
	}
}
