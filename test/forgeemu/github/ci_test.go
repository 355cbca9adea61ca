package github

import (
	"context"
	"net/http"
	"strings"
	"testing"

	gogithub "github.com/google/go-github/v92/github"

	"github.com/nudgeflow/nudgeflow/internal/pac"
)

var maintainer = User{Login: "maintainer", Name: "Maintainer", Email: "maintainer@example.com"}

// openReleased opens a PR from branch cg whose head carries no skip marker (as a
// released ChangeGroup's does) and returns its number and head SHA.
func openReleased(t *testing.T, gh *gogithub.Client) (int, string) {
	t.Helper()
	sha := push(t, gh, "cg", "bump operands", true)
	pr, _, err := gh.PullRequests.Create(context.Background(), "org", "bundle", gogithub.CreatePullRequest{Title: new("t"), Head: "cg", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	return pr.GetNumber(), sha
}

func combined(t *testing.T, gh *gogithub.Client, sha string) map[string]string {
	t.Helper()
	st, _, err := gh.Repositories.GetCombinedStatus(context.Background(), "org", "bundle", sha, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range st.Statuses {
		out[s.GetContext()] = s.GetState() + ": " + s.GetDescription()
	}
	return out
}

// An untrusted author's PR gets PaC's pending status and comment, no run; an
// /ok-to-test from someone untrusted changes nothing; a trusted one starts the
// run (approval, then the run's status); a second one on the same SHA starts none.
func TestUntrustedAuthorWaitsForOkToTest(t *testing.T) {
	s, gh, _ := setup(t)
	s.RestrictCI("org", "bundle", "maintainer")
	n, sha := openReleased(t, gh)

	if got := s.CIBuildsForPR("org", "bundle", n); got != 0 {
		t.Fatalf("an untrusted author's PR started %d builds", got)
	}
	want := map[string]string{pac.ApplicationName: "pending: Pending approval, waiting for an /ok-to-test"}
	if got := combined(t, gh, sha); len(got) != 1 || got[pac.ApplicationName] != want[pac.ApplicationName] {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	comments := s.Comments("org", "bundle", n)
	if len(comments) != 1 || !strings.Contains(comments[0], "User nudgeflow[bot] is not allowed to trigger CI via pull_request in this repo.") {
		t.Fatalf("PaC's comment: %q", comments)
	}

	if err := s.CommentAs("org", "bundle", n, User{Login: "passer-by"}, "/ok-to-test"); err != nil {
		t.Fatal(err)
	}
	if got := s.CIBuildsForPR("org", "bundle", n); got != 0 {
		t.Fatalf("an untrusted /ok-to-test started %d builds", got)
	}
	// Through the API, as a maintainer's token would.
	s.AddToken("maint-token", maintainer)
	mgh, _ := gogithub.NewClient(gogithub.WithAuthToken("maint-token"), gogithub.WithEnterpriseURLs(s.APIURL(), s.APIURL()))
	if _, _, err := mgh.Issues.CreateComment(context.Background(), "org", "bundle", n, gogithub.IssueCommentRequest{Body: "/ok-to-test"}); err != nil {
		t.Fatal(err)
	}
	if got := s.CIBuildsForPR("org", "bundle", n); got != 1 {
		t.Fatalf("a trusted /ok-to-test started %d builds, want 1", got)
	}
	got := combined(t, gh, sha)
	if got[pac.ApplicationName] != "success: Approved" || got[pac.RunName("bundle-on-pull-request")] != "pending: CI has Started" {
		t.Fatalf("statuses after approval %v", got)
	}
	if err := s.CommentAs("org", "bundle", n, maintainer, "/ok-to-test"); err != nil {
		t.Fatal(err)
	}
	if got := s.CIBuildsForPR("org", "bundle", n); got != 1 {
		t.Fatalf("a second /ok-to-test on the same SHA started a build: %d", got)
	}
}

// PaC ignores an untrusted Bot account's PR silently: no status, no comment.
func TestUntrustedBotIsIgnored(t *testing.T) {
	s, _, _ := setup(t)
	s.AddToken("app-token", AppBotUser("nudgebot", 42, "127.0.0.1"))
	gh, _ := gogithub.NewClient(gogithub.WithAuthToken("app-token"), gogithub.WithEnterpriseURLs(s.APIURL(), s.APIURL()))
	s.RestrictCI("org", "bundle", "maintainer")
	n, sha := openReleased(t, gh)
	if got := combined(t, gh, sha); len(got) != 0 {
		t.Fatalf("statuses %v, want none", got)
	}
	if c := s.Comments("org", "bundle", n); len(c) != 0 || s.CIBuildsForPR("org", "bundle", n) != 0 {
		t.Fatalf("comments %q, builds %d", c, s.CIBuildsForPR("org", "bundle", n))
	}
	if err := s.CommentAs("org", "bundle", n, maintainer, "/ok-to-test"); err != nil {
		t.Fatal(err)
	}
	if s.CIBuildsForPR("org", "bundle", n) != 1 {
		t.Fatal("a trusted /ok-to-test must start the ignored bot's run")
	}
}

// As a GitHub App, PaC reports with check runs: the wait is a queued run with
// PaC's title, summary and text, and the approved run reuses it.
func TestReportsAsAppWithCheckRuns(t *testing.T) {
	s, gh, _ := setup(t)
	s.RestrictCI("org", "bundle", "maintainer")
	s.ReportAsApp("org", "bundle")
	n, sha := openReleased(t, gh)
	runs := func() []*gogithub.CheckRun {
		t.Helper()
		res, _, err := gh.Checks.ListCheckRunsForRef(context.Background(), "org", "bundle", sha, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.CheckRuns
	}
	got := runs()
	if len(got) != 1 || got[0].GetStatus() != "queued" || got[0].GetOutput().GetTitle() != pac.PendingApprovalTitle ||
		got[0].GetOutput().GetSummary() != "Pipelines as Code CI is waiting for approval." ||
		!strings.Contains(got[0].GetOutput().GetText(), "is not allowed to trigger CI") {
		t.Fatalf("check runs %+v", got)
	}
	if st := combined(t, gh, sha); len(st) != 0 || len(s.Comments("org", "bundle", n)) != 0 {
		t.Fatalf("an App reports no status and no comment: %v", st)
	}
	if err := s.CommentAs("org", "bundle", n, maintainer, "/ok-to-test"); err != nil {
		t.Fatal(err)
	}
	got = runs()
	if len(got) != 1 || got[0].GetStatus() != "in_progress" || got[0].GetName() != pac.RunName("bundle-on-pull-request") {
		t.Fatalf("check runs after approval %+v", got)
	}
}

// Without a restriction nothing changes: every build is counted as before, and
// each run now reports a status on its head commit.
func TestUnrestrictedRunsReportStatus(t *testing.T) {
	s, gh, _ := setup(t)
	n, sha := openReleased(t, gh)
	if s.CIBuildsForPR("org", "bundle", n) != 1 {
		t.Fatal("the PR's open must build once")
	}
	if got := combined(t, gh, sha); got[pac.RunName("bundle-on-pull-request")] != "pending: CI has Started" {
		t.Fatalf("statuses %v", got)
	}
	// Statuses written through the API, as another CI would.
	_, resp, err := gh.Repositories.CreateStatus(context.Background(), "org", "bundle", sha, gogithub.RepoStatus{State: new("success"), Context: new("lint")})
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create status: %v", err)
	}
	if _, resp, _ = gh.Repositories.CreateStatus(context.Background(), "org", "bundle", sha, gogithub.RepoStatus{State: new("bogus")}); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("a bad state: %d", resp.StatusCode)
	}
	if got := combined(t, gh, sha); len(got) != 2 || got["lint"] != "success: " {
		t.Fatalf("statuses %v", got)
	}
}

// What PaC reported and how it treats the repository survive Save and Load (a
// `nudgeflow dev` restart): the waiting status is still read, and the ACL still
// holds the run until a trusted /ok-to-test.
func TestPaCStateSurvivesSaveAndLoad(t *testing.T) {
	s, gh, _ := setup(t)
	s.RestrictCI("org", "bundle", "maintainer")
	n, sha := openReleased(t, gh)
	path := t.TempDir() + "/state.json"
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	s2, gh2, _ := setup(t)
	if ok, err := s2.Load(path); !ok || err != nil {
		t.Fatalf("load: %v %v", ok, err)
	}
	if got := combined(t, gh2, sha); got[pac.ApplicationName] != "pending: "+pac.PendingApprovalTitle {
		t.Fatalf("statuses after load %v", got)
	}
	if err := s2.CommentAs("org", "bundle", n, User{Login: "passer-by"}, "/ok-to-test"); err != nil {
		t.Fatal(err)
	}
	if s2.CIBuildsForPR("org", "bundle", n) != 0 {
		t.Fatal("the ACL was lost across Save and Load")
	}
	if err := s2.CommentAs("org", "bundle", n, maintainer, "/ok-to-test"); err != nil || s2.CIBuildsForPR("org", "bundle", n) != 1 {
		t.Fatalf("a trusted /ok-to-test after load: %v, builds %d", err, s2.CIBuildsForPR("org", "bundle", n))
	}
}
