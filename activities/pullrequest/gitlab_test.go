package pullrequest_test

import (
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nudgeflow/nudgeflow/activities/forge"
	pr "github.com/nudgeflow/nudgeflow/activities/pullrequest"
	githubemu "github.com/nudgeflow/nudgeflow/internal/forgeemu/github"
	glemu "github.com/nudgeflow/nudgeflow/internal/forgeemu/gitlab"
)

const glToken = "glpat-Sup3rSecretProjectToken"

type glFixture struct {
	*fixture
	gl *glemu.Server
}

// setupGitLab is the fixture's bundle on the GitLab emulator, in a subgroup, with a
// Konflux SCM basic-auth Secret holding a project access token.
func setupGitLab(t *testing.T) *glFixture {
	t.Helper()
	e := glemu.New()
	t.Cleanup(e.Close)
	e.AddToken(glToken, glemu.User{Username: "project_7_bot", Name: bot.Name, Email: bot.Email})
	e.CreateProject("org/team", "bundle", "main", map[string]string{
		"bundle/manifests/csv.yaml": "image: quay.io/org/op@" + old["op"] + "\nrelated: quay.io/org/operand-a:v1@" + old["a"] +
			"\nother: quay.io/org/operand-b@" + old["b"] + "\n",
		"README.md": "quay.io/org/op@" + old["op"] + "\n",
	})
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gitlab", Namespace: "tenant",
			Labels: map[string]string{forge.LabelCredentials: "scm", forge.LabelSCMHost: "127.0.0.1"}},
		Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{"username": []byte("oauth2"), "password": []byte(glToken)},
	}
	k8s := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(secret).Build()
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	pr.New(k8s, pr.Config{}).Register(env) // no configured bot: the token's user
	gh := githubemu.New()                  // request() names its URL; nothing is sent to it
	t.Cleanup(gh.Close)
	return &glFixture{fixture: &fixture{t: t, env: env, emu: gh}, gl: e}
}

func (f *glFixture) req(mode pr.Mode, known pr.PRRef, ready ...string) pr.SyncRequest {
	r := f.request(mode, ready...)
	r.Repo = pr.Repo{Provider: "GitLab", URL: f.gl.URL() + "/org/team/bundle", Namespace: "tenant"}
	r.Known = known
	return r
}

func TestGitLabHoldThenReleaseOnePipeline(t *testing.T) {
	f := setupGitLab(t)
	o := f.sync(f.req(pr.ModeHold, pr.PRRef{}, "operator"))
	mr, _ := f.gl.MR("org/team", "bundle", o.PR.Number)
	if o.State != pr.PROpen || !o.Draft || !mr.Draft || !strings.HasPrefix(mr.Title, "Draft: ") || !o.HeadHasSkipMarker ||
		!strings.Contains(mr.Description, "\n[skip ci]\n") || o.MarkedReadyByHuman || o.HumanEdits {
		t.Fatalf("first sync: %+v\nMR %+v", o, mr)
	}
	if o.PR.URL != mr.WebURL || !strings.Contains(o.PR.URL, "/org/team/bundle/-/merge_requests/") {
		t.Fatalf("PR URL %q, MR %q", o.PR.URL, mr.WebURL)
	}
	o = f.sync(f.req(pr.ModeHold, o.PR, "operator", "operand-a"))
	mr, _ = f.gl.MR("org/team", "bundle", o.PR.Number)
	if !mr.Draft || !strings.HasPrefix(mr.Title, "Draft: ") || f.gl.CIBuilds("org/team", "bundle") != 0 {
		t.Fatalf("a re-render keeps the Draft: prefix and CI held: %+v ci=%d", mr, f.gl.CIBuilds("org/team", "bundle"))
	}
	writes := f.gl.Writes()
	o = f.sync(f.req(pr.ModeHold, o.PR, "operator", "operand-a"))
	if f.gl.Writes() != writes {
		t.Fatalf("an unchanged request wrote %d times", f.gl.Writes()-writes)
	}
	writes = f.gl.Writes()
	o = f.sync(f.req(pr.ModeRelease, o.PR, "operator", "operand-a"))
	mr, _ = f.gl.MR("org/team", "bundle", o.PR.Number)
	head, _ := f.gl.Head("org/team", "bundle", mr.Source)
	if mr.Draft || mr.Title != "Update bundle (ChangeGroup cg1)" || strings.Contains(mr.Description, "\n[skip ci]\n") || o.HeadHasSkipMarker ||
		strings.Contains(head.Message, "[skip ci]") {
		t.Fatalf("released: %+v\nMR %+v", o, mr)
	}
	if got := f.gl.CIBuilds("org/team", "bundle"); got != 1 {
		t.Fatalf("the release starts exactly one pipeline, got %d: %+v", got, f.gl.CIEvents())
	}
	if got := f.gl.Writes() - writes; got != 2 {
		t.Fatalf("a release is two writes on GitLab (one PUT, one commit), got %d", got)
	}
	f.sync(f.req(pr.ModeRelease, o.PR, "operator", "operand-a"))
	if got := f.gl.CIBuilds("org/team", "bundle"); got != 1 {
		t.Fatalf("a repeated release starts nothing, got %d", got)
	}
}

func TestGitLabPersonLiftsDraftOrCommits(t *testing.T) {
	f := setupGitLab(t)
	o := f.sync(f.req(pr.ModeHold, pr.PRRef{}, "operator"))
	if err := f.gl.MarkReady("org/team", "bundle", o.PR.Number); err != nil {
		t.Fatal(err)
	}
	o = f.sync(f.req(pr.ModeHold, o.PR, "operator", "operand-a"))
	if !o.MarkedReadyByHuman || o.Draft {
		t.Fatalf("a person removing the Draft: prefix releases the hold: %+v", o)
	}
	mr, _ := f.gl.MR("org/team", "bundle", o.PR.Number)
	if _, err := f.gl.HumanCommit("org/team", "bundle", mr.Source, glemu.User{Name: "Dev", Email: "dev@example.com"},
		map[string]string{"README.md": "mine\n"}, "docs"); err != nil {
		t.Fatal(err)
	}
	o = f.sync(f.req(pr.ModeRelease, o.PR, "operator", "operand-a"))
	if !o.HumanEdits || len(f.gl.Notes("org/team", "bundle", o.PR.Number)) != 1 {
		t.Fatalf("a person's commit stops pushes with one note: %+v notes %q", o, f.gl.Notes("org/team", "bundle", o.PR.Number))
	}
	v, err := f.env.ExecuteActivity(pr.CloseActivity, pr.CloseRequest{Repo: f.req(pr.ModeHold, o.PR).Repo, Known: o.PR, Comment: "cancelled"})
	if err != nil {
		t.Fatal(err)
	}
	_ = v.Get(&o)
	if mr, _ = f.gl.MR("org/team", "bundle", o.PR.Number); mr.State != "closed" || o.State != pr.PRClosed {
		t.Fatalf("closed: %+v %+v", o, mr)
	}
}

func TestUnknownProviderIsRefused(t *testing.T) {
	f := setupGitLab(t)
	r := f.req(pr.ModeHold, pr.PRRef{}, "operator")
	r.Repo.Provider = "bitbucket"
	_, err := f.trySync(r)
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != "UnsupportedProvider" || !ae.NonRetryable() {
		t.Fatalf("want UnsupportedProvider, got %v", err)
	}
	r.Repo.Provider = "gitlab"
	f.gl.RevokeToken(glToken)
	_, err = f.trySync(r)
	if err == nil || strings.Contains(err.Error(), glToken) {
		t.Fatalf("want an error without the token, got %v", err)
	}
}
