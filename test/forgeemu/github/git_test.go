package github

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestGitCloneAndPush drives the emulator's git endpoint with the git CLI: the clone
// URL the REST API gives clones the repository with the API's SHAs, and a push to a
// pull request's branch moves its head and counts as a synchronize (a CI build), as
// a REST ref update does; a new branch pushed is readable through the API.
func TestGitCloneAndPush(t *testing.T) {
	s, gh, _ := setup(t)
	ctx := context.Background()
	number, _, err := s.OpenPR("org", "bundle", "cg", "main", bot, map[string]string{"Dockerfile": "FROM y\n"}, "bump")
	if err != nil {
		t.Fatal(err)
	}
	builds := s.CIBuildsForPR("org", "bundle", number)
	type hookPayload struct {
		Event, Ref, Before, After string
		Created                   bool
		Commits                   []struct{ ID, Message string }
	}
	got := make(chan hookPayload, 10)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p hookPayload
		_ = json.NewDecoder(r.Body).Decode(&p)
		p.Event = r.Header.Get("X-GitHub-Event")
		got <- p
	}))
	defer sink.Close()
	s.AddWebhookFor(sink.URL, "secret", EventPush, EventPullRequest)
	repo, _, err := gh.Repositories.Get(ctx, "org", "bundle")
	if err != nil {
		t.Fatal(err)
	}
	if repo.GetCloneURL() != s.CloneURL("org", "bundle") || !strings.HasSuffix(repo.GetCloneURL(), "/org/bundle.git") {
		t.Fatalf("clone_url %q", repo.GetCloneURL())
	}
	work := t.TempDir()
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+work,
			"GIT_AUTHOR_NAME=Dev", "GIT_AUTHOR_EMAIL=dev@example.com", "GIT_COMMITTER_NAME=Dev", "GIT_COMMITTER_EMAIL=dev@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	clone := filepath.Join(work, "bundle")
	url := strings.Replace(repo.GetCloneURL(), "http://", "http://x-access-token:"+token+"@", 1)
	git(work, "clone", "-q", url, clone)
	pr, _ := s.PR("org", "bundle", number)
	if got := git(clone, "rev-parse", "origin/cg"); got != pr.HeadSHA {
		t.Fatalf("origin/cg %s, the PR's head %s", got, pr.HeadSHA)
	}

	git(clone, "checkout", "-q", "cg")
	if err := os.WriteFile(filepath.Join(clone, "a/b/c.yaml"), []byte("k: w\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(clone, "commit", "-q", "-am", "edit c")
	pushed := git(clone, "rev-parse", "HEAD")
	git(clone, "push", "-q", "origin", "cg", "cg:refs/heads/other")

	// GitHub's webhooks of the push: push for each branch (one created), and
	// synchronize for the pull request.
	var events []string
	for len(events) < 3 {
		select {
		case p := <-got:
			events = append(events, p.Event+" "+p.Ref)
			// cg moves first (the push's branches in order): it brings the new
			// commit; other, created at it, brings none new to the repository.
			cg := p.Ref == "refs/heads/cg"
			if p.Event == "push" && (p.After != pushed || p.Created == cg ||
				(cg && (len(p.Commits) != 1 || p.Commits[0].ID != pushed)) || (!cg && len(p.Commits) != 0)) {
				t.Fatalf("push event %+v", p)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("webhooks so far: %v", events)
		}
	}
	slices.Sort(events)
	if want := []string{"pull_request ", "push refs/heads/cg", "push refs/heads/other"}; !slices.Equal(events, want) {
		t.Fatalf("webhooks %v, want %v", events, want)
	}
	if pr, _ := s.PR("org", "bundle", number); pr.HeadSHA != pushed {
		t.Fatalf("PR head %s after the push of %s", pr.HeadSHA, pushed)
	}
	if got := s.CIBuildsForPR("org", "bundle", number); got != builds+1 {
		t.Fatalf("CI builds %d after the push, were %d: a push is a synchronize", got, builds)
	}
	ref, _, err := gh.Git.GetRef(ctx, "org", "bundle", "heads/other")
	if err != nil || ref.GetObject().GetSHA() != pushed {
		t.Fatalf("ref other: %v %+v", err, ref)
	}
	c, _, err := gh.Git.GetCommit(ctx, "org", "bundle", pushed)
	if err != nil || c.GetMessage() != "edit c\n" || c.GetTree().GetSHA() != git(clone, "rev-parse", "HEAD^{tree}") {
		t.Fatalf("commit: %v %+v", err, c)
	}
	if got, ok := s.FileAt("org", "bundle", "other", "a/b/c.yaml"); !ok || got != "k: w\n" {
		t.Fatalf("a/b/c.yaml at other: %q", got)
	}
	// A token the API refuses cannot push.
	cmd := exec.Command("git", "push", strings.Replace(url, token, "wrong", 1), "cg:refs/heads/third")
	cmd.Dir, cmd.Env = clone, append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "HOME="+work)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("push with a wrong token: %s", out)
	}
}

// TestGitRefusesStateSavedBeforeGitNames: a repository loaded from state saved
// when the store's names were not git's is not served over git (its branches name
// commits no git object has), with a 500 that says why rather than a broken clone.
func TestGitRefusesStateSavedBeforeGitNames(t *testing.T) {
	s, _, _ := setup(t)
	if ok, err := s.Load("testdata/state-before-gitstore.json"); !ok || err != nil {
		t.Fatalf("load: %v %v", ok, err)
	}
	resp, err := http.Get(s.CloneURL("org", "bundle") + "/info/refs?service=git-upload-pack")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "not named by git's hash") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}
