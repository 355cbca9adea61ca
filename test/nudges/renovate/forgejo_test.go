package renovate_test

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

// The forgejo forge is a real Gitea (the API and git server Forgejo shares with
// it), started by test/localenv for each test that asks for it.
func init() { forgeStarters["forgejo"] = startForgejo }

type forgejoForge struct {
	f *localenv.Forgejo
	// createMu serialises CreateRepo: it creates the owner organisation when
	// missing, and two cases creating it at once make Gitea refuse the second.
	createMu sync.Mutex
}

func startForgejo(t *testing.T) forgeUnderTest {
	t.Helper()
	f, err := localenv.StartForgejo(context.Background(), t.TempDir())
	require.NoError(t, err, "start Gitea (GITEA=$(hack/tools.sh path gitea))")
	t.Cleanup(func() { require.NoError(t, f.Stop()) })
	return &forgejoForge{f: f}
}

func (g *forgejoForge) Name() string { return "forgejo" }

// Platform is what nudgeflow writes for a Forgejo or Gitea repository (as
// build-service does); the runner runs it as the pinned Renovate's gitea.
func (g *forgejoForge) Platform() string { return "forgejo" }

// Endpoint is what nudgeflow derives from the clone URL: Gitea serves http
// here, and the endpoint keeps that scheme.
func (g *forgejoForge) Endpoint() string  { return g.f.URL + "/api/v1/" }
func (g *forgejoForge) Username() string  { return localenv.ForgejoBot }
func (g *forgejoForge) GitAuthor() string { return localenv.ForgejoBot + " <" + g.f.BotEmail + ">" }
func (g *forgejoForge) Token() string     { return g.f.BotToken }

func (g *forgejoForge) CreateRepo(t *testing.T, owner, name, branch string, files map[string]string) {
	t.Helper()
	g.createMu.Lock()
	defer g.createMu.Unlock()
	require.NoError(t, g.f.CreateRepo(owner, name, branch, files))
}

func (g *forgejoForge) CreateLabel(t *testing.T, owner, name, label string) {
	t.Helper()
	require.NoError(t, g.f.API(http.MethodPost, "/repos/"+url.PathEscape(owner)+"/"+url.PathEscape(name)+"/labels", g.f.AdminToken,
		map[string]string{"name": label, "color": "#00aabb"}, nil))
}

func (g *forgejoForge) PRs(t *testing.T, owner, name string) []pullRequest {
	t.Helper()
	var prs []struct {
		Number int
		Title  string
		Body   string
		Head   struct{ Ref, SHA string }
		Labels []struct{ Name string }
	}
	require.NoError(t, g.f.API(http.MethodGet, fmt.Sprintf("/repos/%s/%s/pulls?state=open&limit=50",
		url.PathEscape(owner), url.PathEscape(name)), g.f.AdminToken, nil, &prs))
	out := make([]pullRequest, 0, len(prs))
	for _, p := range prs {
		pr := pullRequest{Number: p.Number, Title: p.Title, Body: p.Body, HeadRef: p.Head.Ref, HeadSHA: p.Head.SHA}
		for _, l := range p.Labels {
			pr.Labels = append(pr.Labels, l.Name)
		}
		out = append(out, pr)
	}
	return out
}

func (g *forgejoForge) FileAt(t *testing.T, owner, name, ref, path string) (string, bool) {
	t.Helper()
	return g.f.FileAt(owner, name, ref, path)
}
