package bridge

import (
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/bridge/changegroup"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// TestStripPipelineRunKeepsWhatTheBridgeReads: the cache transform drops the heavy
// status fields and managedFields, and every question the bridge asks of a cached
// PipelineRun gets the same answer as on the full object.
func TestStripPipelineRunKeepsWhatTheBridgeReads(t *testing.T) {
	start, done := metav1.Unix(1000, 0), metav1.Unix(1600, 0)
	full := &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{
			Name: "operand-on-push-1", Namespace: "ns", UID: "uid-1", ResourceVersion: "7",
			CreationTimestamp: metav1.Unix(900, 0), Finalizers: []string{"example.com/keep"},
			Labels: map[string]string{builds.LabelComponent: "operand", builds.LabelPipelineType: builds.PipelineTypeBuild},
			Annotations: map[string]string{
				builds.KeyEventType: "push", builds.AnnotationRepo: "https://github.com/org/operand/tree/abc",
				renovate.AnnotationNudgeFiles: ".*Dockerfile.*", konflux.AnnotationHeldBy: "bundle=g",
				konflux.AnnotationNudging: "operand", konflux.AnnotationNudged: "bundle",
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "tekton", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Spec: tektonv1.PipelineRunSpec{
			PipelineRef: &tektonv1.PipelineRef{Name: "docker-build"},
			Params:      tektonv1.Params{{Name: "git-url", Value: *tektonv1.NewStructuredValues("https://github.com/org/operand")}},
			Status:      tektonv1.PipelineRunSpecStatusCancelled,
		},
		Status: tektonv1.PipelineRunStatus{
			Status: duckv1.Status{Conditions: duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue, Reason: "Succeeded"}}},
			PipelineRunStatusFields: tektonv1.PipelineRunStatusFields{
				StartTime: &start, CompletionTime: &done,
				Results: []tektonv1.PipelineRunResult{
					{Name: konflux.ResultImageURL, Value: *tektonv1.NewStructuredValues("quay.io/org/operand:abc")},
					{Name: konflux.ResultImageDigest, Value: *tektonv1.NewStructuredValues("sha256:0123")},
				},
				PipelineSpec:    &tektonv1.PipelineSpec{Tasks: []tektonv1.PipelineTask{{Name: "build-container"}}},
				ChildReferences: []tektonv1.ChildStatusReference{{Name: "operand-on-push-1-build-container", PipelineTaskName: "build-container"}},
				SkippedTasks:    []tektonv1.SkippedTask{{Name: "sast"}},
				Provenance:      &tektonv1.Provenance{FeatureFlags: nil},
				SpanContext:     map[string]string{"traceparent": "00-abc"},
			},
		},
	}
	want := full.DeepCopy()
	out, err := StripPipelineRun(full.DeepCopy())
	require.NoError(t, err)
	got := out.(*tektonv1.PipelineRun)

	require.Nil(t, got.ManagedFields)
	require.Nil(t, got.Status.PipelineSpec)
	require.Nil(t, got.Status.ChildReferences)
	require.Nil(t, got.Status.SkippedTasks)
	require.Nil(t, got.Status.Provenance)
	require.Nil(t, got.Status.SpanContext)

	want.ManagedFields = nil
	require.Equal(t, want.ObjectMeta, got.ObjectMeta, "metadata but managedFields is kept whole (an Update from the cache writes it back)")
	require.Equal(t, want.Spec, got.Spec, "the spec is kept whole")
	require.Equal(t, want.Status.Conditions, got.Status.Conditions)
	require.Equal(t, want.Status.Results, got.Status.Results)
	require.Equal(t, want.Status.StartTime, got.Status.StartTime)
	require.Equal(t, want.Status.CompletionTime, got.Status.CompletionTime)

	// The bridge's own questions answer alike.
	require.Equal(t, builds.IsPushBuild(want), builds.IsPushBuild(got))
	require.True(t, got.IsDone())
	require.Equal(t, renovate.StatusOf(want), renovate.StatusOf(got))
	u1, d1 := konflux.BuildResults(want)
	u2, d2 := konflux.BuildResults(got)
	require.Equal(t, [2]string{u1, d1}, [2]string{u2, d2})
	require.NotEmpty(t, d2)
	require.Equal(t, changegroup.ParseHeldBy(want.Annotations[konflux.AnnotationHeldBy]), changegroup.ParseHeldBy(got.Annotations[konflux.AnnotationHeldBy]))

	// Anything else passes untouched (client-go does not transform tombstones).
	other := "not a PipelineRun"
	same, err := StripPipelineRun(other)
	require.NoError(t, err)
	require.Equal(t, other, same)
}
