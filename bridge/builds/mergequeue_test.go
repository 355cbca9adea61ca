package builds

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/mocks"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

func mergeQueueBuild(component, branch string) *tektonv1.PipelineRun {
	b := pushBuild(component)
	b.Annotations[konflux.AnnotationSourceBranch] = branch
	return b
}

// integration-service's test (IS:tekton/build_pipeline.go:120-130): the
// source-branch annotation, after an optional refs/heads/, starts with
// gh-readonly-queue/; case-sensitive; a label or a branch merely containing it is
// not a merge-queue build.
func TestIsMergeQueueBuild(t *testing.T) {
	for branch, want := range map[string]bool{
		"gh-readonly-queue/main/pr-7-0123abcd":            true,
		"refs/heads/gh-readonly-queue/main/pr-7-0123abcd": true,
		"main":                          false,
		"refs/heads/main":               false,
		"feature/gh-readonly-queue/x":   false,
		"GH-READONLY-QUEUE/main/pr-7-a": false,
		"refs/tags/gh-readonly-queue/x": false,
	} {
		require.Equal(t, want, IsMergeQueueBuild(mergeQueueBuild("a", branch)), branch)
	}
	require.False(t, IsMergeQueueBuild(pushBuild("a")), "no source-branch annotation")
	asLabel := pushBuild("a")
	asLabel.Labels[konflux.AnnotationSourceBranch] = "gh-readonly-queue"
	require.False(t, IsMergeQueueBuild(asLabel), "IS reads the annotation only")
}

// A merge-queue build is never held at admission and reaches the reconciler only
// while nudgeflow holds it (to release it).
func TestMergeQueueBuildIsNeitherHeldNorReconciled(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"},
			Spec: mirrorv1alpha1.ComponentSpec{BuildNudgesRef: []string{"b"}}},
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}},
	).Build()
	for _, branch := range []string{"gh-readonly-queue/main/pr-7-0123abcd", "refs/heads/gh-readonly-queue/main/pr-7-0123abcd"} {
		mq := mergeQueueBuild("a", branch)
		resp := admit(t, &Holder{Reader: c}, mq)
		require.True(t, resp.Allowed, branch)
		require.Empty(t, resp.Patches, "not held: %s", branch)
		require.False(t, needsReconcile(mq), "running, not held: %s", branch)
		mq.Finalizers = []string{konflux.FinalizerBuildRouting}
		require.True(t, needsReconcile(mq), "held (by an older bridge): release it at once, running or not: %s", branch)
	}
	require.Len(t, admit(t, &Holder{Reader: c}, mergeQueueBuild("a", "refs/heads/main")).Patches, 1, "a push to main is held")
}

// A held, succeeded merge-queue build of a component with edges is released and
// acknowledged as merge-queue without any Temporal call (the mock fails on any).
func TestHeldMergeQueueBuildIsReleasedUnrouted(t *testing.T) {
	for _, branch := range []string{"gh-readonly-queue/main/pr-7-0123abcd", "refs/heads/gh-readonly-queue/main/pr-7-0123abcd"} {
		build := mergeQueueBuild("a", branch)
		build.Finalizers = []string{konflux.FinalizerBuildRouting}
		build.UID = "build-uid"
		konflux.SucceededBuild{ImageURL: "quay.io/org/a:mq", Digest: "sha256:2222", Started: time.Now(), Completed: time.Now()}.WriteStatus(build)
		c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(build,
			&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"},
				Spec: mirrorv1alpha1.ComponentSpec{BuildNudgesRef: []string{"b"}}},
			&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}},
		).Build()
		r := &BuildReconciler{Client: c, APIReader: c, Options: Options{Temporal: mocks.NewClient(t), TaskQueue: "q"}}
		_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(build)})
		require.NoError(t, err, branch)
		var got tektonv1.PipelineRun
		require.NoError(t, c.Get(context.Background(), ctrlclient.ObjectKeyFromObject(build), &got))
		require.Equal(t, RoutedMergeQueue, got.Annotations[konflux.AnnotationNudgeRouted], branch)
		require.Empty(t, got.Finalizers, "released: %s", branch)
	}
}
