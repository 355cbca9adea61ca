package gitlab

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	gl "gitlab.com/gitlab-org/api/client-go"
)

// Renovate's platform automerge on GitLab: the merge request it opens has a
// running head pipeline (Pipelines as Code's) and is mergeable; merge when the
// pipeline succeeds leaves it open until the pipeline's statuses are green, then
// merges it and deletes the source branch.
func TestMergeWhenPipelineSucceedsWaitsForTheHeadPipeline(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	s.AddToken("bot-token", User{Username: "konflux-bot", Name: "Konflux", Email: "bot@example.com"})
	s.CreateProject("tenant", "consumer", "main", map[string]string{"Dockerfile": "FROM a\n"})
	c := client(t, s, "bot-token")
	_, _, err := c.Commits.CreateCommit("tenant/consumer", &gl.CreateCommitOptions{Branch: new("bump"), StartBranch: new("main"),
		CommitMessage: new("bump"), Actions: []*gl.CommitActionOptions{{Action: new(gl.FileUpdate), FilePath: new("Dockerfile"), Content: new("FROM b\n")}}})
	require.NoError(t, err)
	mr, _, err := c.MergeRequests.CreateMergeRequest("tenant/consumer", &gl.CreateMergeRequestOptions{Title: new("bump"),
		SourceBranch: new("bump"), TargetBranch: new("main"), RemoveSourceBranch: new(true)})
	require.NoError(t, err)
	mr, _, err = c.MergeRequests.GetMergeRequest("tenant/consumer", mr.IID, nil)
	require.NoError(t, err)
	require.Equal(t, "mergeable", mr.DetailedMergeStatus)
	require.NotNil(t, mr.HeadPipeline, "PaC's pipeline started on open")
	require.Equal(t, "running", mr.HeadPipeline.Status)

	mr, _, err = c.MergeRequests.AcceptMergeRequest("tenant/consumer", mr.IID, &gl.AcceptMergeRequestOptions{
		//lint:ignore SA1019 Renovate 39's gitlab platform sends merge_when_pipeline_succeeds, not auto_merge
		MergeWhenPipelineSucceeds: new(true), ShouldRemoveSourceBranch: new(true)})
	require.NoError(t, err)
	require.Equal(t, "opened", mr.State)
	require.True(t, mr.MergeWhenPipelineSucceeds)

	statuses, _, err := c.Commits.GetCommitStatuses("tenant/consumer", mr.SHA, nil)
	require.NoError(t, err)
	for _, st := range statuses {
		_, _, err = c.Commits.SetCommitStatus("tenant/consumer", mr.SHA, &gl.SetCommitStatusOptions{State: gl.Success, Name: new(st.Name)})
		require.NoError(t, err)
	}
	got, ok := s.MR("tenant", "consumer", int(mr.IID))
	require.True(t, ok)
	require.Equal(t, "merged", got.State)
	_, ok = s.Head("tenant", "consumer", "bump")
	require.False(t, ok, "the source branch is deleted")
	dockerfile, _ := s.FileAt("tenant", "consumer", "main", "Dockerfile")
	require.Equal(t, "FROM b\n", dockerfile)
}

// gitLabIgnoreApprovals and autoApprove: approval rules on the merge request can
// be listed, added, changed and removed; a rule wanting approvals holds the merge
// (406) until they are given; the author cannot approve their own (401).
func TestApprovalRulesHoldTheMerge(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	s.AddToken("bot-token", User{Username: "konflux-bot", Name: "Konflux", Email: "bot@example.com"})
	s.AddToken("maint-token", person)
	s.CreateProject("tenant", "consumer", "main", map[string]string{"Dockerfile": "FROM a\n"})
	c := client(t, s, "bot-token")
	_, _, err := c.Commits.CreateCommit("tenant/consumer", &gl.CreateCommitOptions{Branch: new("bump"), StartBranch: new("main"),
		CommitMessage: new("bump"), Actions: []*gl.CommitActionOptions{{Action: new(gl.FileUpdate), FilePath: new("Dockerfile"), Content: new("FROM b\n")}}})
	require.NoError(t, err)
	mr, _, err := c.MergeRequests.CreateMergeRequest("tenant/consumer", &gl.CreateMergeRequestOptions{Title: new("bump"),
		SourceBranch: new("bump"), TargetBranch: new("main")})
	require.NoError(t, err)

	rules, _, err := c.MergeRequestApprovals.GetApprovalRules("tenant/consumer", mr.IID)
	require.NoError(t, err)
	require.Empty(t, rules)
	rule, _, err := c.MergeRequestApprovals.CreateApprovalRule("tenant/consumer", mr.IID, &gl.CreateMergeRequestApprovalRuleOptions{
		Name: new("security"), ApprovalsRequired: new(int64(1))})
	require.NoError(t, err)
	mr, _, err = c.MergeRequests.GetMergeRequest("tenant/consumer", mr.IID, nil)
	require.NoError(t, err)
	require.Equal(t, "not_approved", mr.DetailedMergeStatus)
	_, resp, err := c.MergeRequests.AcceptMergeRequest("tenant/consumer", mr.IID, nil)
	require.Equal(t, http.StatusNotAcceptable, statusOf(t, resp, err))

	_, resp, err = c.MergeRequestApprovals.ApproveMergeRequest("tenant/consumer", mr.IID, nil)
	require.Equal(t, http.StatusUnauthorized, statusOf(t, resp, err), "the author cannot approve")
	_, _, err = client(t, s, "maint-token").MergeRequestApprovals.ApproveMergeRequest("tenant/consumer", mr.IID, nil)
	require.NoError(t, err)
	mr, _, err = c.MergeRequests.GetMergeRequest("tenant/consumer", mr.IID, nil)
	require.NoError(t, err)
	require.Equal(t, "mergeable", mr.DetailedMergeStatus)

	// What ignoreApprovals does to a regular rule: delete it.
	_, err = c.MergeRequestApprovals.DeleteApprovalRule("tenant/consumer", mr.IID, rule.ID)
	require.NoError(t, err)
	rules, _, err = c.MergeRequestApprovals.GetApprovalRules("tenant/consumer", mr.IID)
	require.NoError(t, err)
	require.Empty(t, rules)
	mr, _, err = c.MergeRequests.AcceptMergeRequest("tenant/consumer", mr.IID, nil)
	require.NoError(t, err)
	require.Equal(t, "merged", mr.State)
}
