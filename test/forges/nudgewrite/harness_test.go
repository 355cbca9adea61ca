// Package nudgewrite_test runs the direct nudge writer (activities/nudgewrite)
// against a real Gitea server (the API Forgejo shares) and the GitHub emulator:
// what it writes, and what it refuses to write, as Renovate would.
package nudgewrite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nudgeflow/nudgeflow/activities/changegrouppr"
	"github.com/nudgeflow/nudgeflow/activities/nudgewrite"
	"github.com/nudgeflow/nudgeflow/activities/renovate"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/nudgewriteapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	ghforge "github.com/nudgeflow/nudgeflow/internal/forge/github"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
	"github.com/nudgeflow/nudgeflow/internal/ownership/ownershiptest"
)

// commit and pr are what the tests read of a forge's commits and pull requests.
type commit struct {
	SHA, Message, AuthorEmail, CommitterEmail string
	Parents                                   []string
}

type pr struct {
	Number             int
	Title, Body, State string
	Head, Base         string
	Merged             bool
	Labels             []string
}

// repoForge is one repository on a forge under test, as the tests drive it.
type repoForge interface {
	provider() string
	url() string
	// secretUser and token are the SCM Secret's; host is its scm.host label.
	secretUser() string
	token() string
	head(branch string) (commit, bool)
	fileAt(ref, path string) (string, bool)
	pr(number int) pr
	prs() []pr
	humanCommit(branch string, files map[string]string, message string) (string, error)
	editBody(number int, body string) error
	closePR(number int) error
	breakRepo() error
}

const (
	nudging  = "operand"
	nudged   = "consumer"
	built    = "quay.io/org/operand"
	released = "registry.example.com/released/operand"
)

func digest(n int) string { return fmt.Sprintf("sha256:%064x", n) }

var repoSeq atomic.Int64

func nextRepoName() string { return fmt.Sprintf("consumer-%d", repoSeq.Add(1)) }

// fixture is one nudged repository, the tenant's cluster objects (Components,
// the SCM Secret, optionally a Renovate ConfigMap and more) and the writer in a
// test activity environment whose log lines are kept.
type fixture struct {
	t    *testing.T
	k8s  client.Client
	fg   repoForge
	env  *testsuite.TestActivityEnvironment
	logs *logRecorder
	base string // the base branch's head when the repository was made
	// author, when set, is the gitAuthor Renovate commits as (else the basic-auth
	// Secret's, renovate.BasicAuthIdentity).
	author string
}

func newFixture(t *testing.T, fg repoForge, configMap map[string]string, more ...client.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, fg: fg, logs: &logRecorder{}}
	head, ok := fg.head("main")
	require.True(t, ok)
	f.base = head.SHA
	objs := append([]client.Object{
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: nudged, Namespace: "tenant",
			Annotations: map[string]string{mirrorv1alpha1.AnnotationGitProvider: fg.provider()}},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: nudged, Source: mirrorv1alpha1.ComponentSource{
				GitSource: &mirrorv1alpha1.GitSource{URL: fg.url(), Revision: "main"}}}},
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: nudging, Namespace: "tenant"},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: nudging, ContainerImage: built, Source: mirrorv1alpha1.ComponentSource{
				GitSource: &mirrorv1alpha1.GitSource{URL: "https://example.com/org/operand"}}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "scm", Namespace: "tenant",
			Labels: map[string]string{forge.LabelCredentials: "scm", forge.LabelSCMHost: "127.0.0.1"}},
			Type: corev1.SecretTypeBasicAuth,
			Data: map[string][]byte{"username": []byte(fg.secretUser()), "password": []byte(fg.token())}},
	}, more...)
	if configMap != nil {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: renovate.NamespaceConfigMap, Namespace: "tenant"}, Data: configMap})
	}
	k8s := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(objs...).Build()
	r := ownershiptest.Repository("tenant", fg.url())
	r.CreationTimestamp = metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	require.NoError(t, k8s.Create(context.Background(), r))
	f.k8s = k8s
	owner := &ownership.Checker{Reader: k8s, Events: k8s}
	launch := &renovate.Activities{Kube: k8s, Ownership: owner}
	var ts testsuite.WorkflowTestSuite
	ts.SetLogger(f.logs)
	f.env = ts.NewTestActivityEnvironment()
	// A token cache of the test's own (the App's tokens of one emulator).
	nudgewrite.New(k8s, changegrouppr.New(k8s, changegrouppr.Config{Ownership: owner, AppTokens: &ghforge.AppTokens{}}), launch).Register(f.env)
	return f
}

// build is a build of the nudging component with digest d, started at.
func build(d string, at time.Time) imagebuild.Build {
	return imagebuild.Build{Image: built, ImageURL: built + ":v1", Digest: d, PullSpec: built + "@" + d,
		BuildPipelineRun: "operand-build", BuiltAt: at, RepoAtSHA: "https://example.com/org/operand?rev=" + strings.Repeat("a", 40)}
}

func (f *fixture) tryWrite(b imagebuild.Build) (nudgewriteapi.WriteResult, error) {
	v, err := f.env.ExecuteActivity(nudgewriteapi.WriteActivity, nudgewriteapi.WriteRequest{Namespace: "tenant",
		WorkflowID: "nudge-" + b.Digest[7:19], Nudging: nudging, Nudged: nudged, Build: b})
	var res nudgewriteapi.WriteResult
	if err == nil {
		err = v.Get(&res)
	}
	return res, err
}

func (f *fixture) write(b imagebuild.Build) nudgewriteapi.WriteResult {
	f.t.Helper()
	res, err := f.tryWrite(b)
	require.NoError(f.t, err)
	return res
}

// gitAuthor is the identity Renovate commits as with the fixture's Secret.
func (f *fixture) gitAuthor() string {
	if f.author != "" {
		return f.author
	}
	host := strings.TrimPrefix(strings.TrimPrefix(f.fg.url(), "http://"), "https://")
	host = host[:strings.Index(host, "/")]
	_, a := renovate.BasicAuthIdentity(f.fg.provider(), host, f.fg.secretUser(), f.fg.token())
	return a
}

const branch = renovate.BranchPrefix + nudged + "-component-update-" + nudging

func title(d string) string {
	return "Update " + nudging + " to " + strings.TrimPrefix(d, "sha256:")[:7]
}

func files(old string) map[string]string {
	return map[string]string{
		"Dockerfile":                 "FROM " + built + "@" + old + "\nRUN true\n",
		"Containerfile":              "FROM " + released + ":v1@" + old + "\n",
		".tekton/consumer-push.yaml": "steps:\n  - image: " + built + ":v1@" + old + "\n",
		"README.md":                  "outside fileMatch: " + built + "@" + old + "\n",
	}
}

// setLabels sets the namespace's Renovate ConfigMap's labels key.
func (f *fixture) setLabels(labels string) {
	f.t.Helper()
	var cm corev1.ConfigMap
	require.NoError(f.t, f.k8s.Get(context.Background(), client.ObjectKey{Namespace: "tenant", Name: renovate.NamespaceConfigMap}, &cm))
	cm.Data["labels"] = labels
	require.NoError(f.t, f.k8s.Update(context.Background(), &cm))
}

// requireNoToken: no result and no log line holds the forge token.
func (f *fixture) requireNoToken(results ...nudgewriteapi.WriteResult) {
	f.t.Helper()
	for _, r := range results {
		b, _ := json.Marshal(r)
		require.NotContains(f.t, string(b), f.fg.token())
	}
	require.NotEmpty(f.t, f.logs.text(), "the writer logs")
	require.NotContains(f.t, f.logs.text(), f.fg.token())
}

// logRecorder keeps every log line the activities write.
type logRecorder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logRecorder) line(level, msg string, kv ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(&l.b, level, msg, fmt.Sprint(kv...))
}

func (l *logRecorder) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logRecorder) Debug(msg string, kv ...any) { l.line("DEBUG", msg, kv...) }
func (l *logRecorder) Info(msg string, kv ...any)  { l.line("INFO", msg, kv...) }
func (l *logRecorder) Warn(msg string, kv ...any)  { l.line("WARN", msg, kv...) }
func (l *logRecorder) Error(msg string, kv ...any) { l.line("ERROR", msg, kv...) }
