package changegroup

import (
	"context"
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
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

// The interceptor writes its JSON patch from what it changes. Applied to a nudge
// PipelineRun with and without annotations (one of them already set) and with and
// without a spec, it yields what the diff of the rewritten object did: the
// annotations set, everything else kept, spec.status Cancelled.
func TestCancelPatchSetsAnnotationsAndCancels(t *testing.T) {
	set := [][2]string{{konflux.AnnotationHeldBy, "bundle=g"}, {konflux.AnnotationCancelReason, "cancelled by ChangeGroup g"}, {"a/b~c", "x"}}
	for name, doc := range map[string]map[string]any{
		"annotations and spec": {"metadata": map[string]any{"name": "r", "annotations": map[string]any{"keep": "me", konflux.AnnotationHeldBy: "old"}},
			"spec": map[string]any{"pipelineRef": map[string]any{"name": "p"}, "status": "PipelineRunPending"}},
		"no annotations": {"metadata": map[string]any{"name": "r"}, "spec": map[string]any{"pipelineRef": map[string]any{"name": "p"}}},
		"no spec":        {"metadata": map[string]any{"name": "r", "annotations": map[string]any{}}},
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := json.Marshal(doc)
			require.NoError(t, err)
			meta := doc["metadata"].(map[string]any)
			_, hasAnn := meta["annotations"]
			_, hasSpec := doc["spec"]
			ops, err := json.Marshal(cancelPatch(hasAnn, hasSpec, set))
			require.NoError(t, err)
			p, err := jsonpatch.DecodePatch(ops)
			require.NoError(t, err)
			patched, err := p.Apply(raw)
			require.NoError(t, err)

			// The object as the interceptor meant it.
			ann, _ := meta["annotations"].(map[string]any)
			if ann == nil {
				ann = map[string]any{}
				meta["annotations"] = ann
			}
			for _, a := range set {
				ann[a[0]] = a[1]
			}
			spec, _ := doc["spec"].(map[string]any)
			if spec == nil {
				spec = map[string]any{}
				doc["spec"] = spec
			}
			spec["status"] = "Cancelled"
			want, err := json.Marshal(doc)
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(patched))
		})
	}
}
