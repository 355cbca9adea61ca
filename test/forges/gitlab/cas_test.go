// Package gitlab_test runs the GitLab forge client against the GitLab emulator.
package gitlab_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/internal/forge"
	emu "github.com/nudgeflow/nudgeflow/test/forgeemu/gitlab"
)

// TestGitLabPushWindowIsOneRequest pins what GitLab allows: its
// API has no compare-and-swap on a branch head (the Commits API's force takes no
// expected head), so Push reads the head right before its one write. A person's
// push that lands before that read is never overwritten (ErrHeadMoved); one that
// lands inside the window, between the read and the Commits request, is — the
// emulator, like GitLab, has nothing to refuse it with. When GitLab gains a
// compare-and-swap, this test fails and the client and README change with it.
func TestGitLabPushWindowIsOneRequest(t *testing.T) {
	e, c := setup(t, map[string]string{"a.yaml": "image: x@sha256:1\n"})
	ctx := context.Background()
	base, _, err := c.BranchHead(ctx, "main")
	require.NoError(t, err)
	const branch = "konflux/changegroup/g"
	first, err := c.Push(ctx, forge.Push{Branch: branch, Parent: base, Files: map[string][]byte{"a.yaml": []byte("image: x@sha256:2\n")}, Message: "one"})
	require.NoError(t, err)
	alice := emu.User{Username: "alice", Name: "Alice", Email: "alice@example.com"}

	// Before the read: detected, nothing written.
	before, err := e.HumanCommit("group/sub", "bundle", branch, alice, map[string]string{"NOTES.md": "one\n"}, "docs: one")
	require.NoError(t, err)
	_, err = c.Push(ctx, forge.Push{Branch: branch, Parent: base, Files: map[string][]byte{"a.yaml": []byte("image: x@sha256:3\n")},
		Message: "two", Exists: true, ExpectedHead: first.SHA})
	require.ErrorIs(t, err, forge.ErrHeadMoved)
	head, _ := e.Head("group/sub", "bundle", branch)
	require.Equal(t, before, head.SHA, "a push before Push's read is never overwritten")

	// Inside the one-request window: GitLab offers nothing to refuse the write with.
	var inside string
	e.BeforeNextCommit(func() {
		inside, err = e.HumanCommit("group/sub", "bundle", branch, alice, map[string]string{"NOTES.md": "two\n"}, "docs: two")
	})
	_, perr := c.Push(ctx, forge.Push{Branch: branch, Parent: base, Files: map[string][]byte{"a.yaml": []byte("image: x@sha256:3\n")},
		Message: "three", Exists: true, ExpectedHead: before})
	require.NoError(t, err)
	require.NoError(t, perr)
	head, _ = e.Head("group/sub", "bundle", branch)
	require.NotEmpty(t, inside)
	require.NotEqual(t, inside, head.SHA, "no compare-and-swap on GitLab: a push inside the window is overwritten")
}
