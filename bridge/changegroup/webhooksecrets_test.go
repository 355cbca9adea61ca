package changegroup

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
	"github.com/nudgeflow/nudgeflow/internal/kube"
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
