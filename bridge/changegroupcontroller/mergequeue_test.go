package changegroupcontroller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

// build-service nudges from every push build, merge-queue ones too: the
// interceptor cancels such a nudge (both spellings of the branch), hands the build
// to no group (even one holding the edge) and renudges nothing. A nudge of an
// ordinary build, or of a build it cannot read, is decided as before.
func TestNudgeOfMergeQueueBuildIsCancelled(t *testing.T) {
	build := func(name, branch string) *tektonv1.PipelineRun {
		return &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
			Annotations: map[string]string{konflux.AnnotationSourceBranch: branch}}}
	}
	group := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "grouped-update", Namespace: "ns"},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "grouped", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "a"}}}}
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(group,
		build("a-mq", "gh-readonly-queue/main/pr-7-abc"), build("a-mq-refs", "refs/heads/gh-readonly-queue/main/pr-8-def"),
		build("a-main", "refs/heads/main")).Build()
	i := &Interceptor{Index: &grouplookup.Index{Cache: c}, Builds: c}
	decide := func(buildName string) map[string]any {
		raw, err := json.Marshal(map[string]any{"apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
			"metadata": map[string]any{"name": "nudge-" + buildName, "namespace": "ns",
				"labels": map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue},
				"annotations": map[string]string{konflux.AnnotationNudging: "a", konflux.AnnotationNudged: "grouped direct",
					konflux.AnnotationNudgingPLR: buildName}},
			"spec": map[string]any{}})
		require.NoError(t, err)
		resp := i.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, Namespace: "ns", Object: runtime.RawExtension{Raw: raw}}})
		require.True(t, resp.Allowed)
		got := map[string]any{}
		for _, p := range resp.Patches {
			got[p.Path] = p.Value
		}
		return got
	}
	for _, name := range []string{"a-mq", "a-mq-refs"} {
		got := decide(name)
		require.Equal(t, string(tektonv1.PipelineRunSpecStatusCancelled), got["/spec/status"], name)
		reason, _ := got["/metadata/annotations/"+escapePointer(konflux.AnnotationCancelReason)].(string)
		require.Contains(t, reason, "merge-queue build", name)
		require.Contains(t, reason, name)
		for path := range got {
			require.False(t, strings.Contains(path, "held-by") || strings.Contains(path, "renudge"), "no group and no renudge: %s %v", name, got)
		}
	}
	got := decide("a-main")
	reason := fmt.Sprint(got["/metadata/annotations/"+escapePointer(konflux.AnnotationCancelReason)])
	require.Contains(t, reason, "ChangeGroup grouped-update", "an ordinary build's nudge is held by the group as before")
	require.Equal(t, "direct", got["/metadata/annotations/"+escapePointer(konflux.AnnotationRenudge)])
	got = decide("gone")
	require.Contains(t, fmt.Sprint(got["/metadata/annotations/"+escapePointer(konflux.AnnotationCancelReason)]), "ChangeGroup", "an unreadable build: decided as before")
}
