package changegroup

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/batching"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

// A run held for a batch is decided once and the decision written on it: the
// batched target gets its (newly opened) automatic group in held-by, a target no
// longer batched goes to renudge, and what was decided before stays. A second pass
// changes nothing, so a resync never opens a second batch.
func TestHeldForBatchIsDecidedOnceOnTheRun(t *testing.T) {
	nc := &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName, Namespace: "ns", UID: "nc-uid"},
		Spec: konfluxv1alpha1.NudgeConfigSpec{
			Nudges:   []konfluxv1alpha1.NudgeRelationship{{From: "a", To: "bundle", Mode: konfluxv1alpha1.ModeImmediate}, {From: "a", To: "other", Mode: konfluxv1alpha1.ModeImmediate}},
			Batching: []konfluxv1alpha1.BatchingPolicy{{Target: "bundle"}},
		}}
	plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "nudge-x", Namespace: "ns", Annotations: map[string]string{
		konflux.AnnotationNudging: "a", konflux.AnnotationNudged: "bundle other third",
		konflux.AnnotationHeldForBatch: "bundle other", konflux.AnnotationRenudge: "third"}}}
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(nc, plr).Build()
	r := &HeldReconciler{Kube: c, Batches: &batching.Opener{Kube: c, Live: c}}
	ctx := context.Background()

	require.NoError(t, r.decideBatches(ctx, plr))
	var got tektonv1.PipelineRun
	require.NoError(t, c.Get(ctx, ctrlclient.ObjectKeyFromObject(plr), &got))
	held := ParseHeldBy(got.Annotations[konflux.AnnotationHeldBy])
	require.Len(t, held, 1)
	require.True(t, strings.HasPrefix(held["bundle"], batching.GenerateName("bundle")), "the batch opened for it: %v", held)
	require.Equal(t, "third other", got.Annotations[konflux.AnnotationRenudge], "no longer batched: nudged normally, after what was there")
	require.Empty(t, got.Annotations[konflux.AnnotationHeldForBatch], "decided")

	// Held for a batch again (a restore from backup): the recorded group stands.
	got.Annotations[konflux.AnnotationHeldForBatch] = "bundle"
	require.NoError(t, r.decideBatches(ctx, &got))
	require.Equal(t, held["bundle"], ParseHeldBy(got.Annotations[konflux.AnnotationHeldBy])["bundle"])
	require.Equal(t, "third other", got.Annotations[konflux.AnnotationRenudge])
}
