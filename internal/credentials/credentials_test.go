package credentials

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nudgeflow/nudgeflow/internal/kube"
)

func secret(name, host, repos, user, pass string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{
			LabelCredentials: LabelCredentialsSCM, LabelSCMHost: host}},
		Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{corev1.BasicAuthUsernameKey: []byte(user), corev1.BasicAuthPasswordKey: []byte(pass)},
	}
	if repos != "" {
		s.Annotations = map[string]string{AnnotationSCMRepository: repos}
	}
	return s
}

func TestLookupPicksTheBestMatch(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(
		secret("host-only", "gitlab.com", "", "", "t-host"),
		secret("org-wide", "gitlab.com", "org/*", "bot", "t-org"),
		secret("sub-wide", "gitlab.com", "other/x, org/sub/*", "bot", "t-sub"),
		secret("exact", "gitlab.com", "org/sub/repo", "bot", "t-exact"),
		secret("other-host", "github.com", "", "bot", "t-gh"),
	).Build()
	ctx := context.Background()
	for _, tc := range []struct{ repo, want string }{
		{"org/sub/repo", "t-exact"},
		{"org/sub/another", "t-sub"},
		{"org/repo", "t-org"},
		{"elsewhere/repo", "t-host"},
	} {
		got, err := Lookup(ctx, c, "ns", "gitlab.com", tc.repo)
		require.NoError(t, err, tc.repo)
		require.Equal(t, tc.want, got.Password, tc.repo)
	}
	got, err := Lookup(ctx, c, "ns", "gitlab.com", "elsewhere/repo")
	require.NoError(t, err)
	require.Equal(t, defaultUsername, got.Username, "an empty username falls back to build-service's default")
	require.NotContains(t, got.String(), "t-host", "String never prints the token")

	got, err = Lookup(ctx, c, "ns", "github.com:8443", "org/repo")
	require.NoError(t, err, "a host with a port matches the Secret labelled with the host alone")
	require.Equal(t, "t-gh", got.Password)

	_, err = Lookup(ctx, c, "ns", "codeberg.org", "org/repo")
	require.True(t, errors.Is(err, ErrNotFound), "got %v", err)
}
