package renovate_test

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
	"github.com/nudgeflow/nudgeflow/test/landingforge"
)

// secretUser is the user name of the tenant's basic-auth SCM Secret in this case:
// free text, not the login the token acts as.
const secretUser = "nudgeflow"

// TestRenovateNudgeContractUsernameDiffersFromLogin is case
// username-differs-from-login of the contract (its own test so that it runs
// alone with -run): the tenant's basic-auth SCM Secret names a user other than
// the token's login, and the run gets the username and gitAuthor nudgeflow's
// launch derives from that Secret (renovate.BasicAuthIdentity). A second build
// must land in the nudge PR the first opened: build-service's `username: <the
// Secret's user name>` made Renovate look for its PR among another author's and
// skip the branch ("Branch has been edited but found no PR - skipping", exit 0).
// On GitHub it runs twice: with a personal access token (Renovate pushes over
// git) and with an installation token kept in the Secret, as the dev stack's, whose
// account is an App's bot user (Renovate commits through the API, and GitHub
// authors the commit as that bot).
func TestRenovateNudgeContractUsernameDiffersFromLogin(t *testing.T) {
	w := sharedWorld(t)
	for _, name := range landingforge.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := landingforge.Start(t, name)
			t.Run("token", func(t *testing.T) { t.Parallel(); usernameDiffersFromLogin(t, w, f, f.Token(), "token") })
			if gh, ok := f.(*landingforge.GitHub); ok {
				bot := githubemu.AppBotUser(secretUser, 1, gh.Emu.Host())
				const token = "ghs_nudgeflowbotinasecret000000000000000"
				gh.Emu.AddToken(token, bot)
				t.Run("installation-token", func(t *testing.T) {
					t.Parallel()
					usernameDiffersFromLogin(t, w, f, token, "installation-token")
				})
			}
		})
	}
}

// fromSecret is a forge whose run is configured as nudgeflow configures it for a
// basic-auth Secret of (secretUser, token).
type fromSecret struct {
	landingforge.Forge
	token, username, gitAuthor string
}

func (f fromSecret) Username() string  { return f.username }
func (f fromSecret) GitAuthor() string { return f.gitAuthor }
func (f fromSecret) Token() string     { return f.token }

func usernameDiffersFromLogin(t *testing.T, w *world, base landingforge.Forge, token, variant string) {
	ctx := context.Background()
	host := strings.TrimPrefix(strings.TrimPrefix(base.RepoURL("o", "r"), "http://"), "https://")
	host, _, _ = strings.Cut(host, "/")
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	username, gitAuthor := renovate.BasicAuthIdentity(base.Platform(), host, secretUser, token)
	require.Empty(t, username, "the Secret's user name is not Renovate's")
	f := fromSecret{Forge: base, token: token, username: username, gitAuthor: gitAuthor}
	tn := newTenant(t, w, f)
	forge := f.Name()

	image := tn.w.registry.Host + "/ns/identity-" + forge + "-" + variant
	old, err := tn.w.registry.PushImage(ctx, strings.TrimPrefix(image, tn.w.registry.Host+"/")+":v1")
	require.NoError(t, err)
	first, err := tn.w.registry.PushImage(ctx, strings.TrimPrefix(image, tn.w.registry.Host+"/")+":v1")
	require.NoError(t, err)
	repo := "identity-" + variant
	f.CreateRepo(t, tn.owner, repo, "main", map[string]string{"Dockerfile": "FROM " + image + "@" + old + "\nRUN true\n"})
	f.CreateLabel(t, tn.owner, repo, renovate.NudgeLabel)
	n := nudge{Nudging: nudging, Nudged: nudged, Repo: tn.owner + "/" + repo, Image: image + ":v1"}

	n.Run, n.Digest = "identity-"+variant+"-1", first
	r := tn.runNudge(t, n)
	requireSucceeded(t, r)
	prs := f.PRs(t, tn.owner, repo)
	require.Len(t, prs, 1, "the first build opens the nudge PR; log %s", r.LogPath)
	pr := prs[0]
	require.Equal(t, nudgeBranch, pr.HeadRef)

	second, err := tn.w.registry.PushImage(ctx, strings.TrimPrefix(image, tn.w.registry.Host+"/")+":v1")
	require.NoError(t, err)
	n.Run, n.Digest = "identity-"+variant+"-2", second
	r = tn.runNudge(t, n)
	requireSucceeded(t, r)
	require.True(t, r.Status.Succeeded, "nudgeflow reads the run as succeeded: %+v", r.Status)
	require.NotContains(t, r.Log, "Branch has been edited", "Renovate reads its own commit as its own; log %s", r.LogPath)
	prs = f.PRs(t, tn.owner, repo)
	require.Len(t, prs, 1, "the second build lands in the nudge PR, it opens no other; log %s", r.LogPath)
	require.Equal(t, pr.Number, prs[0].Number)
	require.Equal(t, nudgeTitle(second), prs[0].Title, "the title follows the digest; log %s", r.LogPath)
	got, ok := f.FileAt(t, tn.owner, repo, prs[0].HeadSHA, "Dockerfile")
	require.True(t, ok)
	require.Equal(t, "FROM "+image+"@"+second+"\nRUN true\n", got, "the PR's head has the second build's digest; log %s", r.LogPath)
	if gh, ok := base.(*landingforge.GitHub); ok {
		// The commit is the token's identity's, and signs off with the gitAuthor
		// Renovate committed as (given, or discovered for an installation token).
		head, ok := gh.Emu.CommitOf(tn.owner, repo, prs[0].HeadSHA)
		require.True(t, ok)
		want := strings.TrimSuffix(gitAuthor[strings.LastIndex(gitAuthor, "<")+1:], ">")
		if gitAuthor == "" {
			want = githubemu.AppBotUser(secretUser, 1, gh.Emu.Host()).Email
		}
		require.Equal(t, want, head.AuthorEmail, "the PR's head commit; log %s", r.LogPath)
		require.Contains(t, head.Message, "Signed-off-by: ", "log %s", r.LogPath)
		require.Contains(t, head.Message, "<"+want+">", "signed off as the commit's author; log %s", r.LogPath)
		require.NotContains(t, head.Message, "{{", "the template is rendered; log %s", r.LogPath)
	}
	t.Logf("renovate-e2e forge=%s case=username-differs-from-login token=%s secret_user=%s prs=1 pr=#%d digest=%s outcome=%s run=%q",
		forge, variant, secretUser, prs[0].Number, short(second), renovaterun.OutcomeOK, r.Cost)
}
