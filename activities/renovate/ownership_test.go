package renovate

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
	"github.com/nudgeflow/nudgeflow/internal/ownership/ownershiptest"
)

// A tenant points its Component at another tenant's repository: the launch is
// refused for good before any credential is read (the namespace's own basic-auth
// Secret included), nothing is created, and a Warning Event on the Component says
// what to create. Another tenant's Repository claiming the URL later changes
// nothing.
func TestLaunchForARepositoryTheNamespaceDoesNotOwnIsRefused(t *testing.T) {
	const victim = "https://github.example.com/victim/app"
	var mu sync.Mutex
	var secretReads []string
	u := newInterceptedWorld(t, interceptor.Funcs{
		Get: func(ctx context.Context, c ctrlclient.WithWatch, key ctrlclient.ObjectKey, obj ctrlclient.Object, opts ...ctrlclient.GetOption) error {
			if _, ok := obj.(*corev1.Secret); ok {
				mu.Lock()
				secretReads = append(secretReads, key.String())
				mu.Unlock()
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c ctrlclient.WithWatch, list ctrlclient.ObjectList, opts ...ctrlclient.ListOption) error {
			if _, ok := list.(*corev1.SecretList); ok {
				mu.Lock()
				secretReads = append(secretReads, "list")
				mu.Unlock()
			}
			return c.List(ctx, list, opts...)
		},
	}, "nudgeflow",
		// The victim's namespace owns its repository (onboarded a day ago).
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "victim"},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: "app", Source: mirrorv1alpha1.ComponentSource{
				GitSource: &mirrorv1alpha1.GitSource{URL: victim, Revision: "main"}}}},
		// The attacker's basic-auth Secret would work on the host.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "attacker-scm", Namespace: "tenant", Labels: map[string]string{
			credentials.LabelCredentials: credentials.LabelCredentialsSCM, credentials.LabelSCMHost: "github.example.com"},
			Annotations: map[string]string{credentials.AnnotationSCMRepository: "victim/*"}},
			Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"username": []byte("attacker"), "password": []byte("attacker-token")}},
	)
	ctx := context.Background()
	stolen := &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "stolen", Namespace: "tenant"},
		Spec: mirrorv1alpha1.ComponentSpec{ComponentName: "stolen", Source: mirrorv1alpha1.ComponentSource{
			GitSource: &mirrorv1alpha1.GitSource{URL: victim + ".git", Revision: "main"}}}}
	require.NoError(t, u.kube.Create(ctx, stolen))

	attempt := func(name string) error {
		req := unitRequest(name)
		req.Nudged = "stolen"
		_, err := u.env.ExecuteActivity(u.a.LaunchRenovate, req)
		return err
	}
	requireRefused := func(err error) {
		t.Helper()
		var ae *temporal.ApplicationError
		require.True(t, errors.As(err, &ae), "%v", err)
		require.Equal(t, ownership.ErrorType, ae.Type())
		require.True(t, ae.NonRetryable())
		require.Empty(t, secretReads, "no credential is read for a repository the namespace does not own")
	}
	requireRefused(attempt("run-1"))

	// A later Repository of the attacker naming the URL claims it after the victim.
	later := ownershiptest.Repository("tenant", victim)
	later.CreationTimestamp = metav1.Now() // a fake API server stamps none
	require.NoError(t, u.kube.Create(ctx, later))
	requireRefused(attempt("run-2"))

	var runs tektonv1.PipelineRunList
	require.NoError(t, u.kube.List(ctx, &runs))
	require.Empty(t, runs.Items, "no run")
	var secrets corev1.SecretList
	require.NoError(t, u.kube.List(ctx, &secrets, ctrlclient.InNamespace("tenant")))
	for _, s := range secrets.Items {
		require.NotEqual(t, ManagedByNudgeflow, s.Labels[LabelManagedBy], "no run Secret: %s", s.Name)
	}
	var events corev1.EventList
	require.NoError(t, u.kube.List(ctx, &events, ctrlclient.InNamespace("tenant")))
	require.Len(t, events.Items, 1, "one Warning Event for the repeated refusal")
	ev := events.Items[0]
	require.Equal(t, corev1.EventTypeWarning, ev.Type)
	require.Equal(t, ownership.EventReason, ev.Reason)
	require.Equal(t, "stolen", ev.InvolvedObject.Name)
	require.Equal(t, "Component", ev.InvolvedObject.Kind)
	require.Contains(t, ev.Message, "namespace tenant does not own repository "+victim)
	require.False(t, strings.Contains(ev.Message, `namespace victim`), "the owner's namespace is not told: %s", ev.Message)

	// The victim's own nudges still launch.
	req := unitRequest("run-victim")
	req.Namespace, req.Nudged = "victim", "app"
	require.NoError(t, u.kube.Create(ctx, &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "operand", Namespace: "victim"},
		Spec: mirrorv1alpha1.ComponentSpec{ComponentName: "operand", ContainerImage: "quay.io/org/operand"}}))
	require.NoError(t, u.kube.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "scm", Namespace: "victim", Labels: map[string]string{
		credentials.LabelCredentials: credentials.LabelCredentialsSCM, credentials.LabelSCMHost: "github.example.com"}},
		Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"username": []byte("bot"), "password": []byte(unitToken)}}))
	_, err := u.env.ExecuteActivity(u.a.LaunchRenovate, req)
	require.NoError(t, err)
}
