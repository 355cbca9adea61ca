package changegrouppr_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nudgeflow/nudgeflow/activities/changegrouppr"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
)

const token = "ghp_Sup3rSecretTokenValue"

var (
	bot   = forge.Signature{Name: "nudgeflow", Email: "nudgeflow@example.com"}
	human = githubemu.User{Login: "dev", Name: "Dev", Email: "dev@example.com"}
	old   = map[string]string{"op": digest("0"), "a": digest("1"), "b": digest("2")}
)

func digest(c string) string { return "sha256:" + strings.Repeat(c, 64) }

type fixture struct {
	activityRunner
	emu *githubemu.Server
}

func setup(t *testing.T) *fixture {
	t.Helper()
	emu := githubemu.New()
	t.Cleanup(emu.Close)
	emu.AddToken(token, githubemu.User{Login: "nudgeflow[bot]", Name: bot.Name, Email: bot.Email})
	emu.CreateRepo("org", "bundle", "main", bundleFiles())
	return &fixture{activityRunner: newActivityRunner(t, changegrouppr.Config{Bot: bot}, scmSecret{"scm", "nudgeflow", token}, emu.URL()+"/org/bundle"), emu: emu}
}

func (f *fixture) request(mode changegroupprapi.Mode, ready ...string) changegroupprapi.SyncRequest {
	return newRequest(changegroupprapi.Repo{Provider: "github", URL: f.emu.URL() + "/org/bundle", Namespace: "tenant"}, mode, ready...)
}

// newRequest is the tests' sync request for repo: three rows (operator, operand-a,
// operand-b), the named ones ready with fixed new digests, on one branch.
func newRequest(repo changegroupprapi.Repo, mode changegroupprapi.Mode, ready ...string) changegroupprapi.SyncRequest {
	rows := []changegroupprapi.Row{
		{Component: "operator", Image: "quay.io/org/op", Current: old["op"], State: "Waiting"},
		{Component: "operand-a", Image: "quay.io/org/operand-a", Current: old["a"], State: "Waiting"},
		{Component: "operand-b", Image: "quay.io/org/operand-b", Current: old["b"], State: "Waiting"},
	}
	for i, name := range []string{"operator", "operand-a", "operand-b"} {
		for _, r := range ready {
			if r == name {
				rows[i].State, rows[i].New = "Ready", digest(string(rune('a'+i)))
				rows[i].UpdatedAt = time.Date(2026, 2, 12, 10, 30+i, 0, 0, time.UTC)
			}
		}
	}
	return changegroupprapi.SyncRequest{
		Repo:   repo,
		Branch: "konflux/changegroup/cg1", Namespace: "tenant", ChangeGroup: "cg1", NudgedComponent: "bundle",
		ChangeGroupURL: "https://konflux.example/cg1", Rows: rows, Mode: mode,
	}
}

func (f *fixture) csv() string {
	s, _ := f.emu.FileAt("org", "bundle", "konflux/changegroup/cg1", "bundle/manifests/csv.yaml")
	return s
}

func TestHoldThenRelease(t *testing.T) {
	f := setup(t)
	req := f.request(changegroupprapi.ModeHold, "operator")
	o := f.sync(req)
	p, _ := f.emu.PR("org", "bundle", o.PR.Number)
	head, _ := f.emu.Head("org", "bundle", req.Branch)
	if o.State != changegroupprapi.PROpen || !o.Draft || !p.Draft || !o.HeadHasSkipMarker || !strings.Contains(head.Message, "[skip ci]") ||
		!strings.Contains(p.Body, "\n[skip ci]\n") || o.HumanEdits || o.MarkedReadyByHuman || o.PR.LastPushedSHA != head.SHA {
		t.Fatalf("first sync: %+v\nPR %+v", o, p)
	}
	if !strings.Contains(f.csv(), "quay.io/org/op@"+digest("a")) {
		t.Fatalf("csv not rewritten: %s", f.csv())
	}
	if s, _ := f.emu.FileAt("org", "bundle", req.Branch, "README.md"); strings.Contains(s, digest("a")) {
		t.Fatal("README.md is not in fileMatch but was rewritten")
	}

	// Three successive syncs with more ready rows and a newer operator digest.
	for _, r := range []changegroupprapi.SyncRequest{f.request(changegroupprapi.ModeHold, "operator", "operand-a"), f.request(changegroupprapi.ModeHold, "operator", "operand-a")} {
		r.Known = o.PR
		o = f.sync(r)
	}
	r3 := f.request(changegroupprapi.ModeHold, "operator", "operand-a", "operand-b")
	r3.Rows[0].New = digest("f")
	r3.Known = o.PR
	o = f.sync(r3)
	csv := f.csv()
	for _, want := range []string{"quay.io/org/op@" + digest("f"), "quay.io/org/operand-a:v1@" + digest("b"), "quay.io/org/operand-b@" + digest("c")} {
		if !strings.Contains(csv, want) {
			t.Errorf("head lacks %s:\n%s", want, csv)
		}
	}
	if n := len(f.emu.PRs("org", "bundle")); n != 1 {
		t.Fatalf("%d PRs", n)
	}
	if n := f.emu.CIBuilds("org", "bundle"); n != 0 {
		t.Fatalf("CI builds while held: %d", n)
	}
	head, _ = f.emu.Head("org", "bundle", req.Branch)
	main, _ := f.emu.Head("org", "bundle", "main")
	if len(head.Parents) != 1 || head.Parents[0] != main.SHA {
		t.Fatalf("head %v is not one commit on main %s", head.Parents, main.SHA)
	}

	// The same request again writes nothing.
	before := f.emu.Writes()
	if o2 := f.sync(r3); o2.Writes != 0 || f.emu.Writes() != before || o2.HeadSHA != o.HeadSHA {
		t.Fatalf("repeat wrote: %+v (emulator writes %d -> %d)", o2, before, f.emu.Writes())
	}

	// Release: exactly one CI build; a retry adds none.
	rel := r3
	rel.Mode = changegroupprapi.ModeRelease
	o = f.sync(rel)
	if o.Writes != 3 {
		// The head already holds these digests: description and draft in one GraphQL
		// request, then the final commit reuses the head's tree (commit, branch).
		t.Fatalf("release wrote %d times, want 3", o.Writes)
	}
	p, _ = f.emu.PR("org", "bundle", o.PR.Number)
	if o.Draft || p.Draft || o.HeadHasSkipMarker || strings.Contains(p.Body, "[skip ci]") {
		t.Fatalf("release: %+v\n%s", o, p.Body)
	}
	if n := f.emu.CIBuilds("org", "bundle"); n != 1 {
		t.Fatalf("CI builds after release: %d (%+v)", n, f.emu.CIEvents())
	}
	if o = f.sync(rel); o.Writes != 0 || f.emu.CIBuilds("org", "bundle") != 1 {
		t.Fatalf("retried release: %+v, builds %d", o, f.emu.CIBuilds("org", "bundle"))
	}
	if ev := f.emu.CIEvents(); ev[0].Action != "synchronize" {
		t.Fatalf("the build came from %s", ev[0].Action)
	}
}

func TestReleaseRetryAfterEachStep(t *testing.T) {
	// A release writes the body and lifts the draft (one GraphQL request), then makes
	// a tree, a commit and moves the branch. Whichever write fails, the retry
	// converges with exactly one build.
	for failAt := range 4 {
		f := setup(t)
		o := f.sync(f.request(changegroupprapi.ModeHold, "operator", "operand-a"))
		rel := f.request(changegroupprapi.ModeRelease, "operator", "operand-a", "operand-b")
		rel.Known = o.PR
		f.emu.FailWrite(failAt, http.StatusBadGateway)
		if _, err := f.trySync(rel); err == nil {
			t.Fatalf("failAt %d: no failure", failAt)
		}
		o = f.sync(rel)
		if n := f.emu.CIBuilds("org", "bundle"); n != 1 || o.Draft || o.HeadHasSkipMarker {
			t.Fatalf("failAt %d: builds %d, %+v, %+v", failAt, n, o, f.emu.CIEvents())
		}
		if o = f.sync(rel); o.Writes != 0 || f.emu.CIBuilds("org", "bundle") != 1 {
			t.Fatalf("failAt %d: third sync %+v", failAt, o)
		}
	}
}

func TestHumanCommitThenRebase(t *testing.T) {
	f := setup(t)
	req := f.request(changegroupprapi.ModeHold, "operator")
	o := f.sync(req)
	humanSHA, err := f.emu.HumanCommit("org", "bundle", req.Branch, human, map[string]string{"extra.txt": "mine\n"}, "my fix")
	if err != nil {
		t.Fatal(err)
	}
	next := f.request(changegroupprapi.ModeHold, "operator", "operand-a")
	next.Known = o.PR
	for range 3 {
		o = f.sync(next)
		if !o.HumanEdits || !strings.Contains(o.HumanEditReason, "dev@example.com") {
			t.Fatalf("human edits not reported: %+v", o)
		}
	}
	if head, _ := f.emu.Head("org", "bundle", req.Branch); head.SHA != humanSHA {
		t.Fatal("pushed over a human commit")
	}
	if cs := f.emu.Comments("org", "bundle", o.PR.Number); len(cs) != 1 || !strings.Contains(cs[0], "rebase") {
		t.Fatalf("comments: %q", cs)
	}
	// The person ticks rebase; the workflow sees it and syncs with Overwrite.
	p, _ := f.emu.PR("org", "bundle", o.PR.Number)
	_ = f.emu.EditBody("org", "bundle", o.PR.Number, strings.Replace(p.Body, "- [ ] rebase", "- [x] rebase", 1))
	if o = f.sync(next); !o.RebaseRequested {
		t.Fatalf("rebase checkbox not read: %+v", o)
	}
	next.Overwrite = true
	o = f.sync(next)
	head, _ := f.emu.Head("org", "bundle", req.Branch)
	if o.HumanEdits || o.RebaseRequested || head.SHA == humanSHA || head.AuthorEmail != bot.Email {
		t.Fatalf("overwrite: %+v head %+v", o, head)
	}
	if _, ok := f.emu.FileAt("org", "bundle", req.Branch, "extra.txt"); ok {
		t.Fatal("human commit kept")
	}
	// The person's push without a marker built once (PaC's rules); the overwrite did not.
	if !strings.Contains(f.csv(), "operand-a:v1@"+digest("b")) || f.emu.CIBuilds("org", "bundle") != 1 {
		t.Fatalf("after overwrite: builds %d\n%s", f.emu.CIBuilds("org", "bundle"), f.csv())
	}
}

func TestDescriptionEditAndCheckboxes(t *testing.T) {
	f := setup(t)
	req := f.request(changegroupprapi.ModeHold, "operator")
	o := f.sync(req)
	p, _ := f.emu.PR("org", "bundle", o.PR.Number)
	_ = f.emu.EditBody("org", "bundle", o.PR.Number, strings.Replace(p.Body, "- [ ] release now", "- [x] release now", 1))
	req.Known = o.PR
	if o = f.sync(req); !o.ReleaseRequested || o.HumanEdits {
		t.Fatalf("release checkbox: %+v", o)
	}
	// Text outside the managed section (a note, a bot's report) is not an edit: it
	// is kept through re-renders and never pauses the group.
	p, _ = f.emu.PR("org", "bundle", o.PR.Number)
	_ = f.emu.EditBody("org", "bundle", o.PR.Number, "Note from a person\n\n"+p.Body+"\n\n<!-- coverage-bot -->\nCoverage 81%")
	if o = f.sync(f.request(changegroupprapi.ModeHold, "operator", "operand-a")); o.HumanEdits {
		t.Fatalf("text outside the section paused the group: %+v", o)
	}
	p, _ = f.emu.PR("org", "bundle", o.PR.Number)
	if !strings.HasPrefix(p.Body, "Note from a person") || !strings.HasSuffix(p.Body, "Coverage 81%") || !strings.Contains(p.Body, "operand-a") {
		t.Fatalf("the re-render keeps the text around the section:\n%s", p.Body)
	}
	// An edit inside the section pauses, with one comment however often it is seen.
	_ = f.emu.EditBody("org", "bundle", o.PR.Number, strings.Replace(p.Body, "### Component Status", "### Component Status (edited)", 1))
	for range 2 {
		if o = f.sync(req); !o.HumanEdits || !strings.Contains(o.HumanEditReason, "description") {
			t.Fatalf("description edit: %+v", o)
		}
	}
	if cs := f.emu.Comments("org", "bundle", o.PR.Number); len(cs) != 1 {
		t.Fatalf("comments: %q", cs)
	}
	if p2, _ := f.emu.PR("org", "bundle", o.PR.Number); !strings.Contains(p2.Body, "(edited)") {
		t.Fatal("description rewritten over a human edit")
	}
}

func TestMarkedReadyByHuman(t *testing.T) {
	f := setup(t)
	req := f.request(changegroupprapi.ModeHold, "operator")
	o := f.sync(req)
	_ = f.emu.MarkReady("org", "bundle", o.PR.Number)
	req.Known = o.PR
	if o = f.sync(req); !o.MarkedReadyByHuman || o.Writes != 0 {
		t.Fatalf("%+v", o)
	}
}

func TestClosedAndMergedObserved(t *testing.T) {
	f := setup(t)
	req := f.request(changegroupprapi.ModeHold, "operator")
	o := f.sync(req)
	if err := f.emu.MergePR("org", "bundle", o.PR.Number); err != nil {
		t.Fatal(err)
	}
	if obs := f.observe(changegroupprapi.ObserveRequest{Repo: req.Repo, Branch: req.Branch, Known: o.PR}); obs.State != changegroupprapi.PRMerged {
		t.Fatalf("observe merged: %+v", obs)
	}
	req.Known = o.PR
	if o2 := f.sync(req); o2.State != changegroupprapi.PRMerged || o2.Writes != 0 {
		t.Fatalf("sync on merged: %+v", o2)
	}

	g := setup(t)
	req = g.request(changegroupprapi.ModeHold, "operator")
	o = g.sync(req)
	closeReq := changegroupprapi.CloseRequest{Repo: req.Repo, Known: o.PR, Comment: "ChangeGroup cg1 was cancelled."}
	for range 2 {
		if obs := g.close(closeReq); obs.State != changegroupprapi.PRClosed {
			t.Fatalf("close: %+v", obs)
		}
	}
	if cs := g.emu.Comments("org", "bundle", o.PR.Number); len(cs) != 1 || !strings.Contains(cs[0], "cancelled") {
		t.Fatalf("close comments %q", cs)
	}
}

func TestErrorsClassifiedWithoutToken(t *testing.T) {
	f := setup(t)
	f.checkErrorsClassified(f.request(changegroupprapi.ModeHold, "operator"), f.emu.FailNext, "GitHub422", token)
}
