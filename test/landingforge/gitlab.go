package landingforge

import (
	"testing"

	"github.com/stretchr/testify/require"

	glemu "github.com/nudgeflow/nudgeflow/test/forgeemu/gitlab"
)

// GitLabBot is the nudging bot on GitLab: a project access token's bot user, the
// Developer that pushes Renovate's branches.
var GitLabBot = glemu.User{Username: "konflux-nudge-bot", Name: "Konflux Nudge Bot", Email: "konflux-nudge-bot@noreply.gitlab.example"}

// GitLabBotToken is GitLabBot's project access token.
const GitLabBotToken = "glpat-konflux-nudge-bot"

// GitLab is the GitLab emulator (test/forgeemu/gitlab) with real git behind its
// clone URLs, as Renovate's gitlab platform meets it.
type GitLab struct{ Emu *glemu.Server }

// StartGitLab starts the emulator with GitLabBot's token.
func StartGitLab(t testing.TB) *GitLab {
	t.Helper()
	emu := glemu.New()
	t.Cleanup(emu.Close)
	emu.AddToken(GitLabBotToken, GitLabBot)
	return &GitLab{Emu: emu}
}

func (g *GitLab) Name() string     { return "gitlab" }
func (g *GitLab) Platform() string { return "gitlab" }

// Endpoint is the REST base Renovate's gitlab platform takes (…/api/v4/), what
// nudgeflow derives from RepoURL; Renovate clones from the project's
// http_url_to_repo.
func (g *GitLab) Endpoint() string  { return g.Emu.APIURL() }
func (g *GitLab) Username() string  { return GitLabBot.Username }
func (g *GitLab) GitAuthor() string { return GitLabBot.Name + " <" + GitLabBot.Email + ">" }
func (g *GitLab) Token() string     { return GitLabBotToken }

func (g *GitLab) RepoURL(owner, name string) string { return g.Emu.URL() + "/" + owner + "/" + name }

func (g *GitLab) CreateRepo(t testing.TB, owner, name, branch string, files map[string]string) {
	t.Helper()
	g.Emu.CreateProject(owner, name, branch, files)
}

func (g *GitLab) CreateLabel(t testing.TB, owner, name, label string) {
	t.Helper()
	require.NoError(t, g.Emu.CreateLabel(owner, name, label, "#00aabb"))
}

func (g *GitLab) PRs(t testing.TB, owner, name string) []PullRequest {
	t.Helper()
	var out []PullRequest
	for _, m := range g.Emu.MRs(owner, name) {
		if m.State == "opened" {
			out = append(out, PullRequest{Number: m.IID, Title: m.Title, Body: m.Description, HeadRef: m.Source,
				HeadSHA: m.SHA, Labels: m.Labels})
		}
	}
	return out
}

func (g *GitLab) FileAt(t testing.TB, owner, name, ref, path string) (string, bool) {
	t.Helper()
	return g.Emu.FileAt(owner, name, ref, path)
}
