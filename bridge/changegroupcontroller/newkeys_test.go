package changegroupcontroller

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	newmodel "github.com/nudgeflow/nudgeflow/api/mirror/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

// A nudge run labelled and annotated with ADR 69's new keys only (what a Konflux
// service writes after phase 4) is intercepted like an appstudio-keyed one: a group
// collecting its edge holds it.
func TestInterceptorReadsNewKeysOnly(t *testing.T) {
	cg := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns"},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "a"}}}}
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(cg).Build()
	i := &Interceptor{Index: &grouplookup.Index{Cache: c}}
	for name, forms := range map[string]func(konflux.Key) []string{
		"new only": func(k konflux.Key) []string { return []string{k.New} },
		"old only": func(k konflux.Key) []string { return []string{k.Old} },
		"both":     konflux.Key.Forms,
	} {
		labels, ann := map[string]string{}, map[string]string{}
		for _, f := range forms(konflux.NudgeTypeKey) {
			labels[f] = konflux.NudgeTypeValue
		}
		for k, v := range map[konflux.Key]string{konflux.NudgingKey: "a", konflux.NudgedKey: "bundle"} {
			for _, f := range forms(k) {
				ann[f] = v
			}
		}
		raw, err := json.Marshal(map[string]any{"apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
			"metadata": map[string]any{"name": "renovate-x", "namespace": "ns", "labels": labels, "annotations": ann},
			"spec":     map[string]any{}})
		require.NoError(t, err)
		resp := i.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, Namespace: "ns", Object: runtime.RawExtension{Raw: raw}}})
		require.True(t, resp.Allowed, name)
		require.NotEmpty(t, resp.Patches, "%s: held by the group collecting a -> bundle", name)
	}
}

// A ChangeGroup may name new-model (konflux-ci.dev) Components: they exist.
func TestValidatorFindsNewModelComponents(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(
		&newmodel.Component{ObjectMeta: metav1.ObjectMeta{Name: "bundle", Namespace: "ns"},
			Spec: newmodel.ComponentSpec{Source: newmodel.ComponentSource{URL: "https://github.com/org/bundle"}}},
	).Build()
	v := &Validator{Cache: c, APIReader: c}
	missing, err := v.missing(context.Background(), "ns", []string{"bundle", "gone"})
	require.NoError(t, err)
	require.Equal(t, []string{"gone"}, missing)
}
