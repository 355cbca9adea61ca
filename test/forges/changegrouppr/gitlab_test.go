package changegrouppr_test

import (
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/nudgeflow/nudgeflow/activities/changegrouppr"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	glemu "github.com/nudgeflow/nudgeflow/test/forgeemu/gitlab"
)

const glToken = "glpat-Sup3rSecretProjectToken"

type glFixture struct {
	activityRunner
	gl *glemu.Server
}

// setupGitLab is the bundle on the GitLab emulator, in a subgroup, with a Konflux
// SCM basic-auth Secret holding a project access token, and no configured bot: the
// token's user commits.
func setupGitLab(t *testing.T) *glFixture {
	t.Helper()
	e := glemu.New()
	t.Cleanup(e.Close)
	e.AddToken(glToken, glemu.User{Username: "project_7_bot", Name: bot.Name, Email: bot.Email})
	e.CreateProject("org/team", "bundle", "main", bundleFiles())
	return &glFixture{activityRunner: newActivityRunner(t, changegrouppr.Config{}, scmSecret{"gitlab", "oauth2", glToken}, e.URL()+"/org/team/bundle"), gl: e}
}

func (f *glFixture) req(mode changegroupprapi.Mode, known changegroupprapi.PRRef, ready ...string) changegroupprapi.SyncRequest {
	r := newRequest(changegroupprapi.Repo{Provider: "GitLab", URL: f.gl.URL() + "/org/team/bundle", Namespace: "tenant"}, mode, ready...)
	r.Known = known
	return r
}

func TestGitLabHoldThenReleaseOnePipeline(t *testing.T) {
	f := setupGitLab(t)
	o := f.sync(f.req(changegroupprapi.ModeHold, changegroupprapi.PRRef{}, "operator"))
	mr, _ := f.gl.MR("org/team", "bundle", o.PR.Number)
	if o.State != changegroupprapi.PROpen || !o.Draft || !mr.Draft || !strings.HasPrefix(mr.Title, "Draft: ") || !o.HeadHasSkipMarker ||
		!strings.Contains(mr.Description, "\n[skip ci]\n") || o.MarkedReadyByHuman || o.HumanEdits {
		t.Fatalf("first sync: %+v\nMR %+v", o, mr)
	}
	if o.PR.URL != mr.WebURL || !strings.Contains(o.PR.URL, "/org/team/bundle/-/merge_requests/") {
		t.Fatalf("PR URL %q, MR %q", o.PR.URL, mr.WebURL)
	}
	o = f.sync(f.req(changegroupprapi.ModeHold, o.PR, "operator", "operand-a"))
	mr, _ = f.gl.MR("org/team", "bundle", o.PR.Number)
	if !mr.Draft || !strings.HasPrefix(mr.Title, "Draft: ") || f.gl.CIBuilds("org/team", "bundle") != 0 {
		t.Fatalf("a re-render keeps the Draft: prefix and CI held: %+v ci=%d", mr, f.gl.CIBuilds("org/team", "bundle"))
	}
	writes := f.gl.Writes()
	o = f.sync(f.req(changegroupprapi.ModeHold, o.PR, "operator", "operand-a"))
	if f.gl.Writes() != writes {
		t.Fatalf("an unchanged request wrote %d times", f.gl.Writes()-writes)
	}
	writes = f.gl.Writes()
	o = f.sync(f.req(changegroupprapi.ModeRelease, o.PR, "operator", "operand-a"))
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
	f.sync(f.req(changegroupprapi.ModeRelease, o.PR, "operator", "operand-a"))
	if got := f.gl.CIBuilds("org/team", "bundle"); got != 1 {
		t.Fatalf("a repeated release starts nothing, got %d", got)
	}
}

func TestGitLabPersonLiftsDraftOrCommits(t *testing.T) {
	f := setupGitLab(t)
	o := f.sync(f.req(changegroupprapi.ModeHold, changegroupprapi.PRRef{}, "operator"))
	if err := f.gl.MarkReady("org/team", "bundle", o.PR.Number); err != nil {
		t.Fatal(err)
	}
	o = f.sync(f.req(changegroupprapi.ModeHold, o.PR, "operator", "operand-a"))
	if !o.MarkedReadyByHuman || o.Draft {
		t.Fatalf("a person removing the Draft: prefix releases the hold: %+v", o)
	}
	mr, _ := f.gl.MR("org/team", "bundle", o.PR.Number)
	if _, err := f.gl.HumanCommit("org/team", "bundle", mr.Source, glemu.User{Name: "Dev", Email: "dev@example.com"},
		map[string]string{"README.md": "mine\n"}, "docs"); err != nil {
		t.Fatal(err)
	}
	o = f.sync(f.req(changegroupprapi.ModeRelease, o.PR, "operator", "operand-a"))
	if !o.HumanEdits || len(f.gl.Notes("org/team", "bundle", o.PR.Number)) != 1 {
		t.Fatalf("a person's commit stops pushes with one note: %+v notes %q", o, f.gl.Notes("org/team", "bundle", o.PR.Number))
	}
	o = f.close(changegroupprapi.CloseRequest{Repo: f.req(changegroupprapi.ModeHold, o.PR).Repo, Known: o.PR, Comment: "cancelled"})
	if mr, _ = f.gl.MR("org/team", "bundle", o.PR.Number); mr.State != "closed" || o.State != changegroupprapi.PRClosed {
		t.Fatalf("closed: %+v %+v", o, mr)
	}
}

func TestUnknownProviderIsRefused(t *testing.T) {
	f := setupGitLab(t)
	r := f.req(changegroupprapi.ModeHold, changegroupprapi.PRRef{}, "operator")
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

// The GitLab client owes the workflow what the GitHub and Forgejo ones do: rate
// limits wait as told, a 422 is final, a 5xx retries, a 401 is Unauthorized, a
// namespace without credentials is NoCredentials, and the token is never shown.
func TestGitLabErrorsAreClassifiedWithoutTheToken(t *testing.T) {
	f := setupGitLab(t)
	f.checkErrorsClassified(f.req(changegroupprapi.ModeHold, changegroupprapi.PRRef{}, "operator"), f.gl.FailNext, "GitLab422", glToken)
}
