package gitlab_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/nudgeflow/nudgeflow/activities/changegrouppr"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	glforge "github.com/nudgeflow/nudgeflow/internal/forge/gitlab"
	emu "github.com/nudgeflow/nudgeflow/test/forgeemu/gitlab"
)

const token = "glpat-ThisTokenMustNeverAppearInAnError01"

var bot = forge.Signature{Name: "nudgeflow[bot]", Email: "nudgeflow-bot@example.com"}

func setup(t *testing.T, files map[string]string) (*emu.Server, *glforge.Client) {
	t.Helper()
	e := emu.New()
	t.Cleanup(e.Close)
	e.AddToken(token, emu.User{Username: "project_1_bot", Name: bot.Name, Email: bot.Email})
	e.CreateProject("group/sub", "bundle", "main", files)
	repo, err := forge.ParseRepoURL(e.URL() + "/group/sub/bundle")
	require.NoError(t, err)
	require.Equal(t, "group/sub", repo.Owner, "subgroups are part of the namespace")
	c, err := glforge.New(context.Background(), forge.ClientOptions{Repo: repo, Token: token})
	require.NoError(t, err)
	require.Equal(t, bot, c.Bot(), "the bot identity is the token's user")
	return e, c
}

func TestReadsAndPushInOneWrite(t *testing.T) {
	files := map[string]string{"a.yaml": "image: x@sha256:1\n"}
	for i := range 230 { // more than two pages of the tree
		files[fmt.Sprintf("dir/%03d.txt", i)] = fmt.Sprint(i)
	}
	e, c := setup(t, files)
	ctx := context.Background()
	def, err := c.DefaultBranch(ctx)
	require.NoError(t, err)
	require.Equal(t, "main", def)
	base, ok, err := c.BranchHead(ctx, "main")
	require.NoError(t, err)
	require.True(t, ok)
	list, err := c.Files(ctx, base.Tree)
	require.NoError(t, err)
	require.Len(t, list, 231, "every page of the recursive tree")
	var sha string
	for _, f := range list {
		if f.Path == "a.yaml" {
			sha = f.SHA
		}
	}
	b, err := c.Blob(ctx, sha)
	require.NoError(t, err)
	require.Equal(t, "image: x@sha256:1\n", string(b))
	_, ok, err = c.BranchHead(ctx, "nudgeflow/cg")
	require.NoError(t, err)
	require.False(t, ok)

	before := e.Writes()
	cm, err := c.Push(ctx, forge.Push{Branch: "nudgeflow/cg", Parent: base, Files: map[string][]byte{"a.yaml": []byte("image: x@sha256:2\n")}, Message: "m [skip ci]"})
	require.NoError(t, err)
	require.Equal(t, 1, e.Writes()-before, "a push is one Commits API request")
	require.Equal(t, []string{base.SHA}, cm.Parents)
	require.Equal(t, bot.Email, cm.Author.Email)
	require.Equal(t, bot.Email, cm.Committer.Email)
	got, _ := e.FileAt("group/sub", "bundle", "nudgeflow/cg", "a.yaml")
	require.Equal(t, "image: x@sha256:2\n", got)

	// A force push on the base again: the branch moves to a fresh commit.
	cm2, err := c.Push(ctx, forge.Push{Branch: "nudgeflow/cg", Parent: base, Files: map[string][]byte{"a.yaml": []byte("image: x@sha256:3\n")},
		Message: "m2", Exists: true, ExpectedHead: cm.SHA})
	require.NoError(t, err)
	require.Equal(t, []string{base.SHA}, cm2.Parents)

	// A person pushed meanwhile: nothing is written.
	human, err := e.HumanCommit("group/sub", "bundle", "nudgeflow/cg", emu.User{Name: "Dev", Email: "dev@example.com"}, map[string]string{"b": "x"}, "mine")
	require.NoError(t, err)
	before = e.Writes()
	_, err = c.Push(ctx, forge.Push{Branch: "nudgeflow/cg", Parent: base, Files: nil, Message: "m3", Exists: true, ExpectedHead: cm2.SHA})
	require.ErrorIs(t, err, forge.ErrHeadMoved)
	require.Zero(t, e.Writes()-before)
	head, _ := e.Head("group/sub", "bundle", "nudgeflow/cg")
	require.Equal(t, human, head.SHA)
}

// TestDraftLifecycleAndOnePipeline: a draft MR by the title prefix, held pushes
// and description edits, then the release order nudgeflow uses — MarkReady (title
// and description in one PUT: an update without oldrev) and the final unmarked
// commit (an update with oldrev) — start exactly one pipeline by PaC's rules.
func TestDraftLifecycleAndOnePipeline(t *testing.T) {
	e, c := setup(t, map[string]string{"a.yaml": "v1\n"})
	ctx := context.Background()
	base, _, _ := c.BranchHead(ctx, "main")
	held, err := c.Push(ctx, forge.Push{Branch: "cg", Parent: base, Files: map[string][]byte{"a.yaml": []byte("v2\n")}, Message: "held [skip ci]"})
	require.NoError(t, err)
	pr, err := c.CreatePR(ctx, forge.NewPR{Title: "Update bundle", Head: "cg", Base: "main", Body: "body [skip ci]", Draft: true})
	require.NoError(t, err)
	require.True(t, pr.Draft)
	require.Equal(t, "Draft: Update bundle", pr.Title)
	found, ok, err := c.FindPR(ctx, "cg", 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, pr.Number, found.Number)

	body := "re-rendered [skip ci]"
	edited, err := c.EditPR(ctx, pr.Number, &body, nil)
	require.NoError(t, err)
	require.True(t, edited.Draft, "a description edit keeps the draft prefix")
	held, err = c.Push(ctx, forge.Push{Branch: "cg", Parent: base, Files: map[string][]byte{"a.yaml": []byte("v3\n")}, Message: "held again [skip ci]", Exists: true, ExpectedHead: held.SHA})
	require.NoError(t, err)
	require.Zero(t, e.CIBuilds("group/sub", "bundle"), "held: no pipeline")

	before := e.Writes()
	final := "released"
	require.NoError(t, c.MarkReady(ctx, edited, &final))
	require.Equal(t, 1, e.Writes()-before, "title and description in one request")
	mr, _ := e.MR("group/sub", "bundle", pr.Number)
	require.False(t, mr.Draft)
	require.Equal(t, "Update bundle", mr.Title)
	require.Equal(t, "released", mr.Description)
	require.Zero(t, e.CIBuilds("group/sub", "bundle"), "draft → ready is an update without oldrev: no pipeline")
	_, err = c.Push(ctx, forge.Push{Branch: "cg", Parent: base, Files: map[string][]byte{"a.yaml": []byte("v3\n")}, Message: "final", Exists: true, ExpectedHead: held.SHA})
	require.NoError(t, err)
	require.Equal(t, 1, e.CIBuilds("group/sub", "bundle"))

	require.NoError(t, c.CreateComment(ctx, pr.Number, "hello"))
	cs, err := c.Comments(ctx, pr.Number)
	require.NoError(t, err)
	require.Len(t, cs, 1, "system notes (marked as ready) are not comments")
	closed, err := c.EditPR(ctx, pr.Number, nil, new(false))
	require.NoError(t, err)
	require.False(t, closed.Open)
	require.Equal(t, 1, e.CIBuilds("group/sub", "bundle"))
}

func TestErrorsAreClassifiedWithoutTheToken(t *testing.T) {
	e, c := setup(t, map[string]string{"a": "b"})
	ctx := context.Background()
	e.FailNext(1, 429, 7)
	_, err := c.DefaultBranch(ctx)
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, "GitLabRateLimit", ae.Type())
	require.False(t, ae.NonRetryable())
	require.Equal(t, 7*time.Second, ae.NextRetryDelay())

	_, _, err = c.FindPR(ctx, "", 99)
	require.NoError(t, err, "a missing MR is not an error")

	_, err = c.CreatePR(ctx, forge.NewPR{Title: "t", Head: "nope", Base: "main"})
	require.True(t, errors.As(err, &ae))
	require.True(t, ae.NonRetryable())
	require.Equal(t, "GitLab422", ae.Type())

	e.RevokeToken(token)
	_, err = c.DefaultBranch(ctx)
	require.True(t, errors.As(err, &ae))
	require.Equal(t, "Unauthorized", ae.Type())
	require.False(t, ae.NonRetryable())
	require.NotContains(t, err.Error(), token)
	require.False(t, strings.Contains(fmt.Sprintf("%+v", err), token))
}

// GitLab records the token's user, with its commit email, as the committer of
// every commit the Commits API writes; author_email changes the author only. The
// bot's own commits are recognised as the bot's — with --bot-email, and without
// it for a token user whose commit email is not its primary email — while a
// person's commit (a git push, or the API with the bot's author and their own
// token) is not.
func TestGitLabOwnCommitsAreTheBots(t *testing.T) {
	e := emu.New()
	t.Cleanup(e.Close)
	tokenUser := emu.User{Username: "project_1_bot", Name: "nudgeflow", Email: "primary@example.com", CommitEmail: "1-nudgeflow@users.noreply.example.com"}
	e.AddToken(token, tokenUser)
	const personToken = "glpat-person-token-000000000000000000"
	e.AddToken(personToken, emu.User{Username: "dev", Name: "Dev", Email: "dev@example.com"})
	e.CreateProject("group", "bundle", "main", map[string]string{"a.yaml": "v1\n"})
	repo, err := forge.ParseRepoURL(e.URL() + "/group/bundle")
	require.NoError(t, err)
	ctx := context.Background()

	for _, tc := range []struct {
		name string
		bot  forge.Signature
	}{{"--bot-email", bot}, {"the token's user", forge.Signature{}}} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := glforge.New(ctx, forge.ClientOptions{Repo: repo, Token: token, Bot: tc.bot})
			require.NoError(t, err)
			base, _, err := c.BranchHead(ctx, "main")
			require.NoError(t, err)
			branch := "nf-" + strings.ReplaceAll(tc.name, " ", "-")
			cm, err := c.Push(ctx, forge.Push{Branch: branch, Parent: base, Files: map[string][]byte{"a.yaml": []byte("v2\n")}, Message: "m"})
			require.NoError(t, err)
			require.Equal(t, tokenUser.CommitEmail, cm.Committer.Email, "GitLab's committer is the token user's commit email")
			if tc.bot.Email != "" {
				require.Equal(t, bot.Email, cm.Author.Email)
			}
			head, ok, err := c.BranchHead(ctx, branch)
			require.NoError(t, err)
			require.True(t, ok)
			require.True(t, changegrouppr.IsBot(c, head), "nudgeflow's own commit (author %s, committer %s) is the bot's", head.Author.Email, head.Committer.Email)

			// A person's git push on the branch is not the bot's.
			human, err := e.HumanCommit("group", "bundle", branch, emu.User{Name: "Dev", Email: "dev@example.com"}, map[string]string{"b": "x"}, "mine")
			require.NoError(t, err)
			head, _, err = c.BranchHead(ctx, branch)
			require.NoError(t, err)
			require.Equal(t, human, head.SHA)
			require.False(t, changegrouppr.IsBot(c, head), "a person's commit is not the bot's")

			// A person writing through the API with the bot's name as author: GitLab
			// records the person as committer; still not the bot's.
			pc, err := glforge.New(ctx, forge.ClientOptions{Repo: repo, Token: personToken, Bot: c.Bot()})
			require.NoError(t, err)
			forged, err := pc.Push(ctx, forge.Push{Branch: branch, Parent: head, Files: map[string][]byte{"c": []byte("y")}, New: []string{"c"}, Message: "also mine", Exists: true, ExpectedHead: head.SHA})
			require.NoError(t, err)
			require.Equal(t, "dev@example.com", forged.Committer.Email)
			require.False(t, changegrouppr.IsBot(c, forged), "a commit GitLab wrote for a person is not the bot's")
		})
	}
}

// A merged merge request names the commit its merge put on the target branch:
// merge_commit_sha for a merge commit, squash_commit_sha for a squash merge in a
// fast-forward project (merge_commit_sha is null there).
func TestGitLabMergedMRNamesItsMergeCommit(t *testing.T) {
	e, c := setup(t, map[string]string{"a.yaml": "v1\n"})
	ctx := context.Background()
	base, _, _ := c.BranchHead(ctx, "main")
	for i, squash := range []bool{false, true} {
		branch := fmt.Sprintf("feature-%d", i)
		_, err := c.Push(ctx, forge.Push{Branch: branch, Parent: base, Files: map[string][]byte{"a.yaml": []byte(branch + "\n")}, Message: "change"})
		require.NoError(t, err)
		pr, err := c.CreatePR(ctx, forge.NewPR{Title: "change " + branch, Head: branch, Base: "main", Body: "b"})
		require.NoError(t, err)
		var want string
		if squash {
			want, err = e.SquashMergeMR("group/sub", "bundle", pr.Number)
			require.NoError(t, err)
		} else {
			require.NoError(t, e.MergeMR("group/sub", "bundle", pr.Number))
		}
		head, _ := e.Head("group/sub", "bundle", "main")
		if !squash {
			want = head.SHA
		}
		require.Equal(t, head.SHA, want, "the merge put this commit on main")
		got, ok, err := c.FindPR(ctx, "", pr.Number)
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, got.Merged)
		require.Equal(t, want, got.MergeCommitSHA, "squash=%v", squash)
		base = forge.Commit{SHA: head.SHA}
	}
}
