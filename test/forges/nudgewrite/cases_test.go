package nudgewrite_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/contracts/nudgewriteapi"
)

// lifecycle walks one nudge branch through its life: opened in Renovate's shape
// as its gitAuthor, retried, updated by a newer build, an older build refused, a
// person's commit kept until the rebase box is ticked, the closed PR recreated.
// The forge's labels konflux-nudge and team-x exist; the ConfigMap asks for
// team-x and not-defined.
func lifecycle(t *testing.T, f *fixture, old string) {
	first, second := digest(2), digest(3)
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	fg := f.fg

	// Opened: Renovate's branch, title, labels, header, table and footer, one
	// commit on the base as Renovate's gitAuthor, every reference under the patterns.
	res := f.write(build(first, t0))
	require.Equal(t, nudgewriteapi.OutcomeOpened, res.Outcome, "%+v", res)
	require.Equal(t, branch, res.Branch)
	require.Equal(t, []string{".tekton/consumer-push.yaml", "Dockerfile"}, res.Files, "the released name is not the nudging component's here: no distribution repository")
	p := fg.pr(res.PR)
	require.Equal(t, title(first), p.Title)
	require.Equal(t, branch, p.Head)
	require.Equal(t, "main", p.Base)
	require.True(t, strings.HasPrefix(p.Body, "Image created from 'https://example.com/org/operand?rev="+strings.Repeat("a", 40)+"'\n\n"), p.Body)
	require.Contains(t, p.Body, "\n| "+built+" | digest | `"+old[7:14]+"` -> `"+first[7:14]+"` |\n", "Renovate's table")
	require.Contains(t, p.Body, "- [ ] <!-- rebase-check -->If you want to rebase/retry this PR, check this box")
	require.Contains(t, p.Body, "\n---\n\nTo execute skipped test pipelines write comment `/ok-to-test`\nThis is Konflux nudging PR, not Mintmaker.\n<!--renovate-debug:")
	head, ok := fg.head(branch)
	require.True(t, ok)
	require.Equal(t, res.Commit, head.SHA)
	author := f.gitAuthor()
	email := author[strings.LastIndex(author, "<")+1 : len(author)-1]
	require.Equal(t, email, head.AuthorEmail, "Renovate's gitAuthor")
	require.Equal(t, email, head.CommitterEmail, "Renovate's gitAuthor commits too")
	require.Equal(t, []string{f.base}, head.Parents, "one commit on the base, as Renovate's")
	require.True(t, strings.HasPrefix(head.Message, title(first)+"\n\nImage created from "), head.Message)
	require.Contains(t, head.Message, "\n\nSigned-off-by: "+author+"\n"+renovate.TrailerBuiltAt+": "+renovate.BuiltAtStamp(t0)+"\n")
	for path, content := range files(old) {
		got, _ := fg.fileAt(branch, path)
		want := content
		if path == "Dockerfile" || path == ".tekton/consumer-push.yaml" {
			want = strings.ReplaceAll(content, old, first)
		}
		require.Equal(t, want, got, path)
	}

	// The same build again (a retry): nothing new.
	again := f.write(build(first, t0))
	require.Equal(t, nudgewriteapi.OutcomeUpdated, again.Outcome, "%+v", again)
	require.Equal(t, res.PR, again.PR)
	require.Equal(t, head.SHA, again.Commit, "no second commit")

	// Updated by a newer build: the same PR, its title, a fresh commit on the base.
	t1 := t0.Add(time.Hour)
	upd := f.write(build(second, t1))
	require.Equal(t, nudgewriteapi.OutcomeUpdated, upd.Outcome, "%+v", upd)
	require.Equal(t, res.PR, upd.PR)
	require.Equal(t, title(second), fg.pr(res.PR).Title, "the title follows the digest")
	got, _ := fg.fileAt(branch, "Dockerfile")
	require.Equal(t, "FROM "+built+"@"+second+"\nRUN true\n", got)
	head, _ = fg.head(branch)
	require.Equal(t, []string{f.base}, head.Parents)
	require.Len(t, fg.prs(), 1)

	// An older build (the first, retried late): refused, the newer digest stays.
	late := f.write(build(first, t0))
	require.Equal(t, nudgewriteapi.OutcomeSuperseded, late.Outcome, "%+v", late)
	require.Contains(t, late.Reason, renovate.BuiltAtStamp(t1))
	after, _ := fg.head(branch)
	require.Equal(t, head.SHA, after.SHA, "nothing written")

	// A person's commit on the branch: kept, a newer build does not write over it.
	human, err := fg.humanCommit(branch, map[string]string{"NOTES.md": "mine\n"}, "a note")
	require.NoError(t, err)
	third := digest(4)
	kept := f.write(build(third, t1.Add(time.Hour)))
	require.Equal(t, nudgewriteapi.OutcomePersonCommitted, kept.Outcome, "%+v", kept)
	after, _ = fg.head(branch)
	require.Equal(t, human, after.SHA)

	// The rebase box ticked: the person lets it write again.
	require.NoError(t, fg.editBody(res.PR, strings.Replace(fg.pr(res.PR).Body, "- [ ] <!-- rebase-check -->", "- [x] <!-- rebase-check -->", 1)))
	rebased := f.write(build(third, t1.Add(time.Hour)))
	require.Equal(t, nudgewriteapi.OutcomeUpdated, rebased.Outcome, "%+v", rebased)
	after, _ = fg.head(branch)
	require.Equal(t, []string{f.base}, after.Parents, "a fresh commit on the base")
	require.Contains(t, fg.pr(res.PR).Body, "- [ ] <!-- rebase-check -->", "the box is cleared by the new body")

	// The PR closed unmerged: recreateWhen always, a new PR for the next build.
	require.NoError(t, fg.closePR(res.PR))
	fourth := digest(5)
	reopened := f.write(build(fourth, t1.Add(2*time.Hour)))
	require.Equal(t, nudgewriteapi.OutcomeOpened, reopened.Outcome, "%+v", reopened)
	require.NotEqual(t, res.PR, reopened.PR)
	p = fg.pr(reopened.PR)
	require.Equal(t, "open", p.State)
	require.Equal(t, title(fourth), p.Title)

	f.requireNoToken(res, again, upd, late, kept, rebased, reopened)
}

// labelsFollow: the tenant changes the ConfigMap's labels; the next build's
// write changes the open PR's labels to them, as Renovate does (a label no longer
// configured removed). The forge defines konflux-nudge, team-x and team-y.
func labelsFollow(t *testing.T, f *fixture) {
	t0 := time.Now().Add(-time.Hour)
	res := f.write(build(digest(31), t0))
	require.Equal(t, nudgewriteapi.OutcomeOpened, res.Outcome, "%+v", res)
	require.ElementsMatch(t, []string{renovate.NudgeLabel, "team-x"}, f.fg.pr(res.PR).Labels)
	f.setLabels("team-y")
	upd := f.write(build(digest(32), t0.Add(time.Minute)))
	require.Equal(t, nudgewriteapi.OutcomeUpdated, upd.Outcome, "%+v", upd)
	require.ElementsMatch(t, []string{renovate.NudgeLabel, "team-y"}, f.fg.pr(res.PR).Labels)
}

// alreadyCurrent: the base already holds the digest: nothing is opened.
func alreadyCurrent(t *testing.T, f *fixture, d string) {
	res := f.write(build(d, time.Now()))
	require.Equal(t, nudgewriteapi.OutcomeAlreadyCurrent, res.Outcome, "%+v", res)
	_, ok := f.fg.head(branch)
	require.False(t, ok, "no branch")
	require.Empty(t, f.fg.prs())
}

// fallback: what the writer does not do is left to Renovate, nothing written.
func fallback(t *testing.T, f *fixture, says string) {
	res := f.write(build(digest(11), time.Now()))
	require.Equal(t, nudgewriteapi.OutcomeFallback, res.Outcome, "%+v", res)
	require.Contains(t, res.Reason, says)
	_, ok := f.fg.head(branch)
	require.False(t, ok, "nothing written")
}

// tokenStays: a write that fails at the forge names no token in its error,
// result or log lines.
func tokenStays(t *testing.T, f *fixture) {
	res := f.write(build(digest(13), time.Now()))
	require.Equal(t, nudgewriteapi.OutcomeOpened, res.Outcome)
	// The forge refuses the repository from now on: the write fails there.
	require.NoError(t, f.fg.breakRepo())
	_, err := f.tryWrite(build(digest(14), time.Now()))
	require.Error(t, err)
	var ae *temporal.ApplicationError
	require.ErrorAs(t, err, &ae)
	require.NotContains(t, err.Error(), f.fg.token())
	f.requireNoToken(res)
}
