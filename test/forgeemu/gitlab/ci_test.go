package gitlab

import (
	"testing"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/nudgeflow/nudgeflow/internal/pac"
)

func client(t *testing.T, s *Server, token string) *gl.Client {
	t.Helper()
	c, err := gl.NewClient(token, gl.WithBaseURL(s.APIURL()), gl.WithoutRetries())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func statuses(t *testing.T, c *gl.Client, sha string) map[string]string {
	t.Helper()
	list, _, err := c.Commits.GetCommitStatuses("group/bundle", sha, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, st := range list {
		out[st.Name] = st.Status + ": " + st.Description
	}
	return out
}

// An untrusted author's merge request gets PaC's waiting status (GitLab state
// running) and no pipeline; a member's /ok-to-test note starts it once.
func TestUntrustedAuthorWaitsForOkToTestNote(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	s.AddToken("bot-token", User{Username: "project_1_bot", Name: "nudgeflow", Email: "bot@example.com"})
	s.AddToken("maint-token", person)
	s.CreateProject("group", "bundle", "main", map[string]string{"Dockerfile": "FROM x\n"})
	s.RestrictCI("group", "bundle", person.Username)
	c := client(t, s, "bot-token")

	cm, _, err := c.Commits.CreateCommit("group/bundle", &gl.CreateCommitOptions{Branch: new("cg"), StartBranch: new("main"),
		CommitMessage: new("bump operands"), Actions: []*gl.CommitActionOptions{{Action: new(gl.FileUpdate), FilePath: new("Dockerfile"), Content: new("FROM y\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	mr, _, err := c.MergeRequests.CreateMergeRequest("group/bundle", &gl.CreateMergeRequestOptions{Title: new("t"), SourceBranch: new("cg"), TargetBranch: new("main")})
	if err != nil {
		t.Fatal(err)
	}
	if n := s.CIBuilds("group", "bundle"); n != 0 {
		t.Fatalf("an untrusted author's merge request started %d pipelines", n)
	}
	if got := statuses(t, c, cm.ID); got[pac.ApplicationName] != "running: "+pac.PendingApprovalTitle || len(got) != 1 {
		t.Fatalf("statuses %v", got)
	}
	pipelines, _, err := c.Pipelines.ListProjectPipelines("group/bundle", &gl.ListProjectPipelinesOptions{SHA: new(cm.ID)})
	if err != nil || len(pipelines) != 1 || pipelines[0].Source != "external" {
		t.Fatalf("pipelines %+v %v", pipelines, err)
	}

	if _, _, err := c.Notes.CreateMergeRequestNote("group/bundle", mr.IID, &gl.CreateMergeRequestNoteOptions{Body: new("/ok-to-test")}); err != nil {
		t.Fatal(err)
	}
	if n := s.CIBuilds("group", "bundle"); n != 0 {
		t.Fatalf("the untrusted author's own /ok-to-test started %d pipelines", n)
	}
	mc := client(t, s, "maint-token")
	if _, _, err := mc.Notes.CreateMergeRequestNote("group/bundle", mr.IID, &gl.CreateMergeRequestNoteOptions{Body: new("/ok-to-test")}); err != nil {
		t.Fatal(err)
	}
	if n := s.CIBuilds("group", "bundle"); n != 1 {
		t.Fatalf("a member's /ok-to-test started %d pipelines, want 1", n)
	}
	got := statuses(t, c, cm.ID)
	if got[pac.ApplicationName] != "success: successfully validated your commit" || got[pac.RunName("bundle-on-pull-request")] != "running: " {
		t.Fatalf("statuses after approval %v", got)
	}
	if err := s.NoteAs("group", "bundle", int(mr.IID), person, "/ok-to-test"); err != nil {
		t.Fatal(err)
	}
	if n := s.CIBuilds("group", "bundle"); n != 1 {
		t.Fatalf("a second /ok-to-test on the same SHA started a pipeline: %d", n)
	}
}
