package nudgewrite_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/test/forgeemu/faultproxy"
	"github.com/nudgeflow/nudgeflow/test/localenv"
)

var shared struct {
	sync.Once
	srv *localenv.Forgejo
	err error
}

// forgejoServer is the package's one Gitea server (each test has its repository).
func forgejoServer(t *testing.T) *localenv.Forgejo {
	t.Helper()
	shared.Do(func() {
		dir := filepath.Join(os.TempDir(), "nudgeflow-nudgewrite-test", strconv.Itoa(os.Getpid()))
		if shared.err = os.MkdirAll(dir, 0o755); shared.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // a cold tool build included
		defer cancel()
		shared.srv, shared.err = localenv.StartForgejo(ctx, dir)
	})
	if shared.err != nil {
		t.Fatalf("starting the Gitea test server: %v", shared.err)
	}
	return shared.srv
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.srv != nil {
		_ = shared.srv.Stop()
		_ = os.RemoveAll(shared.srv.Dir())
	}
	os.Exit(code)
}

// giteaRepo is a repository on the real Gitea server.
type giteaRepo struct {
	t           *testing.T
	srv         *localenv.Forgejo
	owner, name string
	// proxy, when set, is what the writer reaches the server through.
	proxy *faultproxy.Proxy
}

// newGiteaRepo makes the repository with files and the labels konflux-nudge and team-x.
func newGiteaRepo(t *testing.T, files map[string]string) *giteaRepo {
	t.Helper()
	srv := forgejoServer(t)
	g := &giteaRepo{t: t, srv: srv, owner: "acme", name: nextRepoName()}
	require.NoError(t, srv.CreateRepo(g.owner, g.name, "main", files))
	for _, l := range []string{renovate.NudgeLabel, "team-x", "team-y"} {
		require.NoError(t, srv.API("POST", "/repos/"+g.owner+"/"+g.name+"/labels", srv.AdminToken, map[string]any{"name": l, "color": "#00aabb"}, nil))
	}
	return g
}

func (g *giteaRepo) provider() string { return "forgejo" }
func (g *giteaRepo) url() string {
	if g.proxy != nil {
		return g.proxy.URL + "/" + g.owner + "/" + g.name
	}
	return g.srv.RepoURL(g.owner, g.name)
}
func (g *giteaRepo) secretUser() string { return localenv.ForgejoBot }
func (g *giteaRepo) token() string      { return g.srv.BotToken }
func (g *giteaRepo) head(b string) (commit, bool) {
	c, ok := g.srv.Head(g.owner, g.name, b)
	return commit(c), ok
}
func (g *giteaRepo) fileAt(ref, path string) (string, bool) {
	return g.srv.FileAt(g.owner, g.name, ref, path)
}
func (g *giteaRepo) pr(number int) pr {
	g.t.Helper()
	p, err := g.srv.PR(g.owner, g.name, number)
	require.NoError(g.t, err)
	var ls []struct{ Name string }
	require.NoError(g.t, g.srv.API("GET", fmt.Sprintf("/repos/%s/%s/issues/%d/labels", g.owner, g.name, number), g.srv.AdminToken, nil, &ls))
	out := pr{Number: p.Number, Title: p.Title, Body: p.Body, State: p.State, Head: p.Head.Ref, Base: p.Base.Ref, Merged: p.Merged}
	for _, l := range ls {
		out.Labels = append(out.Labels, l.Name)
	}
	return out
}
func (g *giteaRepo) prs() []pr {
	g.t.Helper()
	ps, err := g.srv.PRs(g.owner, g.name)
	require.NoError(g.t, err)
	var out []pr
	for _, p := range ps {
		out = append(out, g.pr(p.Number))
	}
	return out
}
func (g *giteaRepo) humanCommit(b string, files map[string]string, message string) (string, error) {
	return g.srv.HumanCommit(g.owner, g.name, b, files, message)
}
func (g *giteaRepo) editBody(n int, body string) error {
	return g.srv.EditBody(g.owner, g.name, n, body)
}
func (g *giteaRepo) closePR(n int) error { return g.srv.ClosePR(g.owner, g.name, n) }
func (g *giteaRepo) breakRepo() error {
	return g.srv.API("DELETE", "/repos/"+g.owner+"/"+g.name, g.srv.AdminToken, nil, nil)
}

func TestForgejo(t *testing.T) {
	t.Run("lifecycle", func(t *testing.T) {
		old := digest(1)
		g := newGiteaRepo(t, files(old))
		f := newFixture(t, g, map[string]string{"labels": "team-x, not-defined"})
		lifecycle(t, f, old)
		// Labels by name, as Renovate's Gitea platform: only those the repository defines.
		require.ElementsMatch(t, []string{renovate.NudgeLabel, "team-x"}, g.pr(1).Labels)
	})
	t.Run("labels-follow-the-configmap", func(t *testing.T) {
		labelsFollow(t, newFixture(t, newGiteaRepo(t, files(digest(30))), map[string]string{"labels": "team-x"}))
	})
	t.Run("already-current", func(t *testing.T) {
		d := digest(7)
		alreadyCurrent(t, newFixture(t, newGiteaRepo(t, files(d)), nil), d)
	})
	// Platform automerge: Gitea is asked to merge the PR once its checks pass, as
	// Renovate asks it; with no checks Gitea merges it.
	t.Run("platform-automerge", func(t *testing.T) {
		old, d := digest(8), digest(9)
		g := newGiteaRepo(t, files(old))
		f := newFixture(t, g, map[string]string{"automerge": "true"})
		res := f.write(build(d, time.Now()))
		require.Equal(t, "Opened", res.Outcome, "%+v", res)
		require.Contains(t, g.pr(res.PR).Body, "**Automerge**: Enabled.")
		require.Eventually(t, func() bool { return g.pr(res.PR).Merged }, 30*time.Second, 200*time.Millisecond, "Gitea merges the PR itself")
		got, _ := g.fileAt("main", "Dockerfile")
		require.Equal(t, "FROM "+built+"@"+d+"\nRUN true\n", got)
		_, ok := g.head(branch)
		require.False(t, ok, "the branch is deleted after the merge, as Renovate asks")
	})
	for _, c := range []struct {
		name string
		cm   map[string]string
		says string
	}{
		{"fallback-branch-automerge", map[string]string{"automerge": "true", "automergeType": "branch"}, `automergeType "branch"`},
		{"fallback-automerge-schedule", map[string]string{"automerge": "true", "automergeSchedule": "after 10pm"}, "automergeSchedule"},
		{"fallback-automerge-without-the-forge", map[string]string{"automerge": "true", "platformAutomerge": "false"}, "without platformAutomerge"},
		{"fallback-automerge-ignoring-tests", map[string]string{"automerge": "true", "ignoreTests": "true"}, "ignoreTests"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fallback(t, newFixture(t, newGiteaRepo(t, files(digest(10))), c.cm), c.says)
		})
	}
	// Compare-and-swap: a person's push that lands between the writer's read of
	// the branch and its move of it is never overwritten; the writer reads again
	// and leaves the branch to the person.
	t.Run("concurrent-push-kept", func(t *testing.T) {
		old := digest(20)
		g := newGiteaRepo(t, files(old))
		proxy, err := faultproxy.New(g.srv.URL)
		require.NoError(t, err)
		t.Cleanup(proxy.Close)
		g.proxy = proxy
		f := newFixture(t, g, nil)
		t0 := time.Now().Add(-time.Hour)
		require.Equal(t, "Opened", f.write(build(digest(21), t0)).Outcome)
		var human string
		proxy.BeforeRequest(1, func(r *http.Request) bool {
			return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/branches/")
		}, func() {
			human, err = g.humanCommit(branch, map[string]string{"NOTES.md": "raced\n"}, "a push at the same moment")
		})
		res := f.write(build(digest(22), t0.Add(time.Minute)))
		require.NoError(t, err)
		require.NotEmpty(t, human, "the person's push happened during the write")
		require.Equal(t, "PersonCommitted", res.Outcome, "%+v", res)
		head, _ := g.head(branch)
		require.Equal(t, human, head.SHA, "the person's commit stays the head")
	})
	// A pull request of the branch opened by someone else between the writer's
	// read and its own opening: the writer reads again and takes that one.
	t.Run("concurrent-pr-taken", func(t *testing.T) {
		g := newGiteaRepo(t, files(digest(23)))
		proxy, err := faultproxy.New(g.srv.URL)
		require.NoError(t, err)
		t.Cleanup(proxy.Close)
		g.proxy = proxy
		f := newFixture(t, g, nil)
		var theirs struct{ Number int }
		proxy.BeforeRequest(1, func(r *http.Request) bool {
			return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/pulls")
		}, func() {
			err = g.srv.API(http.MethodPost, "/repos/"+g.owner+"/"+g.name+"/pulls", g.srv.HumanToken,
				map[string]any{"head": branch, "base": "main", "title": "opened at the same moment"}, &theirs)
		})
		res := f.write(build(digest(24), time.Now()))
		require.NoError(t, err)
		require.NotZero(t, theirs.Number, "the other PR was opened during the write")
		require.Equal(t, "Updated", res.Outcome, "%+v", res)
		require.Equal(t, theirs.Number, res.PR)
		require.Len(t, g.prs(), 1, "no second PR")
		require.Equal(t, title(digest(24)), g.pr(theirs.Number).Title, "Renovate's title on it")
	})
	t.Run("token-stays-in-the-worker", func(t *testing.T) {
		tokenStays(t, newFixture(t, newGiteaRepo(t, files(digest(12))), nil))
	})
}
