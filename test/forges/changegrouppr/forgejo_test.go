package changegrouppr_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/nudgeflow/nudgeflow/activities/changegrouppr"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	fjforge "github.com/nudgeflow/nudgeflow/internal/forge/forgejo"
	"github.com/nudgeflow/nudgeflow/test/forgeemu/faultproxy"
	"github.com/nudgeflow/nudgeflow/test/localenv"
)

// The Forgejo tests run the sync, observe and close activities against a real Gitea
// server (the API Forgejo shares), built by hack/tools.sh, with CI builds counted from
// its webhooks by Pipelines as Code's rules. One server serves the package; each test
// has its own repository. Its tree listings page every 2 entries, so every sync reads
// trees across pages.

var shared struct {
	sync.Once
	srv *localenv.Forgejo
	err error
}

func forgejoServer(t *testing.T) *localenv.Forgejo {
	t.Helper()
	shared.Do(func() {
		base := filepath.Join(os.TempDir(), "nudgeflow-forgejo-test")
		removeStaleServers(base)
		dir := filepath.Join(base, strconv.Itoa(os.Getpid()))
		if shared.err = os.MkdirAll(dir, 0o755); shared.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // a cold tool build included
		defer cancel()
		shared.srv, shared.err = localenv.StartForgejoWith(ctx, dir, localenv.ForgejoOptions{TreesPerPage: 2})
	})
	if shared.err != nil {
		t.Fatalf("starting the Forgejo test server: %v", shared.err)
	}
	return shared.srv
}

// removeStaleServers deletes the state of servers whose test binary is gone (the
// kernel killed the servers with them).
func removeStaleServers(base string) {
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, 0) != nil {
			_ = os.RemoveAll(filepath.Join(base, e.Name()))
		}
	}
}

var repoSeq atomic.Int64

type fjFixture struct {
	activityRunner
	srv   *localenv.Forgejo
	proxy *faultproxy.Proxy
	owner string
	name  string
}

func setupForgejo(t *testing.T) *fjFixture {
	t.Helper()
	srv := forgejoServer(t)
	f := &fjFixture{srv: srv, owner: "acme", name: fmt.Sprintf("bundle-%d", repoSeq.Add(1))}
	if err := srv.CreateRepo(f.owner, f.name, "main", bundleFiles()); err != nil {
		t.Fatal(err)
	}
	if err := srv.WatchCI(f.owner, f.name); err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	f.proxy = proxy
	f.activityRunner = newActivityRunner(t, changegrouppr.Config{Bot: forge.Signature{Name: "nudgeflow", Email: srv.BotEmail}},
		scmSecret{"scm", localenv.ForgejoBot, srv.BotToken}, proxy.URL+"/"+f.owner+"/"+f.name)
	return f
}

// request is the GitHub tests' request (same rows, digests and branch) for this
// fixture's repository, through the fault proxy.
func (f *fjFixture) request(mode changegroupprapi.Mode, ready ...string) changegroupprapi.SyncRequest {
	return newRequest(changegroupprapi.Repo{Provider: "forgejo", URL: f.proxy.URL + "/" + f.owner + "/" + f.name, Namespace: "tenant"}, mode, ready...)
}

func (f *fjFixture) csv() string {
	s, _ := f.srv.FileAt(f.owner, f.name, "konflux/changegroup/cg1", "bundle/manifests/csv.yaml")
	return s
}

func (f *fjFixture) pr(number int) localenv.ForgejoPR {
	f.t.Helper()
	p, err := f.srv.PR(f.owner, f.name, number)
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fjFixture) head(branch string) localenv.ForgejoCommit {
	f.t.Helper()
	c, ok := f.srv.Head(f.owner, f.name, branch)
	if !ok {
		f.t.Fatalf("no branch %s", branch)
	}
	return c
}

func (f *fjFixture) builds() int {
	f.t.Helper()
	n, err := f.srv.CIBuilds(context.Background(), f.owner, f.name)
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// merge merges a PR as the admin once the server allows it (it checks mergeability
// in the background after each push or edit).
func (f *fjFixture) merge(number int) {
	f.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := f.srv.MergePR(f.owner, f.name, number)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("merge: %v", err)
		}
		<-time.After(200 * time.Millisecond)
	}
}

func (f *fjFixture) comments(number int) []string {
	f.t.Helper()
	cs, err := f.srv.Comments(f.owner, f.name, number)
	if err != nil {
		f.t.Fatal(err)
	}
	return cs
}

func TestForgejoHoldThenRelease(t *testing.T) {
	f := setupForgejo(t)
	req := f.request(changegroupprapi.ModeHold, "operator")
	o := f.sync(req)
	p := f.pr(o.PR.Number)
	head := f.head(req.Branch)
	if o.Writes != 2 { // the commit with its branch, the PR
		t.Fatalf("opening wrote %d times, want 2", o.Writes)
	}
	if o.State != changegroupprapi.PROpen || !o.Draft || !p.Draft || !strings.HasPrefix(p.Title, "WIP: ") || !o.HeadHasSkipMarker ||
		!strings.Contains(head.Message, "[skip ci]") || !strings.Contains(p.Body, "\n[skip ci]\n") || o.HumanEdits ||
		o.MarkedReadyByHuman || o.PR.LastPushedSHA != head.SHA || head.AuthorEmail != f.srv.BotEmail {
		t.Fatalf("first sync: %+v\nPR %+v\nhead %+v", o, p, head)
	}
	if !strings.Contains(f.csv(), "quay.io/org/op@"+digest("a")) {
		t.Fatalf("csv not rewritten: %s", f.csv())
	}
	if s, _ := f.srv.FileAt(f.owner, f.name, req.Branch, "README.md"); strings.Contains(s, digest("a")) {
		t.Fatal("README.md is not in fileMatch but was rewritten")
	}

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
	prs, err := f.srv.PRs(f.owner, f.name)
	if err != nil {
		t.Fatal(err)
	}
	ours := 0
	for _, p := range prs {
		if p.Head.Ref == req.Branch {
			ours++
		}
	}
	if ours != 1 {
		t.Fatalf("%d PRs from %s", ours, req.Branch)
	}
	if n := f.builds(); n != 0 {
		t.Fatalf("CI builds while held: %d", n)
	}
	head = f.head(req.Branch)
	main := f.head("main")
	if len(head.Parents) != 1 || head.Parents[0] != main.SHA {
		t.Fatalf("head %v is not one commit on main %s", head.Parents, main.SHA)
	}

	// The same request again writes nothing.
	before := f.proxy.Writes()
	if o2 := f.sync(r3); o2.Writes != 0 || f.proxy.Writes() != before || o2.HeadSHA != o.HeadSHA {
		t.Fatalf("repeat wrote: %+v", o2)
	}

	// Release: four writes (one PATCH: title without WIP: and the description without
	// the marker; the final commit moved onto the existing branch by compare-and-swap,
	// the commit into the scratch branch, the branch update with
	// old_commit_id, the scratch branch's deletion), exactly one CI build; a retry
	// writes nothing and adds none.
	rel := r3
	rel.Mode = changegroupprapi.ModeRelease
	o = f.sync(rel)
	if o.Writes != 4 {
		t.Fatalf("release wrote %d times, want 4", o.Writes)
	}
	p = f.pr(o.PR.Number)
	if o.Draft || p.Draft || strings.HasPrefix(p.Title, "WIP") || o.HeadHasSkipMarker || strings.Contains(p.Body, "[skip ci]") {
		t.Fatalf("release: %+v\n%+v", o, p)
	}
	if n := f.builds(); n != 1 {
		t.Fatalf("CI builds after release: %d", n)
	}
	if o = f.sync(rel); o.Writes != 0 || f.builds() != 1 {
		t.Fatalf("retried release: %+v, builds %d", o, f.builds())
	}
	ev, err := f.srv.CIEvents(context.Background(), f.owner, f.name)
	if err != nil || len(ev) != 1 || ev[0].Action != "synchronized" || ev[0].HeadSHA != o.HeadSHA {
		t.Fatalf("the build: %+v %v (head %s)", ev, err, o.HeadSHA)
	}
}

func TestForgejoReleaseRetryAfterEachWrite(t *testing.T) {
	// A release writes the title and description (one PATCH), then the final commit
	// (one contents request). Whichever write fails, before the server applied it or
	// after (the answer lost), the retry converges with exactly one build.
	for failAt := range 2 {
		for _, applied := range []bool{false, true} {
			f := setupForgejo(t)
			o := f.sync(f.request(changegroupprapi.ModeHold, "operator", "operand-a"))
			rel := f.request(changegroupprapi.ModeRelease, "operator", "operand-a", "operand-b")
			rel.Known = o.PR
			f.proxy.FailWrite(failAt, http.StatusBadGateway, applied)
			if _, err := f.trySync(rel); err == nil {
				t.Fatalf("failAt %d applied %v: no failure", failAt, applied)
			}
			o = f.sync(rel)
			if n := f.builds(); n != 1 || o.Draft || o.HeadHasSkipMarker {
				t.Fatalf("failAt %d applied %v: builds %d, %+v", failAt, applied, n, o)
			}
			if o = f.sync(rel); o.Writes != 0 || f.builds() != 1 {
				t.Fatalf("failAt %d applied %v: third sync %+v", failAt, applied, o)
			}
		}
	}
}

func TestForgejoHumanCommitThenRebase(t *testing.T) {
	f := setupForgejo(t)
	req := f.request(changegroupprapi.ModeHold, "operator")
	o := f.sync(req)
	humanSHA, err := f.srv.HumanCommit(f.owner, f.name, req.Branch, map[string]string{"extra.txt": "mine\n"}, "my fix")
	if err != nil {
		t.Fatal(err)
	}
	next := f.request(changegroupprapi.ModeHold, "operator", "operand-a")
	next.Known = o.PR
	for range 3 {
		o = f.sync(next)
		if !o.HumanEdits || !strings.Contains(o.HumanEditReason, f.srv.HumanEmail) {
			t.Fatalf("human edits not reported: %+v", o)
		}
	}
	if head := f.head(req.Branch); head.SHA != humanSHA {
		t.Fatal("pushed over a human commit")
	}
	if cs := f.comments(o.PR.Number); len(cs) != 1 || !strings.Contains(cs[0], "rebase") {
		t.Fatalf("comments: %q", cs)
	}
	p := f.pr(o.PR.Number)
	if err := f.srv.EditBody(f.owner, f.name, o.PR.Number, strings.Replace(p.Body, "- [ ] rebase", "- [x] rebase", 1)); err != nil {
		t.Fatal(err)
	}
	if o = f.sync(next); !o.RebaseRequested {
		t.Fatalf("rebase checkbox not read: %+v", o)
	}
	next.Overwrite = true
	o = f.sync(next)
	head := f.head(req.Branch)
	if o.HumanEdits || o.RebaseRequested || head.SHA == humanSHA || head.AuthorEmail != f.srv.BotEmail {
		t.Fatalf("overwrite: %+v head %+v", o, head)
	}
	if _, ok := f.srv.FileAt(f.owner, f.name, req.Branch, "extra.txt"); ok {
		t.Fatal("human commit kept")
	}
	// The person's push without a marker built once (PaC's rules); the overwrite did not.
	if !strings.Contains(f.csv(), "operand-a:v1@"+digest("b")) || f.builds() != 1 {
		t.Fatalf("after overwrite: builds %d\n%s", f.builds(), f.csv())
	}
}

func TestForgejoHeadMovedDuringPush(t *testing.T) {
	// A person pushes between the sync's read and its push: the push is refused
	// (the branch is read again right before the contents request), the sync reads
	// again and reports the human edit; nothing of theirs is overwritten.
	f := setupForgejo(t)
	req := f.request(changegroupprapi.ModeHold, "operator")
	o := f.sync(req)
	next := f.request(changegroupprapi.ModeHold, "operator", "operand-a")
	next.Known = o.PR
	var humanSHA string
	// The sync reads the branch once with the PR, and once more right before its
	// contents request: the person pushes just before that second read.
	f.proxy.BeforeRequest(2, func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/branches/"+req.Branch)
	}, func() {
		var err error
		if humanSHA, err = f.srv.HumanCommit(f.owner, f.name, req.Branch, map[string]string{"extra.txt": "mine\n"}, "my fix"); err != nil {
			t.Error(err)
		}
	})
	o = f.sync(next)
	if head := f.head(req.Branch); head.SHA != humanSHA || !o.HumanEdits {
		t.Fatalf("head %s (human %s), %+v", head.SHA, humanSHA, o)
	}
}

func TestForgejoBaseMovedUnderPush(t *testing.T) {
	isContents := func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/contents")
	}
	// A commit lands on the base between the sync's read and its push, changing a
	// file the push changes: the server refuses the push (sha does not match); the
	// error is retryable and the retry pushes on the new base.
	f := setupForgejo(t)
	req := f.request(changegroupprapi.ModeHold, "operator")
	o := f.sync(req)
	next := f.request(changegroupprapi.ModeHold, "operator", "operand-a")
	next.Known = o.PR
	f.proxy.BeforeRequest(1, isContents, func() {
		csv, _ := f.srv.FileAt(f.owner, f.name, "main", "bundle/manifests/csv.yaml")
		if _, err := f.srv.HumanCommit(f.owner, f.name, "main", map[string]string{"bundle/manifests/csv.yaml": csv + "# merged meanwhile\n"}, "docs"); err != nil {
			t.Error(err)
		}
	})
	_, err := f.trySync(next)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != "BaseMoved" || appErr.NonRetryable() {
		t.Fatalf("a push on a moved base: %v, want a retryable BaseMoved", err)
	}
	f.sync(next)
	if csv := f.csv(); !strings.Contains(csv, "# merged meanwhile") || !strings.Contains(csv, "operand-a:v1@"+digest("b")) {
		t.Fatalf("the retry is on the new base with the new digests:\n%s", csv)
	}

	// A person lifts the draft and merges at once, while nudgeflow releases: the
	// final push meets the merged base, and the PR's state is the answer.
	g := setupForgejo(t)
	req = g.request(changegroupprapi.ModeHold, "operator")
	o = g.sync(req)
	release := g.request(changegroupprapi.ModeRelease, "operator")
	release.Known = o.PR
	g.proxy.BeforeRequest(1, isContents, func() { g.merge(o.PR.Number) })
	if o2 := g.sync(release); o2.State != changegroupprapi.PRMerged {
		t.Fatalf("release racing a merge: %+v", o2)
	}
}

func TestForgejoDescriptionEditAndCheckboxes(t *testing.T) {
	f := setupForgejo(t)
	req := f.request(changegroupprapi.ModeHold, "operator")
	o := f.sync(req)
	p := f.pr(o.PR.Number)
	_ = f.srv.EditBody(f.owner, f.name, o.PR.Number, strings.Replace(p.Body, "- [ ] release now", "- [x] release now", 1))
	req.Known = o.PR
	if o = f.sync(req); !o.ReleaseRequested || o.HumanEdits {
		t.Fatalf("release checkbox: %+v", o)
	}
	p = f.pr(o.PR.Number)
	_ = f.srv.EditBody(f.owner, f.name, o.PR.Number, "Note from a person\n\n"+p.Body+"\n\n<!-- coverage-bot -->\nCoverage 81%")
	next := f.request(changegroupprapi.ModeHold, "operator", "operand-a")
	next.Known = o.PR
	if o = f.sync(next); o.HumanEdits {
		t.Fatalf("text outside the section paused the group: %+v", o)
	}
	p = f.pr(o.PR.Number)
	if !strings.HasPrefix(p.Body, "Note from a person") || !strings.HasSuffix(p.Body, "Coverage 81%") || !strings.Contains(p.Body, "operand-a") {
		t.Fatalf("the re-render keeps the text around the section:\n%s", p.Body)
	}
	_ = f.srv.EditBody(f.owner, f.name, o.PR.Number, strings.Replace(p.Body, "### Component Status", "### Component Status (edited)", 1))
	for range 2 {
		if o = f.sync(req); !o.HumanEdits || !strings.Contains(o.HumanEditReason, "description") {
			t.Fatalf("description edit: %+v", o)
		}
	}
	if cs := f.comments(o.PR.Number); len(cs) != 1 {
		t.Fatalf("comments: %q", cs)
	}
	if p2 := f.pr(o.PR.Number); !strings.Contains(p2.Body, "(edited)") {
		t.Fatal("description rewritten over a human edit")
	}
	if n := f.builds(); n != 0 {
		t.Fatalf("description edits built %d times", n)
	}
}

func TestForgejoMarkedReadyByHuman(t *testing.T) {
	f := setupForgejo(t)
	req := f.request(changegroupprapi.ModeHold, "operator")
	o := f.sync(req)
	if err := f.srv.MarkReady(f.owner, f.name, o.PR.Number); err != nil {
		t.Fatal(err)
	}
	req.Known = o.PR
	if o = f.sync(req); !o.MarkedReadyByHuman || o.Writes != 0 || o.Draft {
		t.Fatalf("%+v", o)
	}
	// Lifting the WIP prefix is an edited event: no build (the head still holds the marker).
	if n := f.builds(); n != 0 {
		t.Fatalf("marking ready built %d times", n)
	}
}

func TestForgejoClosedAndMergedObserved(t *testing.T) {
	f := setupForgejo(t)
	req := f.request(changegroupprapi.ModeHold, "operator")
	o := f.sync(req)
	// The server refuses to merge a work-in-progress PR: a person lifts the prefix
	// first.
	if err := f.srv.MarkReady(f.owner, f.name, o.PR.Number); err != nil {
		t.Fatal(err)
	}
	f.merge(o.PR.Number)
	if obs := f.observe(changegroupprapi.ObserveRequest{Repo: req.Repo, Branch: req.Branch, Known: o.PR}); obs.State != changegroupprapi.PRMerged {
		t.Fatalf("observe merged: %+v", obs)
	}
	req.Known = o.PR
	if o2 := f.sync(req); o2.State != changegroupprapi.PRMerged || o2.Writes != 0 {
		t.Fatalf("sync on merged: %+v", o2)
	}

	g := setupForgejo(t)
	req = g.request(changegroupprapi.ModeHold, "operator")
	o = g.sync(req)
	closeReq := changegroupprapi.CloseRequest{Repo: req.Repo, Known: o.PR, Comment: "ChangeGroup cg1 was cancelled."}
	for range 2 {
		if obs := g.close(closeReq); obs.State != changegroupprapi.PRClosed {
			t.Fatalf("close: %+v", obs)
		}
	}
	if cs := g.comments(o.PR.Number); len(cs) != 1 || !strings.Contains(cs[0], "cancelled") {
		t.Fatalf("close comments %q", cs)
	}
	// A person closing it is observed too.
	h := setupForgejo(t)
	req = h.request(changegroupprapi.ModeHold, "operator")
	o = h.sync(req)
	if err := h.srv.ClosePR(h.owner, h.name, o.PR.Number); err != nil {
		t.Fatal(err)
	}
	req.Known = o.PR
	if o2 := h.sync(req); o2.State != changegroupprapi.PRClosed || o2.Writes != 0 {
		t.Fatalf("sync on closed: %+v", o2)
	}
}

// A merged PR names the commit its merge put on the base branch (the API's
// merge_commit_sha), so a PR group finds the push build of that very commit.
func TestForgejoMergedPRNamesItsMergeCommit(t *testing.T) {
	f := setupForgejo(t)
	req := f.request(changegroupprapi.ModeHold, "operator")
	o := f.sync(req)
	if err := f.srv.MarkReady(f.owner, f.name, o.PR.Number); err != nil {
		t.Fatal(err)
	}
	f.merge(o.PR.Number)
	main := f.head("main")
	repo, err := forge.ParseRepoURL(f.srv.URL + "/" + f.owner + "/" + f.name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := fjforge.New(forge.ClientOptions{Repo: repo, Token: f.srv.BotToken})
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := c.FindPR(context.Background(), "", o.PR.Number)
	if err != nil || !ok {
		t.Fatalf("reading the merged PR: %v %v", ok, err)
	}
	if !got.Merged || got.MergeCommitSHA != main.SHA {
		t.Fatalf("merged PR: merged=%v merge commit %q, want %q (the head of main after the merge)", got.Merged, got.MergeCommitSHA, main.SHA)
	}
}

func TestForgejoErrorsClassifiedWithoutToken(t *testing.T) {
	f := setupForgejo(t)
	f.checkErrorsClassified(f.request(changegroupprapi.ModeHold, "operator"), f.proxy.FailNext, "Forgejo422", f.srv.BotToken)
	// The real server's own refusal: a token it does not know.
	var ae *temporal.ApplicationError
	bad := forge.Repo{Scheme: "http", Host: strings.TrimPrefix(f.srv.URL, "http://"), Owner: f.owner, Name: f.name}
	c, err := fjforge.New(forge.ClientOptions{Repo: bad, Token: "0123456789abcdef0123456789abcdef01234567"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.DefaultBranch(context.Background()); !errors.As(err, &ae) || ae.Type() != "Unauthorized" || strings.Contains(err.Error(), "0123456789abcdef") {
		t.Fatalf("unknown token: %v", err)
	}
}

func TestForgejoClientReadsTreesAcrossPages(t *testing.T) {
	f := setupForgejo(t)
	repo := forge.Repo{Scheme: "http", Host: strings.TrimPrefix(f.srv.URL, "http://"), Owner: f.owner, Name: f.name}
	c, err := fjforge.New(forge.ClientOptions{Repo: repo, Token: f.srv.BotToken})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	head, ok, err := c.BranchHead(ctx, "main")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	files, err := c.Files(ctx, head.Tree)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, file := range files {
		paths = append(paths, file.Path)
	}
	// Three blobs and one folder entry (bundle, bundle/manifests) at 2 per page.
	if strings.Join(paths, ",") != "Dockerfile,README.md,bundle/manifests/csv.yaml" {
		t.Fatalf("files: %v", paths)
	}
	blob, err := c.Blob(ctx, files[0].SHA)
	if err != nil || !strings.HasPrefix(string(blob), "FROM quay.io/org/op@") {
		t.Fatalf("blob: %q %v", blob, err)
	}
	if c.Writes() != 0 {
		t.Fatalf("reads wrote %d times", c.Writes())
	}
}
