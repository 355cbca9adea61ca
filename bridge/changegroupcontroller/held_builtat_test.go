package changegroupcontroller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// A held run whose build run was pruned delivers its build with the build's start
// when the run carries it (nudgeflow's own runs), else with no start (unknown):
// never with the nudge run's creation, which would make an old build look new.
func TestBuildOfWithoutItsBuildRunNeverTakesTheNudgeRunsCreation(t *testing.T) {
	built := time.Date(2026, 11, 1, 10, 1, 0, 0, time.UTC)
	created := metav1.NewTime(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	comp := &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}
	comp.Status.LastPromotedImage = "quay.io/org/a@sha256:" + "1111111111111111111111111111111111111111111111111111111111111111"
	run := func(name string, annotations map[string]string) *tektonv1.PipelineRun {
		a := map[string]string{konflux.AnnotationNudging: "a", konflux.AnnotationNudged: "bundle", konflux.AnnotationNudgingPLR: "a-on-push-pruned"}
		for k, v := range annotations {
			a[k] = v
		}
		return &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: created, Annotations: a}}
	}
	own := run("renovate-nudge-own-1", map[string]string{renovaterun.AnnotationBuiltAt: built.Format(time.RFC3339Nano)})
	peers := run("renovate-pipeline-bs", nil)
	r := &HeldReconciler{Kube: fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(comp, own, peers).Build()}
	ctx := context.Background()

	b, err := r.buildOf(ctx, own, "a")
	require.NoError(t, err)
	require.True(t, built.Equal(b.BuiltAt), "the start the run carries: %s", b.BuiltAt)
	require.Equal(t, comp.Status.LastPromotedImage, b.PullSpec)

	b, err = r.buildOf(ctx, peers, "a")
	require.NoError(t, err)
	require.True(t, b.BuiltAt.IsZero(), "unknown, not the run's creation: %s", b.BuiltAt)
}
