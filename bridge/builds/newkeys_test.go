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

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
)

// newModelPushBuild is a push build as build-service labels a konflux-ci.dev
// Component's (component_build_controller_v2.go:54-65 at ccde63a): new keys only.
func newModelPushBuild(component string) *tektonv1.PipelineRun {
	return &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: component + "-main-on-push-1", Namespace: "ns", UID: "new-uid",
		Labels:      map[string]string{konflux.ComponentKey.New: component, konflux.PipelineTypeKey.New: PipelineTypeBuild},
		Annotations: map[string]string{KeyEventType: "push", konflux.RepoKey.New: "https://github.com/org/" + component + "?rev=abc"}}}
}

func TestNewModelBuildIsAPushBuildNoPeerSees(t *testing.T) {
	b := newModelPushBuild("a")
	require.True(t, IsPushBuild(b))
	require.False(t, konflux.PeersSeeBuild(b.Labels))
	require.True(t, konflux.PeersSeeBuild(pushBuild("a").Labels))
	e := Edge{From: "a", To: "b", Mode: konfluxv1alpha1.ModeImmediate, Source: sourceShippedNudgeConfig}
	all := Peers{BuildService: true, IntegrationService: true}
	require.Equal(t, RunnerIntegrationService, all.RunnerOf(e), "an old-model build's immediate edge is integration-service's")
	e.NewModelBuild = true
	require.Equal(t, RunnerNudgeflow, all.RunnerOf(e), "nobody else nudges a new-model build")
}

// A new-model build of a component with an edge in integration-service's
// NudgeConfig is held at admission, and once it succeeded nudgeflow nudges the
// target itself (integration-service does not see the build) and releases it.
func TestNewModelBuildIsHeldAndRoutedBesidePeers(t *testing.T) {
	nc, err := nudgeconfigs.ToShipped(&konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: nudgeconfigs.Name, Namespace: "ns"},
		Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: []konfluxv1alpha1.NudgeRelationship{{From: "a", To: "b", Mode: konfluxv1alpha1.ModeImmediate}}}})
	require.NoError(t, err)
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(nc).Build()
	require.Len(t, admit(t, &Holder{Reader: c}, newModelPushBuild("a")).Patches, 1, "held by its new keys")

	build := newModelPushBuild("a")
	build.Finalizers = []string{konflux.FinalizerBuildRouting}
	konflux.SucceededBuild{ImageURL: "quay.io/org/a:abc", Digest: "sha256:3333", Started: time.Now(), Completed: time.Now()}.WriteStatus(build)
	require.NoError(t, c.Create(context.Background(), build))
	tc := mocks.NewClient(t)
	tc.On("ExecuteWorkflow", mock.Anything, mock.MatchedBy(func(o client.StartWorkflowOptions) bool {
		return o.ID == nudgeapi.WorkflowID("ns", "new-uid", "b")
	}), nudgeapi.WorkflowName, mock.MatchedBy(func(req nudgeapi.Request) bool {
		return req.Nudging == "a" && req.Build.RepoAtSHA == "https://github.com/org/a?rev=abc"
	})).Return(nil, nil).Once()
	r := &BuildReconciler{Client: c, APIReader: c, Options: Options{Temporal: tc, TaskQueue: "q",
		Peers: Peers{BuildService: true, IntegrationService: true}}}
	_, err = r.Reconcile(context.Background(), ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(build)})
	require.NoError(t, err)
	var got tektonv1.PipelineRun
	require.NoError(t, c.Get(context.Background(), ctrlclient.ObjectKeyFromObject(build), &got))
	require.Equal(t, "b", got.Annotations[konflux.AnnotationNudgeRouted])
	require.Empty(t, got.Finalizers)
}
