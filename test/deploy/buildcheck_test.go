package deploy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// The build verification runs as the worker's ServiceAccount bound to the shipped
// ClusterRole, on the real API server: each source proves a build (the run, the
// Component's image, a Snapshot on the third page of the paged list), and a digest
// nobody built is refused with a BuildNotVerified Warning Event the worker may
// write. What the role lacks would fail the activity here, not in a cluster.
func TestWorkerVerifiesBuildsUnderItsRole(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	ns := w.Namespace(t)
	digest := func(c string) string { return "sha256:" + strings.Repeat(c, 64) }
	comp := &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "operand", Namespace: ns},
		Spec: mirrorv1alpha1.ComponentSpec{ComponentName: "operand", ContainerImage: "quay.io/org/operand"}}
	require.NoError(t, w.Kube.Create(ctx, comp))
	require.NoError(t, world.SetStatus(ctx, w.Kube, comp, func() { comp.Status.LastPromotedImage = "quay.io/org/operand@" + digest("b") }))
	run := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "operand-on-push-1", Namespace: ns,
		Labels: map[string]string{konflux.LabelComponent: "operand"}},
		Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "docker-build"}}}
	require.NoError(t, w.Kube.Create(ctx, run))
	started := time.Now().Add(-time.Minute).Truncate(time.Second)
	require.NoError(t, world.SetStatus(ctx, w.Kube, run, func() {
		konflux.SucceededBuild{ImageURL: "quay.io/org/operand:on-push", Digest: digest("a"), Started: started, Completed: time.Now()}.WriteStatus(run)
	}))
	// 250 Snapshots, the one naming digest c the 201st created: on the third page of
	// 100 (the API server lists by name).
	for i := range 250 {
		s := &mirrorv1alpha1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("snap-%03d", i), Namespace: ns},
			Spec: mirrorv1alpha1.SnapshotSpec{Components: []mirrorv1alpha1.SnapshotComponent{{Name: "other", ContainerImage: "quay.io/org/other@" + digest("e")}}}}
		if i == 200 {
			s.Spec.Components = append(s.Spec.Components, mirrorv1alpha1.SnapshotComponent{Name: "operand", ContainerImage: "quay.io/org/operand@" + digest("c")})
		}
		require.NoError(t, w.Kube.Create(ctx, s))
	}

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	(&buildcheck.Activities{Kube: asWorker(t)}).Register(env)
	verify := func(d, runName string, builtAt time.Time) buildcheck.Verdict {
		t.Helper()
		v, err := env.ExecuteActivity(buildcheck.ActivityName, buildcheck.Request{Namespace: ns, Component: "operand", Workflow: "nudge/" + ns + "/x/bundle", Subject: buildcheck.Subject{Kind: buildcheck.KindComponent, Name: "operand"}, Build: imagebuild.Build{Digest: d, PullSpec: "quay.io/org/operand@" + d, BuildPipelineRun: runName, BuiltAt: builtAt}})
		require.NoError(t, err, "the worker's role lets it verify %s", d)
		var verdict buildcheck.Verdict
		require.NoError(t, v.Get(&verdict))
		return verdict
	}
	require.Equal(t, buildcheck.Verdict{Verified: true, Source: buildcheck.SourceBuildRun, Evidence: run.Name}, verify(digest("a"), run.Name, started))
	require.Equal(t, buildcheck.SourceComponentImage, verify(digest("b"), "pruned", time.Time{}).Source)
	require.Equal(t, buildcheck.Verdict{Verified: true, Source: buildcheck.SourceSnapshot, Evidence: "Snapshot snap-200"}, verify(digest("c"), "", time.Time{}))
	refused := verify(digest("9"), "", time.Time{})
	require.False(t, refused.Verified)
	require.Contains(t, refused.Reason, "none of the 250 Snapshots names it")

	var evs corev1.EventList
	require.NoError(t, w.Kube.List(ctx, &evs, ctrlclient.InNamespace(ns)))
	require.Len(t, evs.Items, 1, "one Event: the refusal")
	e := evs.Items[0]
	require.Equal(t, buildcheck.EventReason, e.Reason)
	require.Equal(t, corev1.EventTypeWarning, e.Type)
	require.Equal(t, comp.UID, e.InvolvedObject.UID)
	require.Contains(t, e.Message, digest("9"))
}
