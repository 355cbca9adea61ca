package changegroupcr

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupcrapi"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
	"github.com/nudgeflow/nudgeflow/internal/ownership/ownershiptest"
)

// A ChangeGroup whose nudged component names a repository its namespace does not
// own ends at Resolve, before any forge call: a non-retryable RepositoryNotOwned
// and a Warning Event on the group that says what to create. Once the namespace
// owns the repository the same group resolves.
func TestResolveRefusesARepositoryTheNamespaceDoesNotOwn(t *testing.T) {
	const url = "https://github.com/other-org/bundle"
	component := func(name string, git *mirrorv1alpha1.GitSource) *mirrorv1alpha1.Component {
		return &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: name, ContainerImage: "quay.io/org/" + name, Source: mirrorv1alpha1.ComponentSource{GitSource: git}}}
	}
	cg := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns", UID: "uid-1"},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "operand"}}}}
	k := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(cg,
		component("bundle", &mirrorv1alpha1.GitSource{URL: url + ".git", Revision: "main"}), component("operand", nil)).Build()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions((&Activities{Kube: k}).Resolve, activity.RegisterOptions{Name: changegroupcrapi.ResolveActivity})
	resolve := func() error {
		_, err := env.ExecuteActivity(changegroupcrapi.ResolveActivity, changegroupcrapi.ResolveRequest{Namespace: "ns", Name: "g", UID: "uid-1"})
		return err
	}
	err := resolve()
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, ownership.ErrorType, ae.Type())
	require.True(t, ae.NonRetryable())
	require.Contains(t, ae.Error(), "Create a Repository (apiVersion pipelinesascode.tekton.dev/v1alpha1, kind Repository) in namespace ns with spec.url: "+url)

	ctx := context.Background()
	var evs corev1.EventList
	require.NoError(t, k.List(ctx, &evs, client.InNamespace("ns")))
	require.Len(t, evs.Items, 1)
	require.Equal(t, corev1.EventTypeWarning, evs.Items[0].Type)
	require.Equal(t, ownership.EventReason, evs.Items[0].Reason)
	require.Equal(t, "ChangeGroup", evs.Items[0].InvolvedObject.Kind)
	require.Equal(t, "uid-1", string(evs.Items[0].InvolvedObject.UID))

	repo := ownershiptest.Repository("ns", url)
	repo.CreationTimestamp = metav1.NewTime(time.Now().Truncate(time.Second))
	require.NoError(t, k.Create(ctx, repo))
	require.NoError(t, resolve(), "owned now")
}
