// Package github_test runs the GitHub forge client against the GitHub emulator.
package github_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nudgeflow/nudgeflow/internal/forge"
	ghforge "github.com/nudgeflow/nudgeflow/internal/forge/github"
	emu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
)

// TestPersonsCommitBetweenReadAndWriteIsNeverOverwritten: a person pushes to the
// PR branch after nudgeflow's last read and before its branch update (the
// emulator runs the push right before the request that moves the branch); the
// update is a compare-and-swap on the head nudgeflow read, so it is refused
// (ErrHeadMoved) and the person's commit stays the head.
func TestPersonsCommitBetweenReadAndWriteIsNeverOverwritten(t *testing.T) {
	ctx := context.Background()
	srv := emu.New()
	t.Cleanup(srv.Close)
	srv.CreateRepo("org", "bundle", "main", map[string]string{"Dockerfile": "FROM quay.io/org/a@sha256:old\n"})
	srv.AddToken("tok", emu.User{Login: "nudgeflow-bot", Name: "nudgeflow", Email: "bot@example.com"})
	repo, err := forge.ParseRepoURL(srv.URL() + "/org/bundle")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ghforge.New(forge.ClientOptions{Repo: repo, Token: "tok", Bot: forge.Signature{Name: "nudgeflow", Email: "bot@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	base, ok, err := c.BranchHead(ctx, "main")
	if err != nil || !ok {
		t.Fatalf("main: %v %v", ok, err)
	}
	const branch = "konflux/changegroup/g"
	files := map[string][]byte{"Dockerfile": []byte("FROM quay.io/org/a@sha256:new1\n")}
	first, err := c.Push(ctx, forge.Push{Branch: branch, Parent: base, Files: files, Message: "one [skip ci]"})
	if err != nil {
		t.Fatal(err)
	}
	read, ok, err := c.BranchHead(ctx, branch)
	if err != nil || !ok || read.SHA != first.SHA {
		t.Fatalf("the branch is at nudgeflow's commit: %v %v %+v", ok, err, read)
	}
	var person string
	srv.BeforeNextBranchMove(func() {
		var err error
		person, err = srv.HumanCommit("org", "bundle", branch, emu.User{Login: "alice", Name: "Alice", Email: "alice@example.com"},
			map[string]string{"NOTES.md": "mine\n"}, "docs: mine")
		if err != nil {
			t.Errorf("person's push: %v", err)
		}
	})
	_, err = c.Push(ctx, forge.Push{Branch: branch, Parent: base, Files: map[string][]byte{"Dockerfile": []byte("FROM quay.io/org/a@sha256:new2\n")},
		Message: "two [skip ci]", Exists: true, ExpectedHead: read.SHA})
	if person == "" {
		t.Fatal("the person's push was not injected between the read and the write")
	}
	if !errors.Is(err, forge.ErrHeadMoved) {
		t.Fatalf("the push is refused with ErrHeadMoved, got %v", err)
	}
	head, _ := srv.Head("org", "bundle", branch)
	if head.SHA != person {
		t.Fatalf("overwritten: the branch must still be at the person's commit %s, got %s", person, head.SHA)
	}
}
