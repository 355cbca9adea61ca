package gitlab

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	gl "gitlab.com/gitlab-org/api/client-go"
)

// What Renovate's gitlab platform does with labels, checked with GitLab's own
// client: a title the project lacks is created with the default colour, the merge
// request lists its labels by title, add_labels / remove_labels edit them, and the
// project's labels can be listed and created (409 for one that exists).
func TestMergeRequestLabelsAreFoundOrCreated(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	s.AddToken("bot-token", User{Username: "konflux-bot", Name: "Konflux", Email: "bot@example.com"})
	s.CreateProject("tenant", "consumer", "main", map[string]string{"Dockerfile": "FROM a\n"})
	require.NoError(t, s.CreateLabel("tenant", "consumer", "konflux-nudge", "#00aabb"))
	c := client(t, s, "bot-token")

	_, resp, err := c.Labels.CreateLabel("tenant/consumer", &gl.CreateLabelOptions{Name: new("konflux-nudge"), Color: new("#112233")})
	require.Equal(t, http.StatusConflict, statusOf(t, resp, err))

	_, _, err = c.Commits.CreateCommit("tenant/consumer", &gl.CreateCommitOptions{Branch: new("bump"), StartBranch: new("main"),
		CommitMessage: new("bump"), Actions: []*gl.CommitActionOptions{{Action: new(gl.FileUpdate), FilePath: new("Dockerfile"), Content: new("FROM b\n")}}})
	require.NoError(t, err)
	labels := gl.LabelOptions{"konflux-nudge", "zz-extra"}
	mr, _, err := c.MergeRequests.CreateMergeRequest("tenant/consumer", &gl.CreateMergeRequestOptions{Title: new("bump"),
		SourceBranch: new("bump"), TargetBranch: new("main"), Labels: &labels, RemoveSourceBranch: new(true)})
	require.NoError(t, err)
	require.Equal(t, gl.Labels{"konflux-nudge", "zz-extra"}, mr.Labels)
	require.True(t, mr.ForceRemoveSourceBranch)

	all, _, err := c.Labels.ListLabels("tenant/consumer", nil)
	require.NoError(t, err)
	colors := map[string]string{}
	for _, l := range all {
		colors[l.Name] = l.Color
	}
	require.Equal(t, map[string]string{"konflux-nudge": "#00aabb", "zz-extra": defaultLabelColor}, colors)

	add, remove := gl.LabelOptions{"a-added"}, gl.LabelOptions{"zz-extra"}
	mr, _, err = c.MergeRequests.UpdateMergeRequest("tenant/consumer", mr.IID, &gl.UpdateMergeRequestOptions{AddLabels: &add, RemoveLabels: &remove})
	require.NoError(t, err)
	require.Equal(t, gl.Labels{"a-added", "konflux-nudge"}, mr.Labels)
	got, ok := s.MR("tenant", "consumer", int(mr.IID))
	require.True(t, ok)
	require.Equal(t, []string{"a-added", "konflux-nudge"}, got.Labels)
}

// Renovate lists its own merge requests (scope=created_by_me, 100 a page) and
// follows Link rel="next"; the version it reads decides its draft prefix.
func TestRenovateReadsItsOwnMergeRequestsPageByPage(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	s.AddToken("bot-token", User{Username: "konflux-bot", Name: "Konflux", Email: "bot@example.com"})
	s.AddToken("maint-token", person)
	s.CreateProject("tenant", "consumer", "main", map[string]string{"Dockerfile": "FROM a\n"})
	for i, tok := range []string{"bot-token", "maint-token", "bot-token"} {
		branch := []string{"b1", "b2", "b3"}[i]
		_, _, err := client(t, s, tok).Commits.CreateCommit("tenant/consumer", &gl.CreateCommitOptions{Branch: new(branch), StartBranch: new("main"),
			CommitMessage: new(branch), Actions: []*gl.CommitActionOptions{{Action: new(gl.FileUpdate), FilePath: new("Dockerfile"), Content: new("FROM " + branch + "\n")}}})
		require.NoError(t, err)
		_, _, err = client(t, s, tok).MergeRequests.CreateMergeRequest("tenant/consumer", &gl.CreateMergeRequestOptions{Title: new(branch),
			SourceBranch: new(branch), TargetBranch: new("main")})
		require.NoError(t, err)
	}
	c := client(t, s, "bot-token")
	v, _, err := c.Version.GetVersion()
	require.NoError(t, err)
	require.Equal(t, Version, v.Version)

	var sources []string
	opt := &gl.ListProjectMergeRequestsOptions{Scope: new("created_by_me"), ListOptions: gl.ListOptions{PerPage: 1}}
	for {
		page, resp, err := c.MergeRequests.ListProjectMergeRequests("tenant/consumer", opt)
		require.NoError(t, err)
		for _, m := range page {
			sources = append(sources, m.SourceBranch)
		}
		require.Equal(t, resp.NextPage != 0, resp.NextLink != "", "Link rel=next is there exactly when X-Next-Page is")
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	require.Equal(t, []string{"b3", "b1"}, sources, "the bot's own, newest first; the maintainer's left out")
}

// statusOf is the status of a request the client reports as failed.
func statusOf(t *testing.T, resp *gl.Response, err error) int {
	t.Helper()
	require.Error(t, err)
	require.NotNil(t, resp, "want an API answer, got %v", err)
	return resp.StatusCode
}
