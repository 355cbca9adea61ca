package landingforge

import (
	"testing"

	"github.com/stretchr/testify/require"

	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
)

// GitHubBot is the nudging bot on GitHub: a machine user whose personal access
// token pushes Renovate's branches (build-service's Renovate runs with such a
// token when no GitHub App is configured).
var GitHubBot = githubemu.User{Login: "konflux-nudge-bot", Name: "Konflux Nudge Bot", Email: "konflux-nudge-bot@users.noreply.github.example"}

// GitHubBotToken has a classic personal access token's prefix: Renovate's github
// platform treats "ghs_" as an App's token and "github_pat_" as fine-grained.
const GitHubBotToken = "ghp_konfluxnudgebot0000000000000000000000"

// GitHubAppToken has an App installation token's prefix, what build-service's
// GitHub App path hands Renovate: Renovate then pushes its commit to
// refs/renovate/branches/… and makes the branch's commit through the API
// (platform-native commit), so the App signs it.
const GitHubAppToken = "ghs_konfluxnudgeapp0000000000000000000000"

// GitHub is the GitHub emulator (test/forgeemu/github) with real git behind its
// clone URLs, as Renovate's github platform meets it: GHES style, REST under
// /api/v3/ and GraphQL at /api/graphql.
type GitHub struct {
	Emu   *githubemu.Server
	token string
}

// StartGitHub starts the emulator with GitHubBot's personal access token.
func StartGitHub(t testing.TB) *GitHub {
	t.Helper()
	emu := githubemu.New()
	t.Cleanup(emu.Close)
	emu.AddToken(GitHubBotToken, GitHubBot)
	return &GitHub{Emu: emu, token: GitHubBotToken}
}

// WithToken is the same emulator with the bot acting through token (registered
// for GitHubBot), e.g. GitHubAppToken for the App path.
func (g *GitHub) WithToken(token string) *GitHub {
	g.Emu.AddToken(token, GitHubBot)
	return &GitHub{Emu: g.Emu, token: token}
}

func (g *GitHub) Name() string     { return "github" }
func (g *GitHub) Platform() string { return "github" }

// Endpoint is the GHES REST base Renovate's github platform takes; it derives the
// GraphQL URL (…/api/graphql) and the clone URL (…/owner/name.git) from it. It is
// what nudgeflow derives from RepoURL for a host other than github.com.
func (g *GitHub) Endpoint() string  { return g.Emu.APIURL() }
func (g *GitHub) Username() string  { return GitHubBot.Login }
func (g *GitHub) GitAuthor() string { return GitHubBot.Name + " <" + GitHubBot.Email + ">" }
func (g *GitHub) Token() string     { return g.token }

func (g *GitHub) RepoURL(owner, name string) string { return g.Emu.URL() + "/" + owner + "/" + name }

func (g *GitHub) CreateRepo(t testing.TB, owner, name, branch string, files map[string]string) {
	t.Helper()
	g.Emu.CreateRepo(owner, name, branch, files)
}

func (g *GitHub) CreateLabel(t testing.TB, owner, name, label string) {
	t.Helper()
	require.NoError(t, g.Emu.CreateLabel(owner, name, label, "00aabb"))
}

func (g *GitHub) PRs(t testing.TB, owner, name string) []PullRequest {
	t.Helper()
	var out []PullRequest
	for _, p := range g.Emu.PRs(owner, name) {
		if p.State == "open" {
			out = append(out, PullRequest{Number: p.Number, Title: p.Title, Body: p.Body, HeadRef: p.Head,
				HeadSHA: p.HeadSHA, Labels: p.Labels})
		}
	}
	return out
}

func (g *GitHub) FileAt(t testing.TB, owner, name, ref, path string) (string, bool) {
	t.Helper()
	return g.Emu.FileAt(owner, name, ref, path)
}
