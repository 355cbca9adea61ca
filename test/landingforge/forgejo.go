package landingforge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/test/localenv"
)

// Forgejo is a real Gitea (the API and git server Forgejo shares with it),
// started by test/localenv for the test that asks for it.
type Forgejo struct {
	Server *localenv.Forgejo
	// createMu serialises CreateRepo: it creates the owner organisation when
	// missing, and two callers creating it at once make Gitea refuse the second.
	createMu sync.Mutex
}

// StartForgejo starts Gitea in t's temporary directory (GITEA names the binary).
func StartForgejo(t testing.TB) *Forgejo {
	t.Helper()
	f, err := localenv.StartForgejo(context.Background(), t.TempDir())
	require.NoError(t, err, "start Gitea (GITEA=$(hack/tools.sh path gitea))")
	t.Cleanup(func() { require.NoError(t, f.Stop()) })
	return &Forgejo{Server: f}
}

func (g *Forgejo) Name() string { return "forgejo" }

// Platform is what nudgeflow writes for a Forgejo or Gitea repository (as
// build-service does); the runner runs it as the pinned Renovate's gitea.
func (g *Forgejo) Platform() string { return "forgejo" }

// Endpoint is what nudgeflow derives from the clone URL: Gitea serves http
// here, and the endpoint keeps that scheme.
func (g *Forgejo) Endpoint() string  { return g.Server.URL + "/api/v1/" }
func (g *Forgejo) Username() string  { return localenv.ForgejoBot }
func (g *Forgejo) GitAuthor() string { return localenv.ForgejoBot + " <" + g.Server.BotEmail + ">" }
func (g *Forgejo) Token() string     { return g.Server.BotToken }

func (g *Forgejo) RepoURL(owner, name string) string { return g.Server.RepoURL(owner, name) }

func (g *Forgejo) CreateRepo(t testing.TB, owner, name, branch string, files map[string]string) {
	t.Helper()
	g.createMu.Lock()
	defer g.createMu.Unlock()
	require.NoError(t, g.Server.CreateRepo(owner, name, branch, files))
}

func (g *Forgejo) CreateLabel(t testing.TB, owner, name, label string) {
	t.Helper()
	require.NoError(t, g.Server.API(http.MethodPost, "/repos/"+url.PathEscape(owner)+"/"+url.PathEscape(name)+"/labels",
		g.Server.AdminToken, map[string]string{"name": label, "color": "#00aabb"}, nil))
}

func (g *Forgejo) PRs(t testing.TB, owner, name string) []PullRequest {
	t.Helper()
	var prs []struct {
		Number int
		Title  string
		Body   string
		Head   struct{ Ref, SHA string }
		Labels []struct{ Name string }
	}
	require.NoError(t, g.Server.API(http.MethodGet, fmt.Sprintf("/repos/%s/%s/pulls?state=open&limit=50",
		url.PathEscape(owner), url.PathEscape(name)), g.Server.AdminToken, nil, &prs))
	out := make([]PullRequest, 0, len(prs))
	for _, p := range prs {
		pr := PullRequest{Number: p.Number, Title: p.Title, Body: p.Body, HeadRef: p.Head.Ref, HeadSHA: p.Head.SHA}
		for _, l := range p.Labels {
			pr.Labels = append(pr.Labels, l.Name)
		}
		out = append(out, pr)
	}
	return out
}

func (g *Forgejo) FileAt(t testing.TB, owner, name, ref, path string) (string, bool) {
	t.Helper()
	return g.Server.FileAt(owner, name, ref, path)
}
