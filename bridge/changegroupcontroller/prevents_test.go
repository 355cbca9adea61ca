package changegroupcontroller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	cgwf "github.com/nudgeflow/nudgeflow/workflows/changegroup"
)

// An event a tenant's bound secret verified reaches only that tenant's groups,
// though another namespace's group names the same PR; a shared-secret event
// reaches every group that names it. No signal says merged or closed, whatever
// the event said: a group started before the forge-says-end change would end
// Completed on it, so every group reads its PR instead.
func TestBoundEventReachesOnlyItsNamespace(t *testing.T) {
	const prURL = "https://github.com/org/bundle/pull/7"
	group := func(ns string) *appstudiov1alpha1.ChangeGroup {
		cg := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "g", UID: types.UID("uid-" + ns)}}
		cg.Status.PullRequestURL = prURL
		return cg
	}
	kc := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(group("tenant-a"), group("tenant-b")).
		WithIndex(&appstudiov1alpha1.ChangeGroup{}, prKeyField, func(o ctrlclient.Object) []string {
			return []string{PRKey(o.(*appstudiov1alpha1.ChangeGroup).Status.PullRequestURL)}
		}).Build()
	tc := mocks.NewClient(t)
	var signalled []string
	var sent []cgwf.PREvent
	tc.On("SignalWorkflow", mock.Anything, mock.Anything, "", cgwf.SignalPREvent, mock.Anything).
		Run(func(a mock.Arguments) {
			signalled = append(signalled, a.String(1))
			sent = append(sent, a.Get(4).(cgwf.PREvent))
		}).Return(nil)
	r := &PREventRouter{Kube: kc, Temporal: tc}
	merged := forgehook.Event{Repo: "github.com/org/bundle", URL: prURL, RepoFullName: "org/bundle", Number: 7, Action: "closed", Merged: true, State: "closed", DeliveryID: "d1"}
	bound := merged
	bound.Namespace = "tenant-b"
	require.NoError(t, r.PullRequestEvent(context.Background(), bound))
	require.Equal(t, []string{cgwf.WorkflowID("tenant-b", "g", "uid-tenant-b")}, signalled)
	signalled = nil
	require.NoError(t, r.PullRequestEvent(context.Background(), merged))
	require.Len(t, signalled, 2)
	for _, ev := range sent {
		require.Equal(t, cgwf.PREvent{DeliveryID: "d1", Action: "closed", Number: 7}, ev, "the signal is a hint: no merged, no closed")
	}
}
