package changegrouppr_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	fjforge "github.com/nudgeflow/nudgeflow/internal/forge/forgejo"
	"github.com/nudgeflow/nudgeflow/internal/pac"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
	glemu "github.com/nudgeflow/nudgeflow/test/forgeemu/gitlab"
	"github.com/nudgeflow/nudgeflow/test/localenv"
)

func (a activityRunner) readCI(req changegroupprapi.CIRequest) changegroupprapi.CIObserved {
	a.t.Helper()
	v, err := a.env.ExecuteActivity(changegroupprapi.CIActivity, req)
	var o changegroupprapi.CIObserved
	if err == nil {
		err = v.Get(&o)
	}
	if err != nil {
		a.t.Fatalf("read CI: %v", err)
	}
	return o
}

func (a activityRunner) comment(req changegroupprapi.CommentRequest) changegroupprapi.CommentResult {
	a.t.Helper()
	v, err := a.env.ExecuteActivity(changegroupprapi.CommentActivity, req)
	var o changegroupprapi.CommentResult
	if err == nil {
		err = v.Get(&o)
	}
	if err != nil {
		a.t.Fatalf("comment: %v", err)
	}
	return o
}

// release holds then releases the group's PR, returning what the release observed.
func (a activityRunner) release(req func(changegroupprapi.Mode, changegroupprapi.PRRef) changegroupprapi.SyncRequest) changegroupprapi.Observed {
	a.t.Helper()
	o := a.sync(req(changegroupprapi.ModeHold, changegroupprapi.PRRef{}))
	return a.sync(req(changegroupprapi.ModeRelease, o.PR))
}

// On GitHub with PaC restricting the bot: the released head waits for approval
// (PaC's pending status read back), a second comment call posts nothing, and a
// maintainer's /ok-to-test turns the head's reports into a started pipeline.
func TestReadCIAwaitingApprovalThenStartedOnGitHub(t *testing.T) {
	f := setup(t)
	f.emu.RestrictCI("org", "bundle", "maintainer")
	o := f.release(func(m changegroupprapi.Mode, known changegroupprapi.PRRef) changegroupprapi.SyncRequest {
		r := f.request(m, "operator", "operand-a", "operand-b")
		r.Known = known
		return r
	})
	repo := f.request(changegroupprapi.ModeHold).Repo
	ci := f.readCI(changegroupprapi.CIRequest{Repo: repo, Known: o.PR, SHA: o.HeadSHA})
	if ci.Started || !ci.AwaitingApproval || ci.Author != "nudgeflow[bot]" || ci.State != changegroupprapi.PROpen || ci.SHA != o.HeadSHA ||
		ci.Detail != "Pending approval, waiting for an /ok-to-test" {
		t.Fatalf("after the release: %+v", ci)
	}

	req := changegroupprapi.CommentRequest{Repo: repo, Known: o.PR, Key: "ci-not-started", Body: "CI did not start."}
	if res := f.comment(req); !res.Posted || res.Writes != 1 {
		t.Fatalf("first comment: %+v", res)
	}
	if res := f.comment(req); res.Posted || res.Writes != 0 {
		t.Fatalf("a second call posted again: %+v", res)
	}
	var ours int
	for _, c := range f.emu.Comments("org", "bundle", o.PR.Number) {
		if strings.Contains(c, changegroupprapi.CommentMarker("ci-not-started")) {
			ours++
		}
	}
	if ours != 1 {
		t.Fatalf("%d comments with the marker, want 1", ours)
	}

	if err := f.emu.CommentAs("org", "bundle", o.PR.Number, githubemu.User{Login: "maintainer"}, "/ok-to-test"); err != nil {
		t.Fatal(err)
	}
	ci = f.readCI(changegroupprapi.CIRequest{Repo: repo, Known: o.PR, SHA: o.HeadSHA})
	if !ci.Started || ci.AwaitingApproval || !strings.Contains(strings.Join(ci.Names, ","), pac.RunName("bundle-on-pull-request")) {
		t.Fatalf("after /ok-to-test: %+v", ci)
	}
}

// PaC as a GitHub App reports the wait as a check run, with the text naming who
// is not allowed; a merged PR is read as merged and gets no comment.
func TestReadCIFromCheckRunsAndNoCommentOnAClosedPR(t *testing.T) {
	f := setup(t)
	f.emu.RestrictCI("org", "bundle", "maintainer")
	f.emu.ReportAsApp("org", "bundle")
	o := f.release(func(m changegroupprapi.Mode, known changegroupprapi.PRRef) changegroupprapi.SyncRequest {
		r := f.request(m, "operator", "operand-a", "operand-b")
		r.Known = known
		return r
	})
	repo := f.request(changegroupprapi.ModeHold).Repo
	ci := f.readCI(changegroupprapi.CIRequest{Repo: repo, Known: o.PR})
	if !ci.AwaitingApproval || ci.Started || ci.SHA != o.HeadSHA ||
		ci.Detail != "User nudgeflow[bot] is not allowed to trigger CI via pull_request in this repo." {
		t.Fatalf("the App's check run: %+v", ci)
	}
	if err := f.emu.MergePR("org", "bundle", o.PR.Number); err != nil {
		t.Fatal(err)
	}
	if ci := f.readCI(changegroupprapi.CIRequest{Repo: repo, Known: o.PR, SHA: o.HeadSHA}); ci.State != changegroupprapi.PRMerged {
		t.Fatalf("merged PR read as %+v", ci)
	}
	before := len(f.emu.Comments("org", "bundle", o.PR.Number))
	if res := f.comment(changegroupprapi.CommentRequest{Repo: repo, Known: o.PR, Key: "ci-not-started", Body: "x"}); res.Posted || res.Writes != 0 {
		t.Fatalf("commented on a merged PR: %+v", res)
	}
	if len(f.emu.Comments("org", "bundle", o.PR.Number)) != before {
		t.Fatal("a comment appeared on the merged PR")
	}
}

// Without a restriction the release's own run reports at once: started.
func TestReadCIStartedWithoutRestriction(t *testing.T) {
	f := setup(t)
	o := f.release(func(m changegroupprapi.Mode, known changegroupprapi.PRRef) changegroupprapi.SyncRequest {
		r := f.request(m, "operator", "operand-a", "operand-b")
		r.Known = known
		return r
	})
	ci := f.readCI(changegroupprapi.CIRequest{Repo: f.request(changegroupprapi.ModeHold).Repo, Known: o.PR, SHA: o.HeadSHA})
	if !ci.Started || ci.AwaitingApproval || len(ci.Names) != 1 {
		t.Fatalf("%+v", ci)
	}
}

// On GitLab PaC's wait is a running commit status; a member's /ok-to-test note
// starts the pipeline. A bad key is refused before any forge call.
func TestReadCIOnGitLab(t *testing.T) {
	f := setupGitLab(t)
	f.gl.RestrictCI("org/team", "bundle", "maintainer")
	o := f.release(func(m changegroupprapi.Mode, known changegroupprapi.PRRef) changegroupprapi.SyncRequest {
		return f.req(m, known, "operator", "operand-a", "operand-b")
	})
	repo := f.req(changegroupprapi.ModeHold, changegroupprapi.PRRef{}).Repo
	ci := f.readCI(changegroupprapi.CIRequest{Repo: repo, Known: o.PR, SHA: o.HeadSHA})
	if ci.Started || !ci.AwaitingApproval || ci.Author != "project_7_bot" || f.gl.CIBuilds("org/team", "bundle") != 0 {
		t.Fatalf("after the release: %+v", ci)
	}
	if err := f.gl.NoteAs("org/team", "bundle", o.PR.Number, glemu.User{Username: "maintainer"}, "/ok-to-test"); err != nil {
		t.Fatal(err)
	}
	if ci := f.readCI(changegroupprapi.CIRequest{Repo: repo, Known: o.PR, SHA: o.HeadSHA}); !ci.Started || f.gl.CIBuilds("org/team", "bundle") != 1 {
		t.Fatalf("after /ok-to-test: %+v", ci)
	}
	if _, err := f.env.ExecuteActivity(changegroupprapi.CommentActivity, changegroupprapi.CommentRequest{Repo: repo, Known: o.PR, Key: "Bad Key", Body: "x"}); err == nil {
		t.Fatal("a key outside [a-z0-9-] was accepted")
	}
}

// On the real Gitea server (the Forgejo API): statuses written as Pipelines as
// Code writes them with a token (POST /repos/{o}/{r}/statuses/{sha}) are read back
// through every page of the combined status (55 contexts: two pages of 50), the
// wait first, then a started pipeline once the wait turned to success.
func TestReadCIOnForgejo(t *testing.T) {
	f := setupForgejo(t)
	o := f.release(func(m changegroupprapi.Mode, known changegroupprapi.PRRef) changegroupprapi.SyncRequest {
		r := f.request(m, "operator", "operand-a", "operand-b")
		r.Known = known
		return r
	})
	repo := f.request(changegroupprapi.ModeHold).Repo
	status := func(state, context, description string) {
		t.Helper()
		path := fmt.Sprintf("/repos/%s/%s/statuses/%s", f.owner, f.name, o.HeadSHA)
		if err := f.srv.API(http.MethodPost, path, f.srv.HumanToken, map[string]string{"state": state, "context": context, "description": description}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if ci := f.readCI(changegroupprapi.CIRequest{Repo: repo, Known: o.PR, SHA: o.HeadSHA}); ci.Started || ci.AwaitingApproval || ci.Author != localenv.ForgejoBot {
		t.Fatalf("nothing reported yet: %+v", ci)
	}
	status("pending", pac.ApplicationName, pac.PendingApprovalTitle)
	if ci := f.readCI(changegroupprapi.CIRequest{Repo: repo, Known: o.PR, SHA: o.HeadSHA}); ci.Started || !ci.AwaitingApproval {
		t.Fatalf("PaC's wait: %+v", ci)
	}
	status("success", pac.ApplicationName, "Approved")
	for i := range 54 {
		status("pending", fmt.Sprintf("%s / run-%02d", pac.ApplicationName, i), pac.StartedTitle)
	}
	ci := f.readCI(changegroupprapi.CIRequest{Repo: repo, Known: o.PR, SHA: o.HeadSHA})
	if !ci.Started || ci.AwaitingApproval || len(ci.Names) != 11 { // ten names and "…"
		t.Fatalf("after the approval: %+v", ci)
	}
	// The client itself: every context, across both pages.
	rp, err := forge.ParseRepoURL(f.srv.RepoURL(f.owner, f.name))
	if err != nil {
		t.Fatal(err)
	}
	c, err := fjforge.New(forge.ClientOptions{Repo: rp, Token: f.srv.BotToken})
	if err != nil {
		t.Fatal(err)
	}
	reports, err := c.CIReports(context.Background(), o.HeadSHA)
	if err != nil || len(reports) != 55 {
		t.Fatalf("%d reports, want 55 (the newest of each context): %v", len(reports), err)
	}
}
