package builds

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

// The hold webhook read the edges live when it held the build; the reconciler's
// cache may not have them yet (a NudgeConfig or build-nudges-ref written a moment
// before the build). "no-edges" would let the build go for good, so the reconciler
// reads the edges live before it concludes that: the build is nudged.
func TestHeldBuildIsRoutedOnLiveEdgesWhenTheCacheLags(t *testing.T) {
	build := pushBuild("a")
	build.Finalizers = []string{konflux.FinalizerBuildRouting}
	build.UID = "build-uid"
	konflux.SucceededBuild{ImageURL: "quay.io/org/a:rev1", Digest: "sha256:1111", Started: time.Now(), Completed: time.Now()}.WriteStatus(build)
	stale := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(build,
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}},
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}},
	).Build()
	live := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"},
			Spec: mirrorv1alpha1.ComponentSpec{BuildNudgesRef: []string{"b"}}},
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}},
	).Build()
	tc := mocks.NewClient(t)
	tc.On("ExecuteWorkflow", mock.Anything, mock.MatchedBy(func(o client.StartWorkflowOptions) bool {
		return o.ID == nudgeapi.WorkflowID("ns", "build-uid", "b")
	}), nudgeapi.WorkflowName, mock.Anything).Return(nil, nil).Once()

	r := &BuildReconciler{Client: stale, APIReader: live, Options: Options{Temporal: tc, TaskQueue: "q"}}
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(build)})
	require.NoError(t, err)

	var got tektonv1.PipelineRun
	require.NoError(t, stale.Get(context.Background(), ctrlclient.ObjectKeyFromObject(build), &got))
	require.Equal(t, "b", got.Annotations[konflux.AnnotationNudgeRouted], "routed along the live edge, not no-edges")
	require.Empty(t, got.Finalizers, "released once routed")
}
