package credentials

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

// SCM Secrets labelled with ADR 69's konflux-ci.dev keys are found like the
// appstudio-labelled ones, and a Secret labelled both ways is one candidate.
func TestLookupReadsBothKeyForms(t *testing.T) {
	newForm := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "new-form", Namespace: "ns",
		Labels:      map[string]string{konflux.CredentialsKey.New: LabelCredentialsSCM, konflux.SCMHostKey.New: "gitlab.com"},
		Annotations: map[string]string{konflux.SCMRepositoryKey.New: "org/repo"}},
		Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{corev1.BasicAuthPasswordKey: []byte("t-new")}}
	both := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "both", Namespace: "ns",
		Labels: konflux.SCMHostKey.Set(konflux.CredentialsKey.Set(nil, LabelCredentialsSCM), "gitlab.com")},
		Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{corev1.BasicAuthPasswordKey: []byte("t-both")}}
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(newForm, both, secret("old-form", "gitlab.com", "org/*", "bot", "t-old")).Build()
	ctx := context.Background()
	got, err := Lookup(ctx, c, "ns", "gitlab.com", "org/repo")
	require.NoError(t, err)
	require.Equal(t, "t-new", got.Password, "the new-form Secret's exact repository wins")
	got, err = Lookup(ctx, c, "ns", "gitlab.com", "org/other")
	require.NoError(t, err)
	require.Equal(t, "t-old", got.Password)
	list, err := secretsLabelled(ctx, c, "ns", "gitlab.com")
	require.NoError(t, err)
	require.Len(t, list.Items, 3, "each Secret once")
}
