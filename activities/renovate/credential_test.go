package renovate

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nudgeflow/nudgeflow/activities/forge"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
	githubemu "github.com/nudgeflow/nudgeflow/internal/forgeemu/github"
)

// On GitHub, Renovate pushes as the GitHub App with an installation token scoped
// to the one nudged repository, as build-service does, and commits as the App's
// bot; where the App is not installed it falls back to the namespace's basic-auth
// Secret. The token is only in the run's Secret.
func TestRenovateUsesTheGitHubAppTokenScopedToTheRepository(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	emu := githubemu.New()
	t.Cleanup(emu.Close)
	emu.RegisterApp(4242, "konflux-app", &key.PublicKey)
	emu.CreateRepo("org", "bundle", "main", map[string]string{"Dockerfile": "FROM quay.io/org/operand@sha256:" + "0"})
	emu.CreateRepo("elsewhere", "bundle", "main", map[string]string{"Dockerfile": "FROM quay.io/org/operand@sha256:" + "0"})
	emu.UninstallApp("elsewhere")

	component := func(name, url string) *mirrorv1alpha1.Component {
		return &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant",
			Annotations: map[string]string{mirrorv1alpha1.AnnotationGitProvider: "github"}},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: name, Source: mirrorv1alpha1.ComponentSource{
				GitSource: &mirrorv1alpha1.GitSource{URL: url, Revision: "main"}}}}
	}
	host := emu.URL()[len("http://"):]
	u := newUnitWorld(t, "",
		component("app-bundle", emu.URL()+"/org/bundle"),
		component("pat-bundle", emu.URL()+"/elsewhere/bundle"),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: forge.DefaultAppSecret.Name, Namespace: forge.DefaultAppSecret.Namespace},
			Data: map[string][]byte{forge.KeyAppID: []byte("4242"), forge.KeyAppPrivateKey: keyPEM}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "scm-emu", Namespace: "tenant", Labels: map[string]string{
			credentials.LabelCredentials: credentials.LabelCredentialsSCM, credentials.LabelSCMHost: "127.0.0.1"}},
			Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"username": []byte("pat-user"), "password": []byte(unitToken)}},
	)

	req := unitRequest("run-app")
	req.Nudged = "app-bundle"
	u.launch(req)
	plr, cfg, raw, secret := u.createdFor("run-app", "app-bundle")
	require.Equal(t, "github", cfg.Platform)
	token := secretValue(secret, tokenKey)
	require.NotEmpty(t, token)
	require.NotEqual(t, unitToken, token, "the App's token, not the basic-auth Secret's")
	require.Equal(t, "org/bundle", emu.TokenScope(token), "scoped to the one repository")
	require.Equal(t, "konflux-app[bot]", cfg.Username)
	require.Equal(t, "konflux-app <4242+konflux-app[bot]@users.noreply.github.com>", cfg.GitAuthor)
	require.NotContains(t, string(raw), token)
	for k, v := range plr.Annotations {
		require.NotContains(t, v, token, k)
	}
	require.NotContains(t, u.logs.String(), token, "no token in a log line")

	req = unitRequest("run-pat")
	req.Nudged = "pat-bundle"
	u.launch(req)
	_, cfg, _, secret = u.createdFor("run-pat", "pat-bundle")
	require.Equal(t, unitToken, secretValue(secret, tokenKey), "the App is not installed there: the basic-auth Secret")
	require.Equal(t, "pat-user", cfg.Username)
	require.Contains(t, cfg.GitAuthor, "@users.noreply."+host)
}
