package gitlab

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	gl "gitlab.com/gitlab-org/api/client-go"
)

// gitCLI runs the git CLI in dir with a clean identity and no prompts.
func gitCLI(t *testing.T, home, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+home,
		"GIT_AUTHOR_NAME=Dev", "GIT_AUTHOR_EMAIL=dev@example.com", "GIT_COMMITTER_NAME=Dev", "GIT_COMMITTER_EMAIL=dev@example.com")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// hookLog records the webhooks the emulator posts: X-Gitlab-Event and payload.
type hookLog struct {
	mu  sync.Mutex
	got []map[string]any
}

func (h *hookLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var p map[string]any
	_ = json.Unmarshal(b, &p)
	p["X-Gitlab-Event"] = r.Header.Get("X-Gitlab-Event")
	h.mu.Lock()
	h.got = append(h.got, p)
	h.mu.Unlock()
}

func (h *hookLog) all() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]map[string]any(nil), h.got...)
}

// A git push at the clone URL (http_url_to_repo, token as the basic-auth password
// under any user name, as Renovate's oauth2:<token>) is what the REST API shows:
// the branch, its commit, an open merge request's new head with an update event
// carrying oldrev; and a Push Hook goes to a hook subscribed to push events, as
// for a commit made through the API.
func TestPushOverGitIsWhatTheAPIShows(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	hooks := &hookLog{}
	hs := httptest.NewServer(hooks)
	t.Cleanup(hs.Close)
	s.AddWebhookFor(hs.URL, "secret", PushEvents, MergeRequestEvents)
	s.AddToken("bot-token", User{Username: "konflux-bot", Name: "Konflux", Email: "bot@example.com"})
	s.CreateProject("tenant", "consumer", "main", map[string]string{"Dockerfile": "FROM a\n", "deploy/app.yaml": "image: a\n"})
	c := client(t, s, "bot-token")
	proj, _, err := c.Projects.GetProject("tenant/consumer", nil)
	require.NoError(t, err)
	require.Equal(t, s.GitURL("tenant", "consumer"), proj.HTTPURLToRepo)
	main, _ := s.Head("tenant", "consumer", "main")

	home, work := t.TempDir(), t.TempDir()
	url := strings.Replace(proj.HTTPURLToRepo, "http://", "http://oauth2:bot-token@", 1)
	_, err = gitCLI(t, home, work, "clone", "--quiet", url, "repo")
	require.NoError(t, err)
	repo := filepath.Join(work, "repo")
	head, err := gitCLI(t, home, repo, "rev-parse", "HEAD")
	require.NoError(t, err)
	require.Equal(t, main.SHA, head, "the clone has the commit the API names")

	require.NoError(t, os.WriteFile(filepath.Join(repo, "Dockerfile"), []byte("FROM b\n"), 0o644))
	for _, args := range [][]string{{"checkout", "--quiet", "-b", "bump"}, {"commit", "--quiet", "-am", "bump a to b"}, {"push", "--quiet", "origin", "bump"}} {
		out, err := gitCLI(t, home, repo, args...)
		require.NoError(t, err, "git %v: %s", args, out)
	}
	pushed, err := gitCLI(t, home, repo, "rev-parse", "HEAD")
	require.NoError(t, err)
	br, _, err := c.Branches.GetBranch("tenant/consumer", "bump")
	require.NoError(t, err)
	require.Equal(t, pushed, br.Commit.ID)
	require.Equal(t, "bump a to b", br.Commit.Title)
	got, ok := s.FileAt("tenant", "consumer", "bump", "Dockerfile")
	require.True(t, ok)
	require.Equal(t, "FROM b\n", got)

	mr, _, err := c.MergeRequests.CreateMergeRequest("tenant/consumer", &gl.CreateMergeRequestOptions{Title: new("bump"),
		SourceBranch: new("bump"), TargetBranch: new("main")})
	require.NoError(t, err)
	require.Equal(t, pushed, mr.SHA)

	// A force-push (Renovate rewrites its branch on every update).
	require.NoError(t, os.WriteFile(filepath.Join(repo, "Dockerfile"), []byte("FROM c\n"), 0o644))
	for _, args := range [][]string{{"commit", "--quiet", "--amend", "-am", "bump a to c"}, {"push", "--quiet", "--force-with-lease", "origin", "bump"}} {
		out, err := gitCLI(t, home, repo, args...)
		require.NoError(t, err, "git %v: %s", args, out)
	}
	forced, err := gitCLI(t, home, repo, "rev-parse", "HEAD")
	require.NoError(t, err)
	mr, _, err = c.MergeRequests.GetMergeRequest("tenant/consumer", mr.IID, nil)
	require.NoError(t, err)
	require.Equal(t, forced, mr.SHA, "the merge request's head follows the push")

	// Then the branch is deleted over git: the merge request stays open.
	out, err := gitCLI(t, home, repo, "push", "--quiet", "origin", "--delete", "bump")
	require.NoError(t, err, out)
	_, resp, err := c.Branches.GetBranch("tenant/consumer", "bump")
	require.Error(t, err)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	type seen struct{ event, ref, before, after, action, oldrev string }
	want := []seen{
		{event: "Push Hook", ref: "refs/heads/bump", before: zeroSHA, after: pushed},
		{event: "Merge Request Hook", action: "open"},
		{event: "Push Hook", ref: "refs/heads/bump", before: pushed, after: forced},
		{event: "Merge Request Hook", action: "update", oldrev: pushed},
		{event: "Push Hook", ref: "refs/heads/bump", before: forced, after: zeroSHA},
	}
	str := func(v any) string { s, _ := v.(string); return s }
	var gotHooks []seen
	require.Eventually(t, func() bool {
		gotHooks = nil
		for _, h := range hooks.all() {
			attrs, _ := h["object_attributes"].(map[string]any)
			gotHooks = append(gotHooks, seen{event: str(h["X-Gitlab-Event"]), ref: str(h["ref"]), before: str(h["before"]),
				after: str(h["after"]), action: str(attrs["action"]), oldrev: str(attrs["oldrev"])})
		}
		return len(gotHooks) >= len(want)
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, want, gotHooks)
	first := hooks.all()[0]
	commits, _ := first["commits"].([]any)
	require.Len(t, commits, 1, "the new branch's push lists the commit main lacks")
	require.Equal(t, []any{"Dockerfile"}, commits[0].(map[string]any)["modified"])
	require.Equal(t, float64(1), first["total_commits_count"])
}

// Who may clone and push, as GitLab answers git over HTTP on a private project:
// no token or an unknown one 401, a Reporter (read-only) may clone but not push
// (403), an unknown project 404 to a known token.
func TestGitAccessFollowsTheToken(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	s.AddToken("dev-token", User{Username: "dev", Name: "Dev", Email: "dev@example.com"})
	s.AddToken("reporter-token", User{Username: "rep", Name: "Rep", Email: "rep@example.com", ReadOnly: true})
	s.CreateProject("tenant", "consumer", "main", map[string]string{"Dockerfile": "FROM a\n"})
	status := func(token, path string) int {
		req, _ := http.NewRequest(http.MethodGet, s.URL()+path, nil)
		if token != "" {
			req.SetBasicAuth("oauth2", token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	refs := "/tenant/consumer.git/info/refs?service="
	require.Equal(t, http.StatusUnauthorized, status("", refs+"git-upload-pack"))
	require.Equal(t, http.StatusUnauthorized, status("wrong", refs+"git-upload-pack"))
	require.Equal(t, http.StatusOK, status("reporter-token", refs+"git-upload-pack"))
	require.Equal(t, http.StatusForbidden, status("reporter-token", refs+"git-receive-pack"))
	require.Equal(t, http.StatusOK, status("dev-token", refs+"git-receive-pack"))
	require.Equal(t, http.StatusOK, status("dev-token", "/TENANT/Consumer.git/info/refs?service=git-upload-pack"), "paths are case-insensitive")
	require.Equal(t, http.StatusNotFound, status("dev-token", "/tenant/nothing.git/info/refs?service=git-upload-pack"))

	home, work := t.TempDir(), t.TempDir()
	out, err := gitCLI(t, home, work, "clone", "--quiet", strings.Replace(s.GitURL("tenant", "consumer"), "http://", "http://any:reporter-token@", 1), "repo")
	require.NoError(t, err, out)
	repo := filepath.Join(work, "repo")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "x"), []byte("x\n"), 0o644))
	_, err = gitCLI(t, home, repo, "add", "x")
	require.NoError(t, err)
	_, err = gitCLI(t, home, repo, "commit", "--quiet", "-m", "x")
	require.NoError(t, err)
	out, err = gitCLI(t, home, repo, "push", "origin", "HEAD:refs/heads/x")
	require.Error(t, err, "a Reporter cannot push")
	require.Contains(t, out, "403")
	_, ok := s.Head("tenant", "consumer", "x")
	require.False(t, ok)
}
