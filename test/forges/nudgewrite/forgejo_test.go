// Package nudgewrite_test runs the direct nudge writer (activities/nudgewrite)
// against a real Gitea server (the API Forgejo shares): what it writes, and what
// it refuses to write, as Renovate would.
package nudgewrite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
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
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
	"github.com/nudgeflow/nudgeflow/internal/ownership/ownershiptest"
	"github.com/nudgeflow/nudgeflow/test/localenv"
)

var shared struct {
	sync.Once
	srv *localenv.Forgejo
	err error
}

// forgejoServer is the package's one Gitea server (each test has its repository).
func forgejoServer(t *testing.T) *localenv.Forgejo {
	t.Helper()
	shared.Do(func() {
		dir := filepath.Join(os.TempDir(), "nudgeflow-nudgewrite-test", strconv.Itoa(os.Getpid()))
		if shared.err = os.MkdirAll(dir, 0o755); shared.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // a cold tool build included
		defer cancel()
		shared.srv, shared.err = localenv.StartForgejo(ctx, dir)
	})
	if shared.err != nil {
		t.Fatalf("starting the Gitea test server: %v", shared.err)
	}
	return shared.srv
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.srv != nil {
		_ = shared.srv.Stop()
		_ = os.RemoveAll(shared.srv.Dir())
	}
	os.Exit(code)
}

const (
	nudging  = "operand"
	nudged   = "consumer"
	built    = "quay.io/org/operand"
	released = "registry.example.com/released/operand"
)

func digest(n int) string { return fmt.Sprintf("sha256:%064x", n) }

var repoSeq atomic.Int64

// fixture is one nudged repository on the server, the tenant's cluster objects
// (Components, the SCM Secret, optionally a Renovate ConfigMap) and the writer in
// a test activity environment whose log lines are kept.
type fixture struct {
	t     *testing.T
	srv   *localenv.Forgejo
	owner string
	name  string
	env   *testsuite.TestActivityEnvironment
	logs  *logRecorder
	base  string // the base branch's head when the repository was made
}

func setup(t *testing.T, files map[string]string, configMap map[string]string) *fixture {
	t.Helper()
	srv := forgejoServer(t)
	f := &fixture{t: t, srv: srv, owner: "acme", name: fmt.Sprintf("consumer-%d", repoSeq.Add(1)), logs: &logRecorder{}}
	require.NoError(t, srv.CreateRepo(f.owner, f.name, "main", files))
	head, ok := srv.Head(f.owner, f.name, "main")
	require.True(t, ok)
	f.base = head.SHA
	for _, l := range []string{renovate.NudgeLabel, "team-x"} {
		require.NoError(t, srv.API("POST", "/repos/"+f.owner+"/"+f.name+"/labels", srv.AdminToken, map[string]any{"name": l, "color": "#00aabb"}, nil))
	}
	repoURL := srv.RepoURL(f.owner, f.name)
	objs := []client.Object{
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: nudged, Namespace: "tenant",
			Annotations: map[string]string{mirrorv1alpha1.AnnotationGitProvider: "forgejo"}},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: nudged, Source: mirrorv1alpha1.ComponentSource{
				GitSource: &mirrorv1alpha1.GitSource{URL: repoURL, Revision: "main"}}}},
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: nudging, Namespace: "tenant"},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: nudging, ContainerImage: built, Source: mirrorv1alpha1.ComponentSource{
				GitSource: &mirrorv1alpha1.GitSource{URL: "https://example.com/org/operand"}}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "scm", Namespace: "tenant",
			Labels: map[string]string{forge.LabelCredentials: "scm", forge.LabelSCMHost: "127.0.0.1"}},
			Type: corev1.SecretTypeBasicAuth,
			Data: map[string][]byte{"username": []byte(localenv.ForgejoBot), "password": []byte(srv.BotToken)}},
	}
	if configMap != nil {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: renovate.NamespaceConfigMap, Namespace: "tenant"}, Data: configMap})
	}
	k8s := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(objs...).Build()
	r := ownershiptest.Repository("tenant", repoURL)
	r.CreationTimestamp = metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	require.NoError(t, k8s.Create(context.Background(), r))
	owner := &ownership.Checker{Reader: k8s, Events: k8s}
	launch := &renovate.Activities{Kube: k8s, Ownership: owner}
	var ts testsuite.WorkflowTestSuite
	ts.SetLogger(f.logs)
	f.env = ts.NewTestActivityEnvironment()
	nudgewrite.New(k8s, changegrouppr.New(k8s, changegrouppr.Config{Ownership: owner}), launch).Register(f.env)
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
	_, a := renovate.BasicAuthIdentity("forgejo", strings.TrimPrefix(f.srv.URL, "http://"), localenv.ForgejoBot, f.srv.BotToken)
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

// TestWriterOnForgejo walks one nudge branch through its life: opened, updated by
// a newer build, an older build refused, a person's commit kept, the closed PR
// recreated.
func TestWriterOnForgejo(t *testing.T) {
	old, first, second := digest(1), digest(2), digest(3)
	f := setup(t, files(old), map[string]string{"labels": "team-x, not-defined"})
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

	// Opened: Renovate's branch, title, labels, header and footer, one commit on
	// the base as Renovate's gitAuthor, every reference under the patterns.
	res := f.write(build(first, t0))
	require.Equal(t, nudgewriteapi.OutcomeOpened, res.Outcome, "%+v", res)
	require.Equal(t, branch, res.Branch)
	require.Equal(t, []string{".tekton/consumer-push.yaml", "Dockerfile"}, res.Files, "the released name is not the nudging component's here: no distribution repository")
	pr, err := f.srv.PR(f.owner, f.name, res.PR)
	require.NoError(t, err)
	require.Equal(t, title(first), pr.Title)
	require.Equal(t, branch, pr.Head.Ref)
	require.Equal(t, "main", pr.Base.Ref)
	require.True(t, strings.HasPrefix(pr.Body, "Image created from 'https://example.com/org/operand?rev="+strings.Repeat("a", 40)+"'\n\n"), pr.Body)
	require.Contains(t, pr.Body, "\n---\n\nTo execute skipped test pipelines write comment `/ok-to-test`\nThis is Konflux nudging PR, not Mintmaker.\n<!--renovate-debug:")
	require.Contains(t, pr.Body, "- [ ] <!-- rebase-check -->If you want to rebase/retry this PR, check this box")
	require.Contains(t, pr.Body, "\n| "+built+" | digest | `"+old[7:14]+"` -> `"+first[7:14]+"` |\n", "Renovate's table")
	require.ElementsMatch(t, []string{renovate.NudgeLabel, "team-x"}, f.labels(res.PR), "the configured labels the repository defines")
	head, ok := f.srv.Head(f.owner, f.name, branch)
	require.True(t, ok)
	require.Equal(t, res.Commit, head.SHA)
	author := f.gitAuthor()
	email := author[strings.LastIndex(author, "<")+1 : len(author)-1]
	require.Equal(t, email, head.AuthorEmail, "Renovate's gitAuthor")
	require.Equal(t, email, head.CommitterEmail, "Renovate's gitAuthor commits too")
	require.Equal(t, []string{f.base}, head.Parents, "one commit on the base, as Renovate's")
	require.True(t, strings.HasPrefix(head.Message, title(first)+"\n\nImage created from "), head.Message)
	require.Contains(t, head.Message, "\n\nSigned-off-by: "+author+"\n"+renovate.TrailerBuiltAt+": "+renovate.BuiltAtStamp(t0)+"\n")
	for path, content := range files(old) {
		got, _ := f.srv.FileAt(f.owner, f.name, branch, path)
		want := content
		if path == "Dockerfile" || path == ".tekton/consumer-push.yaml" {
			want = strings.ReplaceAll(content, old, first)
		}
		require.Equal(t, want, got, path)
	}

	// The same build again (a retry): nothing new.
	again := f.write(build(first, t0))
	require.Equal(t, nudgewriteapi.OutcomeUpdated, again.Outcome, "%+v", again)
	require.Equal(t, res.PR, again.PR)
	require.Equal(t, head.SHA, again.Commit, "no second commit")

	// Updated by a newer build: the same PR, its title, a fresh commit on the base.
	t1 := t0.Add(time.Hour)
	upd := f.write(build(second, t1))
	require.Equal(t, nudgewriteapi.OutcomeUpdated, upd.Outcome, "%+v", upd)
	require.Equal(t, res.PR, upd.PR)
	pr, err = f.srv.PR(f.owner, f.name, res.PR)
	require.NoError(t, err)
	require.Equal(t, title(second), pr.Title, "the title follows the digest")
	got, _ := f.srv.FileAt(f.owner, f.name, branch, "Dockerfile")
	require.Equal(t, "FROM "+built+"@"+second+"\nRUN true\n", got)
	head, _ = f.srv.Head(f.owner, f.name, branch)
	require.Equal(t, []string{f.base}, head.Parents)
	prs, err := f.srv.PRs(f.owner, f.name)
	require.NoError(t, err)
	require.Len(t, prs, 1)

	// An older build (the first, retried late): refused, the newer digest stays.
	late := f.write(build(first, t0))
	require.Equal(t, nudgewriteapi.OutcomeSuperseded, late.Outcome, "%+v", late)
	require.Contains(t, late.Reason, renovate.BuiltAtStamp(t1))
	after, _ := f.srv.Head(f.owner, f.name, branch)
	require.Equal(t, head.SHA, after.SHA, "nothing written")

	// A person's commit on the branch: kept, a newer build does not write over it.
	human, err := f.srv.HumanCommit(f.owner, f.name, branch, map[string]string{"NOTES.md": "mine\n"}, "a note")
	require.NoError(t, err)
	third := digest(4)
	kept := f.write(build(third, t1.Add(time.Hour)))
	require.Equal(t, nudgewriteapi.OutcomePersonCommitted, kept.Outcome, "%+v", kept)
	after, _ = f.srv.Head(f.owner, f.name, branch)
	require.Equal(t, human, after.SHA)

	// The rebase box ticked: the person lets it write again.
	pr, err = f.srv.PR(f.owner, f.name, res.PR)
	require.NoError(t, err)
	require.NoError(t, f.srv.EditBody(f.owner, f.name, res.PR, strings.Replace(pr.Body, "- [ ] <!-- rebase-check -->", "- [x] <!-- rebase-check -->", 1)))
	rebased := f.write(build(third, t1.Add(time.Hour)))
	require.Equal(t, nudgewriteapi.OutcomeUpdated, rebased.Outcome, "%+v", rebased)
	after, _ = f.srv.Head(f.owner, f.name, branch)
	require.Equal(t, []string{f.base}, after.Parents, "a fresh commit on the base")
	pr, _ = f.srv.PR(f.owner, f.name, res.PR)
	require.Contains(t, pr.Body, "- [ ] <!-- rebase-check -->", "the box is cleared by the new body")

	// The PR closed unmerged: recreateWhen always, a new PR for the next build.
	require.NoError(t, f.srv.ClosePR(f.owner, f.name, res.PR))
	fourth := digest(5)
	reopened := f.write(build(fourth, t1.Add(2*time.Hour)))
	require.Equal(t, nudgewriteapi.OutcomeOpened, reopened.Outcome, "%+v", reopened)
	require.NotEqual(t, res.PR, reopened.PR)
	pr, _ = f.srv.PR(f.owner, f.name, reopened.PR)
	require.Equal(t, "open", pr.State)
	require.Equal(t, title(fourth), pr.Title)

	f.requireNoToken(res, again, upd, late, kept, rebased, reopened)
}

// TestAlreadyCurrent: the base already holds the digest: nothing is opened.
func TestAlreadyCurrent(t *testing.T) {
	d := digest(7)
	f := setup(t, files(d), nil)
	res := f.write(build(d, time.Now()))
	require.Equal(t, nudgewriteapi.OutcomeAlreadyCurrent, res.Outcome, "%+v", res)
	_, ok := f.srv.Head(f.owner, f.name, branch)
	require.False(t, ok, "no branch")
	prs, err := f.srv.PRs(f.owner, f.name)
	require.NoError(t, err)
	require.Empty(t, prs)
}

// TestPlatformAutomerge: automerge with platformAutomerge asks Gitea to merge the
// PR once its checks pass, as Renovate does; with no checks Gitea merges it.
func TestPlatformAutomerge(t *testing.T) {
	old, d := digest(8), digest(9)
	f := setup(t, files(old), map[string]string{"automerge": "true"})
	res := f.write(build(d, time.Now()))
	require.Equal(t, nudgewriteapi.OutcomeOpened, res.Outcome, "%+v", res)
	pr, err := f.srv.PR(f.owner, f.name, res.PR)
	require.NoError(t, err)
	require.Contains(t, pr.Body, "**Automerge**: Enabled.")
	require.Eventually(t, func() bool {
		pr, err := f.srv.PR(f.owner, f.name, res.PR)
		return err == nil && pr.Merged
	}, 30*time.Second, 200*time.Millisecond, "Gitea merges the PR itself")
	got, _ := f.srv.FileAt(f.owner, f.name, "main", "Dockerfile")
	require.Equal(t, "FROM "+built+"@"+d+"\nRUN true\n", got)
}

// TestFallback: what the writer does not do is left to Renovate, nothing written.
func TestFallback(t *testing.T) {
	for _, c := range []struct {
		name string
		cm   map[string]string
		says string
	}{
		{"branch automerge", map[string]string{"automerge": "true", "automergeType": "branch"}, `automergeType "branch"`},
		{"automerge schedule", map[string]string{"automerge": "true", "automergeSchedule": "after 10pm"}, "automergeSchedule"},
		{"automerge without the forge's", map[string]string{"automerge": "true", "platformAutomerge": "false"}, "without platformAutomerge"},
		{"automerge ignoring tests", map[string]string{"automerge": "true", "ignoreTests": "true"}, "ignoreTests"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := setup(t, files(digest(10)), c.cm)
			res := f.write(build(digest(11), time.Now()))
			require.Equal(t, nudgewriteapi.OutcomeFallback, res.Outcome, "%+v", res)
			require.Contains(t, res.Reason, c.says)
			_, ok := f.srv.Head(f.owner, f.name, branch)
			require.False(t, ok, "nothing written")
		})
	}
}

// TestTokenStaysInTheWorker: a write that fails at the forge names no token in its
// error, result or log lines.
func TestTokenStaysInTheWorker(t *testing.T) {
	f := setup(t, files(digest(12)), nil)
	res := f.write(build(digest(13), time.Now()))
	require.Equal(t, nudgewriteapi.OutcomeOpened, res.Outcome)
	// The repository gone at the forge: the write fails there.
	require.NoError(t, f.srv.API("DELETE", "/repos/"+f.owner+"/"+f.name, f.srv.AdminToken, nil, nil))
	_, err := f.tryWrite(build(digest(14), time.Now()))
	require.Error(t, err)
	var ae *temporal.ApplicationError
	require.ErrorAs(t, err, &ae)
	require.NotContains(t, err.Error(), f.srv.BotToken)
	f.requireNoToken(res)
}

// requireNoToken: no result and no log line holds the forge token.
func (f *fixture) requireNoToken(results ...nudgewriteapi.WriteResult) {
	f.t.Helper()
	for _, r := range results {
		b, _ := json.Marshal(r)
		require.NotContains(f.t, string(b), f.srv.BotToken)
	}
	require.NotEmpty(f.t, f.logs.text(), "the writer logs")
	require.NotContains(f.t, f.logs.text(), f.srv.BotToken)
}

func (f *fixture) labels(number int) []string {
	var ls []struct{ Name string }
	require.NoError(f.t, f.srv.API("GET", fmt.Sprintf("/repos/%s/%s/issues/%d/labels", f.owner, f.name, number), f.srv.AdminToken, nil, &ls))
	var out []string
	for _, l := range ls {
		out = append(out, l.Name)
	}
	return out
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
