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
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

// takeoverWorld is integration-service's NudgeConfig a -> bundle, a -> other
// (both immediate: integration-service's to run) and one succeeded build of a
// that ended at ended.
func takeoverWorld(t *testing.T, ended time.Time) (*BuildReconciler, ctrlclient.Client, *tektonv1.PipelineRun, *mocks.Client, *record.FakeRecorder) {
	t.Helper()
	build := pushBuild("a")
	build.UID = "build-uid"
	build.Finalizers = []string{konflux.FinalizerBuildRouting}
	konflux.SucceededBuild{ImageURL: "quay.io/org/a:rev1", Digest: "sha256:1111", Started: ended, Completed: ended}.WriteStatus(build)
	nc := &mirrorv1beta2.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: mirrorv1beta2.NudgeConfigSingletonName, Namespace: "ns"},
		Spec: mirrorv1beta2.NudgeConfigSpec{Nudges: []mirrorv1beta2.NudgeRelationship{
			{From: "a", To: "bundle", Mode: mirrorv1beta2.NudgeModeImmediate}, {From: "a", To: "other"}}}}
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(build, nc,
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}},
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "bundle", Namespace: "ns"}},
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "ns"}},
	).Build()
	tc := mocks.NewClient(t)
	rec := record.NewFakeRecorder(10)
	r := &BuildReconciler{Client: c, APIReader: c, Options: Options{Temporal: tc, TaskQueue: "q",
		Peers: Peers{BuildService: true, IntegrationService: true}, ISDecisionDeadline: 10 * time.Minute, Recorder: rec}}
	return r, c, build, tc, rec
}

func expectNudge(tc *mocks.Client, target string) {
	tc.On("ExecuteWorkflow", mock.Anything, mock.MatchedBy(func(o client.StartWorkflowOptions) bool {
		return o.ID == nudgeapi.WorkflowID("ns", "build-uid", target)
	}), nudgeapi.WorkflowName, mock.Anything).Return(nil, nil).Once()
}

func reconcileBuild(t *testing.T, r *BuildReconciler, c ctrlclient.Client, build *tektonv1.PipelineRun) (ctrl.Result, *tektonv1.PipelineRun) {
	t.Helper()
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(build)})
	require.NoError(t, err)
	var got tektonv1.PipelineRun
	require.NoError(t, c.Get(context.Background(), ctrlclient.ObjectKeyFromObject(build), &got))
	return res, &got
}

// integration-service's GitHub App path nudges nothing: a target whose repository
// has only the App is left out of its run. The bridge waits for its verdict (the
// build stays held, nothing is nudged), then nudges exactly the target IS left
// out, once, and says so on the build.
func TestTargetIntegrationServiceLeavesOutIsNudgedByNudgeflowAfterItsVerdict(t *testing.T) {
	r, c, build, tc, rec := takeoverWorld(t, time.Now())

	res, got := reconcileBuild(t, r, c, build)
	require.Greater(t, res.RequeueAfter, 9*time.Minute, "looked at again by the deadline")
	require.False(t, Acknowledged(got), "not routed before integration-service decided")
	require.True(t, Holds(got), "held: the pruner waits with it")

	// integration-service nudged other (it has basic-auth credentials for it) and
	// left bundle out.
	got.Annotations[konflux.AnnotationISNudgeProcessed] = "other"
	require.NoError(t, c.Update(context.Background(), got))
	expectNudge(tc, "bundle")
	res, got = reconcileBuild(t, r, c, got)
	require.Zero(t, res.RequeueAfter)
	require.Equal(t, "bundle", got.Annotations[konflux.AnnotationNudgeRouted], "nudgeflow routed bundle, and only bundle")
	require.False(t, Holds(got))
	require.Contains(t, <-rec.Events, "a -> bundle nudged by nudgeflow: integration-service left it out")
}

// A verdict naming no target (no-credentials: no target had basic-auth
// credentials) is final in integration-service: nudgeflow nudges every target.
func TestNoCredentialsVerdictHandsEveryTargetToNudgeflow(t *testing.T) {
	r, c, build, tc, rec := takeoverWorld(t, time.Now())
	build.Annotations[konflux.AnnotationISNudgeProcessed] = konflux.ISNudgeNoCredentials
	require.NoError(t, c.Update(context.Background(), build))
	expectNudge(tc, "bundle")
	expectNudge(tc, "other")
	_, got := reconcileBuild(t, r, c, build)
	require.Equal(t, "bundle,other", got.Annotations[konflux.AnnotationNudgeRouted])
	require.Contains(t, <-rec.Events, "no-credentials")
}

// When integration-service never decides (Chains never signed the build, IS is
// down), the bridge claims the build past the deadline with IS's own annotation,
// which IS's idempotency guard honours, and then nudges every target once.
func TestUndecidedBuildIsTakenOverAfterTheDeadline(t *testing.T) {
	r, c, build, tc, rec := takeoverWorld(t, time.Now().Add(-11*time.Minute))

	res, got := reconcileBuild(t, r, c, build)
	require.Equal(t, ISNudgeTakenOver, got.Annotations[konflux.AnnotationISNudgeProcessed], "claimed: integration-service will not nudge it any more")
	require.False(t, Acknowledged(got))
	require.Positive(t, res.RequeueAfter)

	expectNudge(tc, "bundle")
	expectNudge(tc, "other")
	_, got = reconcileBuild(t, r, c, got)
	require.Equal(t, "bundle,other", got.Annotations[konflux.AnnotationNudgeRouted])
	require.Contains(t, <-rec.Events, "did not decide within 10m0s")

	// A verdict integration-service wrote first wins over the claim.
	r2, c2, build2, _, _ := takeoverWorld(t, time.Now().Add(-11*time.Minute))
	build2.Annotations[konflux.AnnotationISNudgeProcessed] = "bundle,other"
	require.NoError(t, c2.Update(context.Background(), build2))
	_, got = reconcileBuild(t, r2, c2, build2)
	require.Equal(t, "bundle,other", got.Annotations[konflux.AnnotationISNudgeProcessed])
	require.Equal(t, RoutedExecutedElsewhere, got.Annotations[konflux.AnnotationNudgeRouted], "integration-service nudged both")
}
