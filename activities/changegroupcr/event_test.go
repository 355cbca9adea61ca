package changegroupcr

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupcrapi"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

// RecordEvent writes one Event per group, reason and key however often it runs,
// none for a group that is gone or re-created, and refuses a type Kubernetes has not.
func TestRecordEventOncePerKey(t *testing.T) {
	cg := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns", UID: "uid-1"}}
	k := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(cg).Build()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions((&Activities{Kube: k}).RecordEvent, activity.RegisterOptions{Name: changegroupcrapi.EventActivity})
	record := func(req changegroupcrapi.EventRequest) error {
		_, err := env.ExecuteActivity(changegroupcrapi.EventActivity, req)
		return err
	}
	ctx := context.Background()
	req := changegroupcrapi.EventRequest{Namespace: "ns", Name: "g", UID: "uid-1", Type: corev1.EventTypeWarning, Reason: "AwaitingApproval",
		Message: "Pipelines as Code waits for /ok-to-test", Key: "abc123"}
	require.NoError(t, record(req))
	require.NoError(t, record(req), "a retry finds the Event")
	other := req
	other.Reason, other.Type = "PipelineStarted", corev1.EventTypeNormal
	require.NoError(t, record(other))

	var evs corev1.EventList
	require.NoError(t, k.List(ctx, &evs))
	require.Len(t, evs.Items, 2)
	byReason := map[string]corev1.Event{}
	for _, e := range evs.Items {
		byReason[e.Reason] = e
	}
	w := byReason["AwaitingApproval"]
	require.Equal(t, corev1.EventTypeWarning, w.Type)
	require.Equal(t, "ChangeGroup", w.InvolvedObject.Kind)
	require.Equal(t, "uid-1", string(w.InvolvedObject.UID))
	require.Equal(t, req.Message, w.Message)

	gone := req
	gone.UID = "uid-0"
	require.NoError(t, record(gone), "a re-created group gets no Event of the old one")
	require.NoError(t, k.List(ctx, &evs))
	require.Len(t, evs.Items, 2)
	bad := req
	bad.Type = "Error"
	require.Error(t, record(bad))
}
