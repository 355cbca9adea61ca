package gitlab

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	gl "gitlab.com/gitlab-org/api/client-go"
)

// Renovate's ensureComment edits its own note and ensureCommentRemoval deletes
// it; another user's note is 403 to it.
func TestNotesAreEditedAndDeletedByTheirAuthor(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	s.AddToken("bot-token", User{Username: "konflux-bot", Name: "Konflux", Email: "bot@example.com"})
	s.AddToken("maint-token", person)
	s.CreateProject("tenant", "consumer", "main", map[string]string{"Dockerfile": "FROM a\n"})
	bot := client(t, s, "bot-token")
	_, _, err := bot.Commits.CreateCommit("tenant/consumer", &gl.CreateCommitOptions{Branch: new("bump"), StartBranch: new("main"),
		CommitMessage: new("bump"), Actions: []*gl.CommitActionOptions{{Action: new(gl.FileUpdate), FilePath: new("Dockerfile"), Content: new("FROM b\n")}}})
	require.NoError(t, err)
	mr, _, err := bot.MergeRequests.CreateMergeRequest("tenant/consumer", &gl.CreateMergeRequestOptions{Title: new("bump"),
		SourceBranch: new("bump"), TargetBranch: new("main")})
	require.NoError(t, err)
	mine, _, err := bot.Notes.CreateMergeRequestNote("tenant/consumer", mr.IID, &gl.CreateMergeRequestNoteOptions{Body: new("### Topic\n\nv1")})
	require.NoError(t, err)
	theirs, _, err := client(t, s, "maint-token").Notes.CreateMergeRequestNote("tenant/consumer", mr.IID, &gl.CreateMergeRequestNoteOptions{Body: new("lgtm")})
	require.NoError(t, err)

	edited, _, err := bot.Notes.UpdateMergeRequestNote("tenant/consumer", mr.IID, mine.ID, &gl.UpdateMergeRequestNoteOptions{Body: new("### Topic\n\nv2")})
	require.NoError(t, err)
	require.Equal(t, "### Topic\n\nv2", edited.Body)
	_, resp, err := bot.Notes.UpdateMergeRequestNote("tenant/consumer", mr.IID, theirs.ID, &gl.UpdateMergeRequestNoteOptions{Body: new("x")})
	require.Equal(t, http.StatusForbidden, statusOf(t, resp, err))
	resp, err = bot.Notes.DeleteMergeRequestNote("tenant/consumer", mr.IID, mine.ID)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	resp, err = bot.Notes.DeleteMergeRequestNote("tenant/consumer", mr.IID, mine.ID)
	require.Equal(t, http.StatusNotFound, statusOf(t, resp, err))
	require.Equal(t, []string{"lgtm"}, s.Notes("tenant", "consumer", int(mr.IID)))
}
