package credentials

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nudgeflow/nudgeflow/internal/kube"
)

func dockerSecret(name, config string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(config)}}
}

func auth(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

func serviceAccount(name string, secrets ...string) *corev1.ServiceAccount {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	for _, s := range secrets {
		sa.Secrets = append(sa.Secrets, corev1.ObjectReference{Name: s})
	}
	return sa
}

// build-service's order: the repository itself, then the longest prefix, the
// registry host last; only Secrets linked to the ServiceAccount count.
func TestLookupRegistryMatchesLikeBuildService(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(
		serviceAccount("build-pipeline-operand", "host-wide", "org-wide", "exact", "scm", "gone", "broken"),
		dockerSecret("host-wide", fmt.Sprintf(`{"auths":{"quay.io":{"auth":%q}}}`, auth("host-user", "p-host"))),
		dockerSecret("org-wide", `{"auths":{"quay.io/org/":{"username":"org-user","password":"p-org"},"quay.io/org/team":{"username":"","password":"","auth":""}}}`),
		dockerSecret("exact", fmt.Sprintf(`{"auths":{"quay.io/org/team/operand":{"auth":%q}}}`, auth("robot", "p:exact"))),
		dockerSecret("not-linked", `{"auths":{"quay.io/org/team/other":{"username":"x","password":"p-unlinked"}}}`),
		dockerSecret("broken", `{"auths": "p-broken-not-json-object"}`),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "scm", Namespace: "ns"}, Type: corev1.SecretTypeBasicAuth,
			Data: map[string][]byte{"password": []byte("p-scm")}},
	).Build()
	ctx := context.Background()
	for _, tc := range []struct{ image, wantSecret, wantUser, wantPass string }{
		{"quay.io/org/team/operand", "exact", "robot", "p:exact"},
		{"quay.io/org/team/operand:v1@sha256:abc", "exact", "robot", "p:exact"},
		{"quay.io/org/team/other", "org-wide", "org-user", "p-org"},
		{"quay.io/elsewhere/x", "host-wide", "host-user", "p-host"},
	} {
		got, err := LookupRegistry(ctx, c, "ns", "build-pipeline-operand", tc.image)
		require.NoError(t, err, tc.image)
		require.Equal(t, tc.wantSecret, got.Credential.SecretName, tc.image)
		require.Equal(t, tc.wantUser, got.Credential.Username, tc.image)
		require.Equal(t, tc.wantPass, got.Credential.Password, tc.image)
		require.NotContains(t, got.Credential.String(), tc.wantPass)
		joined := strings.Join(got.Skipped, "\n")
		require.Contains(t, joined, "linked secret gone does not exist")
		require.Contains(t, joined, "secret broken")
		require.Contains(t, joined, "auths entry quay.io/org/team has no username and password")
		require.NotContains(t, joined, "p-broken", "problems never quote a Secret's contents")
	}

	_, err := LookupRegistry(ctx, c, "ns", "build-pipeline-operand", "registry.example.com/org/operand")
	require.True(t, errors.Is(err, ErrNoRegistryCredentials), "got %v", err)
	_, err = LookupRegistry(ctx, c, "ns", "build-pipeline-missing", "quay.io/org/team/operand")
	require.True(t, errors.Is(err, ErrNoRegistryCredentials), "a missing service account means no credentials: %v", err)
	require.NoError(t, c.Create(ctx, serviceAccount("build-pipeline-lonely")))
	_, err = LookupRegistry(ctx, c, "ns", "build-pipeline-lonely", "quay.io/org/team/operand")
	require.True(t, errors.Is(err, ErrNoRegistryCredentials), "nothing linked means no credentials: %v", err)
}

func TestRegistryHost(t *testing.T) {
	require.Equal(t, "quay.io", RegistryHost("quay.io/org/img"))
	require.Equal(t, "registry.local:5000", RegistryHost("registry.local:5000/org/img"))
}
