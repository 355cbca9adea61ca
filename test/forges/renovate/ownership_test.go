package renovate_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
	"github.com/nudgeflow/nudgeflow/internal/ownership/ownershiptest"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
)

// appForge is the GitHub emulator with the App (build-service's Secret holds its
// key) installed on org/bundle.
type appForge struct {
	emu    *githubemu.Server
	secret *corev1.Secret
}

func startAppForge(t *testing.T) appForge {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	emu := githubemu.New()
	t.Cleanup(emu.Close)
	emu.RegisterApp(4242, "konflux-app", &key.PublicKey)
	emu.CreateRepo("org", "bundle", "main", map[string]string{"Dockerfile": "FROM quay.io/org/operand@sha256:" + strings.Repeat("0", 64)})
	return appForge{emu: emu, secret: &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: forge.DefaultAppSecret.Name, Namespace: forge.DefaultAppSecret.Namespace},
		Data:       map[string][]byte{forge.KeyAppID: []byte("4242"), forge.KeyAppPrivateKey: keyPEM}}}
}

func githubComponent(ns, name, url string) *mirrorv1alpha1.Component {
	return &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Annotations: map[string]string{mirrorv1alpha1.AnnotationGitProvider: "github"}},
		Spec: mirrorv1alpha1.ComponentSpec{ComponentName: name, Source: mirrorv1alpha1.ComponentSource{
			GitSource: &mirrorv1alpha1.GitSource{URL: url, Revision: "main"}}}}
}

// canRead reports whether token reads org/bundle on the emulator.
func canRead(t *testing.T, f appForge, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.emu.APIURL()+"repos/org/bundle", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// The App's token is minted once per repository and reused until shortly before
// it expires (three launches: one token; before, each launch made five GitHub
// calls, an installation-wide token among them), for that repository alone, with
// contents and pull_requests write, checks and statuses read: exactly what the
// emulator was asked for.
func TestAppTokenIsOneRepositoryLeastPrivilegeAndCached(t *testing.T) {
	f := startAppForge(t)
	u := newUnitWorld(t, "", githubComponent("tenant", "bundle", f.emu.URL()+"/org/bundle"), f.secret)
	before := len(f.emu.Requests())
	var tokens []string
	for i := range 3 {
		name := fmt.Sprintf("run-%d", i)
		req := unitRequest(name)
		req.WorkflowID += fmt.Sprint(i)
		u.launch(req)
		_, _, _, secret := u.createdFor(name, "bundle")
		tokens = append(tokens, secretValue(secret, tokenKey))
	}
	require.Equal(t, tokens[0], tokens[1])
	require.Equal(t, tokens[0], tokens[2])
	mints := f.emu.TokenMints()
	require.Len(t, mints, 1, "one token for three launches")
	require.Equal(t, []string{"org/bundle"}, mints[0].Repositories, "for the one repository")
	require.Equal(t, map[string]string{"contents": "write", "pull_requests": "write", "checks": "read", "statuses": "read"}, mints[0].Permissions)
	var appCalls []string
	for _, r := range f.emu.Requests()[before:] {
		if strings.Contains(r, "/app") || strings.HasSuffix(r, "/installation") {
			appCalls = append(appCalls, r)
		}
	}
	require.Len(t, appCalls, 3, "the App, its installation, the token: once, %v", appCalls)
	require.Equal(t, "org/bundle", f.emu.TokenScope(tokens[0]))
	require.Equal(t, http.StatusOK, canRead(t, f, tokens[0]))
}

// A run that waits in a Kueue queue (or for its branch) longer than its token
// lives does not start with a dead token: a poll of the waiting run renews the
// token in its Secret, once the namespace is checked to own the repository still.
// A revoked ownership leaves the old token to expire (and says why), and a run
// that started keeps its Secret as it is.
func TestAWaitingRunsTokenIsRenewedBeforeItStarts(t *testing.T) {
	f := startAppForge(t)
	// tekton-kueue's admission webhook: every PipelineRun is created pending in a
	// queue, so nudgeflow does not release it (Kueue would).
	queued := interceptor.Funcs{Create: func(ctx context.Context, c ctrlclient.WithWatch, obj ctrlclient.Object, opts ...ctrlclient.CreateOption) error {
		if plr, ok := obj.(*tektonv1.PipelineRun); ok {
			plr.Labels[renovate.LabelKueueQueue] = "nudges"
		}
		return c.Create(ctx, obj, opts...)
	}}
	u := newInterceptedWorld(t, queued, "", githubComponent("tenant", "bundle", f.emu.URL()+"/org/bundle"), f.secret)
	f.emu.SetTokenLifetime(2 * time.Second)
	u.launch(unitRequest("run-queued"))
	plr, _, _, secret := u.createdFor("run-queued", "bundle")
	require.Equal(t, tektonv1.PipelineRunSpecStatusPending, string(plr.Spec.Status), "queued")
	first := secretValue(secret, tokenKey)
	require.NotEmpty(t, secret.Annotations[renovate.AnnotationTokenExpires])
	require.Eventually(t, func() bool { return canRead(t, f, first) == http.StatusUnauthorized }, 30*time.Second, 100*time.Millisecond,
		"the first token expires while the run waits")

	f.emu.SetTokenLifetime(time.Hour)
	poll := func(name string) renovaterun.RunStatus {
		t.Helper()
		v, err := u.env.ExecuteActivity(u.a.RenovateRunStatus, "tenant", name)
		require.NoError(t, err)
		var s renovaterun.RunStatus
		require.NoError(t, v.Get(&s))
		return s
	}
	require.False(t, poll("run-queued").Done)
	_, _, _, secret = u.createdFor("run-queued", "bundle")
	renewed := string(secret.Data[tokenKey])
	require.NotEqual(t, first, renewed, "a new token")
	require.Equal(t, http.StatusOK, canRead(t, f, renewed), "the run starts with a live token")
	require.Equal(t, "org/bundle", f.emu.TokenScope(renewed))
	expires, err := time.Parse(time.RFC3339, secret.Annotations[renovate.AnnotationTokenExpires])
	require.NoError(t, err)
	require.Greater(t, time.Until(expires), renovate.RefreshRunTokenBefore)
	require.NotContains(t, u.logs.String(), renewed, "no token in a log line")

	// A fresh token is not renewed again.
	mints := len(f.emu.TokenMints())
	poll("run-queued")
	require.Len(t, f.emu.TokenMints(), mints)

	// The namespace no longer owns the repository: the token is not renewed. (The
	// run's token is the cached one; its Secret says it expires in a minute, as it
	// would after most of an hour in the queue.)
	u.launch(func() renovateapi.LaunchRequest {
		r := unitRequest("run-revoked")
		r.WorkflowID += "-revoked"
		return r
	}())
	require.NoError(t, u.kube.Delete(context.Background(), ownershiptest.Repository("tenant", f.emu.URL()+"/org/bundle")))
	_, _, _, secret = u.createdFor("run-revoked", "bundle")
	secret.Annotations[renovate.AnnotationTokenExpires] = time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	require.NoError(t, u.kube.Update(context.Background(), secret))
	old := secretValue(secret, tokenKey)
	poll("run-revoked")
	_, _, _, secret = u.createdFor("run-revoked", "bundle")
	require.Equal(t, old, secretValue(secret, tokenKey), "not renewed for a namespace that no longer owns the repository")
	require.Contains(t, u.logs.String(), "was not renewed")
}

// The attack: tenant "attacker" points a Component at org/bundle, which "tenant"
// owns. With the GitHub App, and with a basic-auth Secret of its own that the
// forge would accept, the launch fails for good as RepositoryNotOwned: no token is
// minted for the repository, nothing is written to it, no run or Secret is made,
// and a Warning Event on the attacker's Component says what to create. A later
// Repository of the attacker claiming the URL steals nothing. A second URL for the
// same repository (another name of the forge's host), claimed by the attacker,
// gets a token GitHub names for org/bundle: it is revoked unused.
func TestAnotherTenantsRepositoryGetsNoTokenAndNoWrite(t *testing.T) {
	f := startAppForge(t)
	const attackerPAT = "ghp_attackerTokenTheForgeAccepts000000"
	f.emu.AddToken(attackerPAT, githubemu.User{Login: "attacker", Name: "attacker", Email: "attacker@example.com"})
	victimURL := f.emu.URL() + "/org/bundle"
	u := newUnitWorld(t, "", githubComponent("tenant", "bundle", victimURL), f.secret)
	ctx := context.Background()
	for _, obj := range []ctrlclient.Object{
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "operand", Namespace: "attacker"},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: "operand", ContainerImage: "quay.io/org/operand"}},
		githubComponent("attacker", "stolen", victimURL+".git"),
	} {
		require.NoError(t, u.kube.Create(ctx, obj))
	}
	attack := func(name string) error {
		req := unitRequest(name)
		req.Namespace, req.Nudged, req.WorkflowID = "attacker", "stolen", "nudge/attacker/"+name
		_, err := u.env.ExecuteActivity(u.a.LaunchRenovate, req)
		return err
	}
	requireRefused := func(err error) {
		t.Helper()
		var ae *temporal.ApplicationError
		require.True(t, errors.As(err, &ae), "%v", err)
		require.Equal(t, ownership.ErrorType, ae.Type())
		require.True(t, ae.NonRetryable())
		require.Empty(t, f.emu.TokenMints(), "no token minted")
		require.Empty(t, f.emu.WritesTo("org", "bundle"), "no write to the victim's repository")
	}
	requested := len(f.emu.Requests())
	requireRefused(attack("with-the-app"))

	// The attacker's own basic-auth Secret, which the forge would accept.
	require.NoError(t, u.kube.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "scm", Namespace: "attacker", Labels: map[string]string{
		credentials.LabelCredentials: credentials.LabelCredentialsSCM, credentials.LabelSCMHost: "127.0.0.1"}},
		Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"username": []byte("attacker"), "password": []byte(attackerPAT)}}))
	requireRefused(attack("with-basic-auth"))

	// A later claim of the attacker on the same repository.
	later := ownershiptest.Repository("attacker", victimURL+".git")
	later.CreationTimestamp = metav1.Now()
	require.NoError(t, u.kube.Create(ctx, later))
	requireRefused(attack("with-a-later-repository"))
	require.Len(t, f.emu.Requests(), requested, "the forge heard nothing of any of them")

	var runs tektonv1.PipelineRunList
	require.NoError(t, u.kube.List(ctx, &runs, ctrlclient.InNamespace("attacker")))
	require.Empty(t, runs.Items)
	var events corev1.EventList
	require.NoError(t, u.kube.List(ctx, &events, ctrlclient.InNamespace("attacker")))
	require.NotEmpty(t, events.Items)
	for _, ev := range events.Items {
		require.Equal(t, corev1.EventTypeWarning, ev.Type)
		require.Equal(t, ownership.EventReason, ev.Reason)
		require.Equal(t, "stolen", ev.InvolvedObject.Name)
		require.Contains(t, ev.Message, "namespace attacker does not own repository")
		require.NotContains(t, ev.Message, "namespace tenant", "the owner is not named")
	}

	// Another name of the forge's host: a key of its own, which the attacker claims.
	alias := strings.Replace(victimURL, "127.0.0.1", "localhost", 1)
	require.NoError(t, u.kube.Create(ctx, githubComponent("attacker", "aliased", alias)))
	require.NoError(t, u.kube.Create(ctx, ownershiptest.Repository("attacker", alias)))
	req := unitRequest("via-an-alias")
	req.Namespace, req.Nudged, req.WorkflowID = "attacker", "aliased", "nudge/attacker/alias"
	_, err := u.env.ExecuteActivity(u.a.LaunchRenovate, req)
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, ownership.ErrorType, ae.Type())
	require.Contains(t, ae.Error(), "GitHub names the repository of the token "+victimURL)
	require.Empty(t, f.emu.WritesTo("org", "bundle"))
	require.NoError(t, u.kube.List(ctx, &runs, ctrlclient.InNamespace("attacker")))
	require.Empty(t, runs.Items, "no run, no Secret")
	require.Len(t, f.emu.TokenMints(), 1)
	revoked := slices.ContainsFunc(f.emu.Requests(), func(r string) bool { return r == "DELETE /api/v3/installation/token" })
	require.True(t, revoked, "the token GitHub minted for org/bundle is revoked unused")

	// The owner's nudge goes on.
	u.launch(unitRequest("owner"))
	require.Len(t, f.emu.TokenMints(), 2)
}
