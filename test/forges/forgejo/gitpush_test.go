package forgejo_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/forge/forgejo"
	"github.com/nudgeflow/nudgeflow/test/localenv"
)

// beforeGitPush runs fn once, right before the client's next push over git.
type beforeGitPush struct {
	base     http.RoundTripper
	once     sync.Once
	fn       func()
	refuse   bool // answer 404 to a push over git, as a server without git over HTTP
	requests []string
}

func (b *beforeGitPush) RoundTrip(r *http.Request) (*http.Response, error) {
	b.requests = append(b.requests, r.Method+" "+r.URL.Path)
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
		if b.refuse {
			return &http.Response{StatusCode: http.StatusNotFound, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
		}
		if b.fn != nil {
			b.once.Do(b.fn)
		}
	}
	return b.base.RoundTrip(r)
}

// TestGitPushOnGitea runs the push over git (forge.Push.GitProtocol, the direct
// nudge writer's) against the real Gitea server: it creates the branch, moves it
// as one request, never overwrites a person's push that lands right before it
// (git's compare-and-swap on the old value: ErrHeadMoved, the person's commit
// stays the head), never takes over a branch someone created meanwhile, and falls
// back to the API's writes where the server takes no push over HTTP.
func TestGitPushOnGitea(t *testing.T) {
	if _, err := localenv.Gitea(); err != nil {
		t.Fatalf("the real Gitea server is needed (GITEA=$(hack/tools.sh path gitea)): %v", err)
	}
	ctx := context.Background()
	srv, err := localenv.StartForgejo(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	if err := srv.CreateRepo("gitorg", "bundle", "main", map[string]string{
		"Dockerfile": "FROM quay.io/org/a@sha256:old\n", "deploy/csv.yaml": "image: quay.io/org/a@sha256:old\n"}); err != nil {
		t.Fatal(err)
	}
	repo, err := forge.ParseRepoURL(srv.RepoURL("gitorg", "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	tr := &beforeGitPush{base: http.DefaultTransport}
	bot := forge.Signature{Name: localenv.ForgejoBot, Email: srv.BotEmail}
	c, err := forgejo.New(forge.ClientOptions{Repo: repo, Token: srv.BotToken, Transport: tr, Bot: bot})
	if err != nil {
		t.Fatal(err)
	}
	base, ok, err := c.BranchHead(ctx, "main")
	if err != nil || !ok {
		t.Fatalf("main: %v %v", ok, err)
	}
	const branch = "konflux/component-updates/x"
	push := func(files map[string]string, exists bool, expected string) (forge.Commit, error) {
		fs := map[string][]byte{}
		for p, c := range files {
			fs[p] = []byte(c)
		}
		return c.Push(ctx, forge.Push{Branch: branch, Parent: base, Base: "main", Files: fs, Message: "chore(deps): update\n\nSigned-off-by: x",
			Exists: exists, ExpectedHead: expected, GitProtocol: true})
	}

	// Created: one request, the files and the identity as pushed.
	tr.requests = nil
	first, err := push(map[string]string{"Dockerfile": "FROM quay.io/org/a@sha256:new1\n", "deploy/new/csv.yaml": "x\n"}, false, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.requests) != 2 || !strings.HasSuffix(tr.requests[1], ".git/git-receive-pack") {
		t.Fatalf("a created branch is the tree's listing and one push, got %v", tr.requests)
	}
	head, ok := srv.Head("gitorg", "bundle", branch)
	if !ok || head.SHA != first.SHA || len(head.Parents) != 1 || head.Parents[0] != base.SHA ||
		head.AuthorEmail != bot.Email || head.CommitterEmail != bot.Email || head.Message != first.Message {
		t.Fatalf("head %+v, pushed %+v", head, first)
	}
	for path, want := range map[string]string{"Dockerfile": "FROM quay.io/org/a@sha256:new1\n", "deploy/new/csv.yaml": "x\n",
		"deploy/csv.yaml": "image: quay.io/org/a@sha256:old\n"} {
		if got, ok := srv.FileAt("gitorg", "bundle", branch, path); !ok || got != want {
			t.Fatalf("%s: %q %v", path, got, ok)
		}
	}

	// Moved from the head it was read at: one request.
	tr.requests = nil
	second, err := push(map[string]string{"Dockerfile": "FROM quay.io/org/a@sha256:new2\n"}, true, first.SHA)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.requests) != 1 {
		t.Fatalf("an update is one push (the listing is kept), got %v", tr.requests)
	}
	if head, _ := srv.Head("gitorg", "bundle", branch); head.SHA != second.SHA {
		t.Fatalf("head %s, pushed %s", head.SHA, second.SHA)
	}

	// A person's push right before the write: refused, the person's commit stays.
	var person string
	tr.fn = func() {
		var err error
		if person, err = srv.HumanCommit("gitorg", "bundle", branch, map[string]string{"NOTES.md": "mine\n"}, "docs: mine"); err != nil {
			t.Errorf("person's push: %v", err)
		}
	}
	_, err = push(map[string]string{"Dockerfile": "FROM quay.io/org/a@sha256:new3\n"}, true, second.SHA)
	if person == "" {
		t.Fatal("the person's push was not injected before the write")
	}
	if !errors.Is(err, forge.ErrHeadMoved) {
		t.Fatalf("the push is refused with ErrHeadMoved, got %v", err)
	}
	if head, _ := srv.Head("gitorg", "bundle", branch); head.SHA != person {
		t.Fatalf("overwritten: the branch must still be at the person's commit %s, got %s", person, head.SHA)
	}

	// Creating a branch that exists meanwhile: refused, not taken over.
	if _, err := push(map[string]string{"Dockerfile": "FROM quay.io/org/a@sha256:new4\n"}, false, ""); !errors.Is(err, forge.ErrHeadMoved) {
		t.Fatalf("creating an existing branch is ErrHeadMoved, got %v", err)
	}
	if head, _ := srv.Head("gitorg", "bundle", branch); head.SHA != person {
		t.Fatalf("taken over: %s", head.SHA)
	}

	// A server that takes no push over HTTP: the API's writes, the same result.
	tr.refuse = true
	tr.requests = nil
	third, err := push(map[string]string{"Dockerfile": "FROM quay.io/org/a@sha256:new5\n"}, true, person)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := srv.FileAt("gitorg", "bundle", branch, "Dockerfile"); got != "FROM quay.io/org/a@sha256:new5\n" {
		t.Fatalf("Dockerfile %q", got)
	}
	if head, _ := srv.Head("gitorg", "bundle", branch); head.SHA != third.SHA {
		t.Fatalf("head %s, pushed %s (%v)", head.SHA, third.SHA, tr.requests)
	}
	if !strings.Contains(strings.Join(tr.requests, " "), "/contents") {
		t.Fatalf("the fallback writes through the contents API: %v", tr.requests)
	}
}
