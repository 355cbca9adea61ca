package builds

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"knative.dev/pkg/apis"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

func TestISNudged(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  map[string]bool
	}{
		{"", nil},
		{"bundle", map[string]bool{"bundle": true}},
		{" bundle, other ,", map[string]bool{"bundle": true, "other": true}},
		{konflux.ISNudgeNoMatchingEdges, nil},
		{konflux.ISNudgeNoValidTargets, nil},
		{konflux.ISNudgeBuildResultError, nil},
		{konflux.ISNudgeCredentialsError, nil},
		{konflux.ISNudgeNoCredentials, nil},
	} {
		plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{konflux.AnnotationISNudgeProcessed: tc.value}}}
		require.Equal(t, tc.want, isNudged(plr), "value %q", tc.value)
	}
}

func pushBuild(component string) *tektonv1.PipelineRun {
	return &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: component + "-on-push-1", Namespace: "ns",
		Labels:      map[string]string{LabelComponent: component, LabelPipelineType: PipelineTypeBuild},
		Annotations: map[string]string{KeyEventType: "push"}}}
}

// The reconciler's event filter: routed-and-released builds and held running builds
// are skipped; everything that may need a hold, a route or a release passes.
func TestNeedsReconcile(t *testing.T) {
	running := pushBuild("a")
	held := pushBuild("a")
	held.Finalizers = []string{konflux.FinalizerBuildRouting}
	done := held.DeepCopy()
	done.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue})
	deleting := held.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	settled := done.DeepCopy()
	settled.Finalizers = nil
	settled.Annotations[konflux.AnnotationNudgeRouted] = "b"
	heldAgain := settled.DeepCopy()
	heldAgain.Finalizers = []string{konflux.FinalizerBuildRouting}
	pr := pushBuild("a")
	pr.Annotations[KeyEventType] = "pull_request"

	require.True(t, needsReconcile(running), "a running build not held yet: hold it")
	require.False(t, needsReconcile(held), "a held running build: nothing until it ends")
	require.True(t, needsReconcile(done), "a finished held build: route and release")
	require.True(t, needsReconcile(deleting), "a held build being deleted: route and release")
	require.False(t, needsReconcile(settled), "routed and released: never again")
	require.True(t, needsReconcile(heldAgain), "routed but held again: release")
	require.False(t, needsReconcile(pr), "pull-request builds never nudge")
}

type failingReader struct{ ctrlclient.Reader }

func (failingReader) Get(context.Context, ctrlclient.ObjectKey, ctrlclient.Object, ...ctrlclient.GetOption) error {
	return errors.New("API server unreachable")
}

func admit(t *testing.T, h *Holder, plr *tektonv1.PipelineRun) admission.Response {
	t.Helper()
	raw, err := json.Marshal(plr)
	require.NoError(t, err)
	return h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Namespace: plr.Namespace, Object: runtime.RawExtension{Raw: raw}}})
}

// The webhook holds push builds of components with edges, and admits everything,
// unchanged, otherwise, even when it cannot read the edges.
func TestHolder(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"},
			Spec: mirrorv1alpha1.ComponentSpec{BuildNudgesRef: []string{"b"}}},
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}},
	).Build()
	h := &Holder{Reader: c}

	resp := admit(t, h, pushBuild("a"))
	require.True(t, resp.Allowed)
	require.Len(t, resp.Patches, 1)
	require.Equal(t, "/metadata/finalizers", resp.Patches[0].Path)
	require.Equal(t, []any{konflux.FinalizerBuildRouting}, resp.Patches[0].Value)

	other := pushBuild("a")
	other.Finalizers = []string{"chains.tekton.dev/pipelinerun"}
	resp = admit(t, h, other)
	require.True(t, resp.Allowed)
	require.Len(t, resp.Patches, 1, "appended to the finalizers already there")
	require.Equal(t, "/metadata/finalizers/1", resp.Patches[0].Path)

	for name, plr := range map[string]*tektonv1.PipelineRun{
		"no edges": pushBuild("b"), "no component": pushBuild("gone"), "not a build": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}},
	} {
		resp := admit(t, h, plr)
		require.True(t, resp.Allowed, name)
		require.Empty(t, resp.Patches, name)
	}
	resp = admit(t, &Holder{Reader: failingReader{}}, pushBuild("a"))
	require.True(t, resp.Allowed, "never blocks a build")
	require.Empty(t, resp.Patches)
}
