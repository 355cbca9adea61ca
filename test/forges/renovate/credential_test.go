// Package renovate_test checks the forge credentials the Renovate launch hands a run:
// one repository's token, only for a repository the namespace owns.
package renovate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
	ghforge "github.com/nudgeflow/nudgeflow/internal/forge/github"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/ownership/ownershiptest"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
)

// On GitHub, Renovate pushes as the GitHub App with an installation token scoped
// to the one nudged repository, as build-service does, and commits as the App's
// bot; where the App is not installed it falls back to the namespace's basic-auth
// Secret. The token is only in the run's Secret.
func TestRenovateUsesTheGitHubAppTokenScopedToTheRepository(t *testing.T) {
	f := startAppForge(t)
	emu := f.emu
	emu.CreateRepo("elsewhere", "bundle", "main", map[string]string{"Dockerfile": "FROM quay.io/org/operand@sha256:" + "0"})
	emu.UninstallApp("elsewhere")

	component := func(name, url string) *mirrorv1alpha1.Component {
		return &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant",
			Annotations: map[string]string{mirrorv1alpha1.AnnotationGitProvider: "github"}},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: name, Source: mirrorv1alpha1.ComponentSource{
				GitSource: &mirrorv1alpha1.GitSource{URL: url, Revision: "main"}}}}
	}
	u := newUnitWorld(t, "",
		component("app-bundle", emu.URL()+"/org/bundle"),
		component("pat-bundle", emu.URL()+"/elsewhere/bundle"),
		f.secret,
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
	// The bot user's id (GET /users/konflux-app[bot]), not the App's 4242, as build-service commits.
	require.Equal(t, fmt.Sprintf("konflux-app <%d+konflux-app[bot]@users.noreply.127.0.0.1>", githubemu.AppBotUserID(4242)), cfg.GitAuthor)
	require.Equal(t, emu.AppBotUser().Email, strings.TrimSuffix(strings.TrimPrefix(cfg.GitAuthor, "konflux-app <"), ">"), "as the emulator attributes its commits")
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
	require.Empty(t, cfg.Username, "the Secret's user name is free text: Renovate asks the forge who the token is (renovate.BasicAuthIdentity)")
	// The mail domain is the host without its port (Renovate refuses an address with one).
	require.Equal(t, "pat-user <123456+pat-user[bot]@users.noreply.127.0.0.1>", cfg.GitAuthor)
}

// What follows is the part of activities/renovate's unit harness (activity_test.go)
// this test uses: the launch activity on a fake cluster, its logs collected.

const (
	unitToken = "ghp-unit-git-token"
	// tokenKey is the key of the forge token in the run's Secret (renovate's tokenKey).
	tokenKey = "token_0"
)

type unitWorld struct {
	t    *testing.T
	kube ctrlclient.Client
	logs *logBuffer
	env  *testsuite.TestActivityEnvironment
	a    *renovate.Activities
}

// newUnitWorld is a fake cluster with a nudging component "operand" (image
// quay.io/org/operand) plus objs. Every Component given is onboarded as
// build-service onboards it (its namespace owns its repository, since a day); a
// test that needs an unowned one creates it later, through u.kube. The
// activities have their own App token cache.
func newUnitWorld(t *testing.T, operatorNamespace string, objs ...ctrlclient.Object) *unitWorld {
	return newInterceptedWorld(t, interceptor.Funcs{}, operatorNamespace, objs...)
}

// newInterceptedWorld is newUnitWorld with the fake API server's answers changed by funcs.
func newInterceptedWorld(t *testing.T, funcs interceptor.Funcs, operatorNamespace string, objs ...ctrlclient.Object) *unitWorld {
	all := append([]ctrlclient.Object{
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "operand", Namespace: "tenant"},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: "operand", ContainerImage: "quay.io/org/operand"}},
	}, objs...)
	for _, o := range all {
		if c, ok := o.(*mirrorv1alpha1.Component); ok && c.Spec.Source.GitSource != nil {
			r := ownershiptest.Repository(c.Namespace, c.Spec.Source.GitSource.URL)
			r.CreationTimestamp = metav1.NewTime(time.Now().Add(-24 * time.Hour).Truncate(time.Second))
			all = append(all, r)
		}
	}
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(all...).WithInterceptorFuncs(funcs).Build()
	logs := &logBuffer{}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	env := suite.NewTestActivityEnvironment()
	a := &renovate.Activities{Kube: c, OperatorNamespace: operatorNamespace, AppTokens: &ghforge.AppTokens{}}
	env.RegisterActivity(a)
	return &unitWorld{t: t, kube: c, logs: logs, env: env, a: a}
}

func (u *unitWorld) launch(req renovateapi.LaunchRequest) renovateapi.LaunchResult {
	u.t.Helper()
	v, err := u.env.ExecuteActivity(u.a.LaunchRenovate, req)
	require.NoError(u.t, err)
	var res renovateapi.LaunchResult
	require.NoError(u.t, v.Get(&res))
	return res
}

func unitRequest(name string) renovateapi.LaunchRequest {
	return renovateapi.LaunchRequest{Namespace: "tenant", Name: name, WorkflowID: "nudge/tenant/uid/bundle", Attempt: 1, Nudging: "operand", Nudged: "bundle", Build: imagebuild.Build{ImageURL: "quay.io/org/operand:rev1", Digest: "sha256:" + strings.Repeat("1", 64), BuildPipelineRun: "operand-on-push", RepoAtSHA: "https://github.example.com/org/operand?rev=" + strings.Repeat("a", 40)}}
}

// createdFor reads what the launch of a run that nudges nudged wrote: the run, its
// config and its Secret.
func (u *unitWorld) createdFor(name, nudged string) (*tektonv1.PipelineRun, renovate.Config, []byte, *corev1.Secret) {
	u.t.Helper()
	ctx := context.Background()
	plr := &tektonv1.PipelineRun{}
	require.NoError(u.t, u.kube.Get(ctx, ctrlclient.ObjectKey{Namespace: "tenant", Name: name}, plr))
	var cm corev1.ConfigMap
	require.NoError(u.t, u.kube.Get(ctx, ctrlclient.ObjectKey{Namespace: "tenant", Name: name}, &cm))
	raw := []byte(cm.Data[nudged+".json"])
	var cfg renovate.Config
	require.NoError(u.t, json.Unmarshal(raw, &cfg))
	var secret corev1.Secret
	require.NoError(u.t, u.kube.Get(ctx, ctrlclient.ObjectKey{Namespace: "tenant", Name: name}, &secret))
	return plr, cfg, raw, &secret
}

// secretValue reads a key of the fake client's Secret (it keeps StringData as written).
func secretValue(s *corev1.Secret, key string) string {
	if v, ok := s.Data[key]; ok {
		return string(v)
	}
	return s.StringData[key]
}

// logBuffer collects the activities' log lines for the test to read.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
