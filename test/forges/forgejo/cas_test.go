// Package forgejo_test runs the Forgejo forge client against a real Gitea server.
package forgejo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/forge/forgejo"
	"github.com/nudgeflow/nudgeflow/test/localenv"
)

// beforeBranchMove runs fn once, right before the client's next request that can
// move the PR branch (Gitea's branch update, or the contents API's force-move):
// a person's push after nudgeflow's last read and before its write.
type beforeBranchMove struct {
	base   http.RoundTripper
	branch string
	once   sync.Once
	fn     func()
}

func (b *beforeBranchMove) RoundTrip(r *http.Request) (*http.Response, error) {
	moves := r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/branches/"+b.branch)
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/contents") && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var in struct {
			NewBranch string `json:"new_branch"`
		}
		_ = json.Unmarshal(body, &in)
		moves = in.NewBranch == b.branch // a write straight to the PR branch
	}
	if moves {
		b.once.Do(b.fn)
	}
	return b.base.RoundTrip(r)
}

// TestPersonsCommitBetweenReadAndWriteIsNeverOverwrittenOnGitea runs against the
// real Gitea server (GITEA): the person's push lands between Push's read and its
// write; the write is Gitea's branch update with old_commit_id, a compare-and-swap,
// so it is refused (ErrHeadMoved) and the person's commit stays the head.
func TestPersonsCommitBetweenReadAndWriteIsNeverOverwrittenOnGitea(t *testing.T) {
	if _, err := localenv.Gitea(); err != nil {
		t.Fatalf("the real Gitea server is needed (GITEA=$(hack/tools.sh path gitea)): %v", err)
	}
	ctx := context.Background()
	srv, err := localenv.StartForgejo(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	if err := srv.CreateRepo("casorg", "bundle", "main", map[string]string{"Dockerfile": "FROM quay.io/org/a@sha256:old\n"}); err != nil {
		t.Fatal(err)
	}
	repo, err := forge.ParseRepoURL(srv.RepoURL("casorg", "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	const branch = "konflux/changegroup/g"
	inject := &beforeBranchMove{base: http.DefaultTransport, branch: branch}
	c, err := forgejo.New(forge.ClientOptions{Repo: repo, Token: srv.BotToken, Transport: inject,
		Bot: forge.Signature{Name: localenv.ForgejoBot, Email: srv.BotEmail}})
	if err != nil {
		t.Fatal(err)
	}
	base, ok, err := c.BranchHead(ctx, "main")
	if err != nil || !ok {
		t.Fatalf("main: %v %v", ok, err)
	}
	inject.once.Do(func() {}) // the branch's creation is not the race under test
	first, err := c.Push(ctx, forge.Push{Branch: branch, Parent: base, Base: "main",
		Files: map[string][]byte{"Dockerfile": []byte("FROM quay.io/org/a@sha256:new1\n")}, Message: "one [skip ci]"})
	if err != nil {
		t.Fatal(err)
	}
	var person string
	inject.once = sync.Once{}
	inject.fn = func() {
		var err error
		person, err = srv.HumanCommit("casorg", "bundle", branch, map[string]string{"NOTES.md": "mine\n"}, "docs: mine")
		if err != nil {
			t.Errorf("person's push: %v", err)
		}
	}
	_, err = c.Push(ctx, forge.Push{Branch: branch, Parent: base, Base: "main",
		Files:   map[string][]byte{"Dockerfile": []byte("FROM quay.io/org/a@sha256:new2\n")},
		Message: "two [skip ci]", Exists: true, ExpectedHead: first.SHA})
	if person == "" {
		t.Fatal("the person's push was not injected between the read and the write")
	}
	if !errors.Is(err, forge.ErrHeadMoved) {
		t.Fatalf("the push is refused with ErrHeadMoved, got %v", err)
	}
	head, ok := srv.Head("casorg", "bundle", branch)
	if !ok || head.SHA != person {
		t.Fatalf("overwritten: the branch must still be at the person's commit %s, got %+v", person, head)
	}
}
