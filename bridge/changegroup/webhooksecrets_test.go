package changegroup

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	cgwf "github.com/nudgeflow/nudgeflow/workflows/changegroup"
)

// RepoSecrets selects the labelled Secrets of the receiver's namespace that bind the
// event's repository; a Secret in another namespace, unlabelled, or naming no
// tenant namespace binds nothing.
func TestF8RepoSecretsSelectsByRepository(t *testing.T) {
	secret := func(ns, name string, labelled bool, tenant, repos string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Annotations: map[string]string{AnnotationWebhookNamespace: tenant, AnnotationWebhookRepositories: repos}},
			Data: map[string][]byte{"secret": []byte(name)}}
		if labelled {
			s.Labels = map[string]string{LabelWebhookSecret: "true"}
		}
		return s
	}
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(
		secret("nudgeflow-system", "b", true, "tenant-b", "https://github.com/Org/Bundle.git, https://gitlab.com/g/sub/x"),
		secret("nudgeflow-system", "unlabelled", false, "tenant-c", "https://github.com/org/bundle"),
		secret("nudgeflow-system", "no-tenant", true, "", "https://github.com/org/bundle"),
		secret("tenant-a", "elsewhere", true, "tenant-a", "https://github.com/org/bundle"),
	).Build()
	f := RepoSecrets(c, "nudgeflow-system")
	got, err := f(context.Background(), "github.com/org/bundle")
	require.NoError(t, err)
	require.Equal(t, []forgehook.BoundSecret{{Namespace: "tenant-b", Secret: []byte("b")}}, got)
	got, err = f(context.Background(), "gitlab.com/g/sub/x")
	require.NoError(t, err)
	require.Len(t, got, 1)
	got, err = f(context.Background(), "github.com/org/other")
	require.NoError(t, err)
	require.Empty(t, got)
}

// An event a tenant's bound secret verified reaches only that tenant's groups,
// though another namespace's group names the same PR; a shared-secret event
// reaches every group that names it, as before.
func TestF8BoundEventReachesOnlyItsNamespace(t *testing.T) {
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
	tc.On("SignalWorkflow", mock.Anything, mock.Anything, "", cgwf.SignalPREvent, mock.Anything).
		Run(func(a mock.Arguments) { signalled = append(signalled, a.String(1)) }).Return(nil)
	r := &PREventRouter{Kube: kc, Temporal: tc}
	require.NoError(t, r.PullRequestEvent(context.Background(), forgehook.Event{URL: prURL, Number: 7, Action: "closed", Merged: true, Namespace: "tenant-b"}))
	require.Equal(t, []string{cgwf.WorkflowID("tenant-b", "g", "uid-tenant-b")}, signalled)
	signalled = nil
	require.NoError(t, r.PullRequestEvent(context.Background(), forgehook.Event{URL: prURL, Number: 7, Action: "closed", Merged: true}))
	require.Len(t, signalled, 2)
}
