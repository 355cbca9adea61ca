package changegroup

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
	"github.com/nudgeflow/nudgeflow/internal/changegroups"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

// A hand-back nudge is never held by the group that handed it back (its CR may
// still say it collects), but is held by another group that collects the edge (a
// manual group, preferred over an automatic one).
func TestHandBackNudgeIsNotHeldByTheGroupThatHandedItBack(t *testing.T) {
	auto := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "bundle-batch-x", Namespace: "ns",
		Labels: map[string]string{changegroups.LabelAutomatic: "true"}},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "a"}}}}
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(auto).Build()
	i := &Interceptor{Index: &changegroups.Index{Cache: c}}
	decide := func(handedBackBy string) admission.Response {
		ann := map[string]string{konflux.AnnotationNudging: "a", konflux.AnnotationNudged: "bundle"}
		if handedBackBy != "" {
			ann[konflux.AnnotationHandedBackBy] = handedBackBy
		}
		raw, err := json.Marshal(map[string]any{"apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
			"metadata": map[string]any{"name": "renovate-x", "namespace": "ns", "labels": map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue}, "annotations": ann},
			"spec":     map[string]any{}})
		require.NoError(t, err)
		return i.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, Namespace: "ns", Object: runtime.RawExtension{Raw: raw}}})
	}
	require.NotEmpty(t, decide("").Patches, "an ordinary nudge of a held edge is cancelled")
	resp := decide("bundle-batch-x")
	require.True(t, resp.Allowed)
	require.Empty(t, resp.Patches, "the group that handed the build back does not take it again")

	manual := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "manual", Namespace: "ns"},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "a"}}}}
	require.NoError(t, c.Create(context.Background(), manual))
	resp = decide("bundle-batch-x")
	require.NotEmpty(t, resp.Patches, "another group collecting the edge holds it")
	var found bool
	for _, p := range resp.Patches {
		if v, ok := p.Value.(map[string]any); ok && v[konflux.AnnotationHeldBy] == "bundle=manual" {
			found = true
		}
		if p.Value == "bundle=manual" {
			found = true
		}
	}
	require.True(t, found, "held by the manual group: %+v", resp.Patches)
}
