package changegrouppr_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"go.temporal.io/sdk/temporal"
)

// Forge errors end in a defined state.

// A repository whose plan has no draft PRs gets a normal PR that is still held: the
// skip marker in the commits and the description keeps CI from running until the
// one release push.
func TestDraftsUnsupportedOpensAHeldNormalPR(t *testing.T) {
	f := setup(t)
	f.emu.DisallowDrafts("org", "bundle")
	o := f.sync(f.request(changegroupprapi.ModeHold, "operator"))
	p, _ := f.emu.PR("org", "bundle", o.PR.Number)
	if p.Draft || p.State != "open" {
		t.Fatalf("want an open non-draft PR, got draft=%v state=%s", p.Draft, p.State)
	}
	if o.MarkedReadyByHuman {
		t.Fatal("a normal PR opened for want of drafts is not a person's release")
	}
	o = f.sync(f.request(changegroupprapi.ModeHold, "operator", "operand-a"))
	if o.MarkedReadyByHuman || f.emu.CIBuilds("org", "bundle") != 0 {
		t.Fatalf("held pushes trigger no CI: ci=%d markedReady=%v", f.emu.CIBuilds("org", "bundle"), o.MarkedReadyByHuman)
	}
	f.sync(f.request(changegroupprapi.ModeRelease, "operator", "operand-a"))
	if got := f.emu.CIBuilds("org", "bundle"); got != 1 {
		t.Fatalf("the release triggers exactly one CI build, got %d", got)
	}
}

func retryable(t *testing.T, err error, wantType string) *temporal.ApplicationError {
	t.Helper()
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) {
		t.Fatalf("want an ApplicationError, got %v", err)
	}
	if ae.NonRetryable() || ae.Type() != wantType {
		t.Fatalf("want a retryable %s, got type %s nonRetryable=%v: %v", wantType, ae.Type(), ae.NonRetryable(), err)
	}
	return ae
}

// GraphQL answers its own rate limit with HTTP 200 and an error of type
// RATE_LIMITED: retried after a delay, never a failed group.
func TestGraphQLRateLimitIsRetried(t *testing.T) {
	f := setup(t)
	f.sync(f.request(changegroupprapi.ModeHold, "operator"))
	f.emu.RateLimitGraphQL(1)
	_, err := f.trySync(f.request(changegroupprapi.ModeRelease, "operator"))
	ae := retryable(t, err, "GitHubRateLimit")
	if ae.NextRetryDelay() < time.Second {
		t.Fatalf("a rate limit waits before the retry, got %s", ae.NextRetryDelay())
	}
	f.sync(f.request(changegroupprapi.ModeRelease, "operator"))
	if got := f.emu.CIBuilds("org", "bundle"); got != 1 {
		t.Fatalf("the retried release triggers exactly one CI build, got %d", got)
	}
}

// A rotated token (401) is retried: the workflow bounds how long, with the reason
// in the group's status; the message says what to check and holds no token.
func TestUnauthorizedIsRetriedWithTheReason(t *testing.T) {
	f := setup(t)
	f.emu.RevokeToken(token)
	_, err := f.trySync(f.request(changegroupprapi.ModeHold, "operator"))
	ae := retryable(t, err, "Unauthorized")
	if msg := ae.Error(); !contains(msg, "credentials") || contains(msg, token) {
		t.Fatalf("the message names the credentials and never the token: %s", msg)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// A person's commit that lands while nudgeflow is updating the
// branch (after its read, before its ref update) is never overwritten.
func TestCommitDuringASyncIsNeverOverwritten(t *testing.T) {
	f := setup(t)
	o := f.sync(f.request(changegroupprapi.ModeHold, "operator"))
	var pushed string
	f.emu.BeforeNextCommit(func() {
		var err error
		pushed, err = f.emu.HumanCommit("org", "bundle", "konflux/changegroup/cg1", human, map[string]string{"README.md": "mine\n"}, "docs: mine")
		if err != nil {
			t.Errorf("human commit: %v", err)
		}
	})
	o = f.sync(f.request(changegroupprapi.ModeHold, "operator", "operand-a"))
	head, _ := f.emu.Head("org", "bundle", "konflux/changegroup/cg1")
	if pushed == "" || head.SHA != pushed {
		t.Fatalf("the branch head must still be the person's commit %s, got %s", pushed, head.SHA)
	}
	if !o.HumanEdits {
		t.Fatal("the sync reports the person's commit as a human edit")
	}
}

// A rebase asked for on one head does not discard a commit pushed after it; its
// checkbox is unticked so it cannot authorise that commit later.
func TestRebaseDiscardsOnlyWhatItWasAskedFor(t *testing.T) {
	f := setup(t)
	f.sync(f.request(changegroupprapi.ModeHold, "operator"))
	first, err := f.emu.HumanCommit("org", "bundle", "konflux/changegroup/cg1", human, map[string]string{"README.md": "one\n"}, "docs: one")
	if err != nil {
		t.Fatal(err)
	}
	second, err := f.emu.HumanCommit("org", "bundle", "konflux/changegroup/cg1", human, map[string]string{"README.md": "two\n"}, "docs: two")
	if err != nil {
		t.Fatal(err)
	}
	req := f.request(changegroupprapi.ModeHold, "operator")
	req.Overwrite, req.DiscardHead = true, first
	o := f.sync(req)
	head, _ := f.emu.Head("org", "bundle", "konflux/changegroup/cg1")
	if head.SHA != second || !o.HumanEdits {
		t.Fatalf("the later commit %s is kept and reported, got head %s humanEdits=%v", second, head.SHA, o.HumanEdits)
	}
	req.DiscardHead = second
	o = f.sync(req)
	head, _ = f.emu.Head("org", "bundle", "konflux/changegroup/cg1")
	if head.SHA == second || o.HumanEdits {
		t.Fatalf("a rebase asked for on the current head discards it, got head %s humanEdits=%v", head.SHA, o.HumanEdits)
	}
}

// A bundle repository with 2,000 YAML files syncs reading each
// blob at most once; a later sync of the same tree reads none.
func TestBigRepositoryReadsEachBlobOnce(t *testing.T) {
	f := setup(t)
	files := map[string]string{"bundle/manifests/csv.yaml": "image: quay.io/org/op@" + old["op"] + "\n"}
	for i := range 2000 {
		files[fmt.Sprintf("deploy/overlays/o%04d/kustomization.yaml", i)] = fmt.Sprintf("resources:\n- ../../base\nnamePrefix: o%04d-\n", i)
	}
	f.emu.CreateRepo("org", "big", "main", files)
	req := f.request(changegroupprapi.ModeHold, "operator")
	req.Repo.URL = f.emu.URL() + "/org/big"
	f.own("tenant", req.Repo.URL, time.Now().Add(-time.Hour))
	before := f.emu.BlobReads()
	o := f.sync(req)
	first := f.emu.BlobReads() - before
	if first > len(files) {
		t.Fatalf("the first sync read %d blobs for %d files", first, len(files))
	}
	csv, _ := f.emu.FileAt("org", "big", "konflux/changegroup/cg1", "bundle/manifests/csv.yaml")
	if !strings.Contains(csv, digest("a")) {
		t.Fatalf("the reference was rewritten: %s", csv)
	}
	req = f.request(changegroupprapi.ModeHold, "operator", "operand-a")
	req.Repo.URL, req.Known = f.emu.URL()+"/org/big", o.PR
	before = f.emu.BlobReads()
	f.sync(req)
	if again := f.emu.BlobReads() - before; again != 0 {
		t.Fatalf("a re-sync of the same base read %d blobs, want 0", again)
	}
	t.Logf("2,001 files: first sync read %d blobs, the re-sync 0", first)
}

// A PR retargeted to another base branch is never written to or
// released: the sync stops with a non-retryable error naming both branches.
func TestRetargetedPRIsNeverAdopted(t *testing.T) {
	f := setup(t)
	o := f.sync(f.request(changegroupprapi.ModeHold, "operator"))
	if err := f.emu.Retarget("org", "bundle", o.PR.Number, "release-1.0"); err != nil {
		t.Fatal(err)
	}
	before, _ := f.emu.Head("org", "bundle", "konflux/changegroup/cg1")
	req := f.request(changegroupprapi.ModeRelease, "operator", "operand-a", "operand-b")
	req.Known = o.PR
	_, err := f.trySync(req)
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || !ae.NonRetryable() || !contains(err.Error(), `targets "release-1.0", not the group's base branch "main"`) {
		t.Fatalf("want a non-retryable error naming both branches, got %v", err)
	}
	after, _ := f.emu.Head("org", "bundle", "konflux/changegroup/cg1")
	got, _ := f.emu.PR("org", "bundle", o.PR.Number)
	if after.SHA != before.SHA || !got.Draft {
		t.Fatalf("nothing is written to the retargeted PR: head %s→%s, draft=%v", before.SHA, after.SHA, got.Draft)
	}
}
