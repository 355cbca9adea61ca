// Package landingforge starts a forge a nudge can land on — the GitHub emulator,
// the GitLab emulator (both serving real git, test/forgeemu) or a real Gitea
// (the API Forgejo shares) — and reads back its pull requests. The Renovate
// contract test (test/nudges/renovate) and the landing tests (test/nudges,
// test/changegroup) run the pinned Renovate against each of them.
package landingforge

import (
	"fmt"
	"testing"
)

// Forge is one forge a Renovate run lands a nudge on: a server Renovate clones
// from and pushes to over git's smart HTTP, and whose API Renovate and the test
// read. Its Stop is registered with the test that started it.
type Forge interface {
	// Name is the forge in test names and the renovate-e2e lines: github, gitlab
	// or forgejo.
	Name() string
	// Platform and Endpoint are what a Renovate config names for this forge.
	// Platform is also the Component's git-provider annotation a tenant sets
	// when the host (127.0.0.1 here) names no forge.
	Platform() string
	Endpoint() string
	// Username, GitAuthor and Token are the nudging bot's, as a config and the
	// Renovate run's Secret carry them; Username and Token are also what a
	// tenant's SCM Secret for the forge's host holds.
	Username() string
	GitAuthor() string
	Token() string
	// RepoURL is owner/name's web URL, what a Component's spec.source.git.url
	// holds; nudgeflow derives the Renovate platform's endpoint from it.
	RepoURL(owner, name string) string
	// CreateRepo creates owner/name with files on branch, the bot allowed to push.
	CreateRepo(t testing.TB, owner, name, branch string, files map[string]string)
	// CreateLabel creates a label on owner/name (Renovate applies only labels that
	// exist, as a Konflux tenant creates them).
	CreateLabel(t testing.TB, owner, name, label string)
	// PRs lists the open pull (merge) requests of owner/name.
	PRs(t testing.TB, owner, name string) []PullRequest
	// FileAt reads path at ref (a branch or commit SHA) of owner/name.
	FileAt(t testing.TB, owner, name, ref, path string) (string, bool)
}

// PullRequest is what the tests read of a pull or merge request.
type PullRequest struct {
	Number  int
	Title   string
	Body    string
	HeadRef string
	HeadSHA string
	Labels  []string
}

// Names are the forges Start knows, sorted, so tests and their lines come in a
// stable order.
func Names() []string { return []string{"forgejo", "github", "gitlab"} }

// Start starts the forge called name for t, stopped when t ends.
func Start(t testing.TB, name string) Forge {
	t.Helper()
	switch name {
	case "forgejo":
		return StartForgejo(t)
	case "github":
		return StartGitHub(t)
	case "gitlab":
		return StartGitLab(t)
	}
	panic(fmt.Sprintf("landingforge: no forge %q (known: %v)", name, Names()))
}

var (
	_ Forge = (*Forgejo)(nil)
	_ Forge = (*GitHub)(nil)
	_ Forge = (*GitLab)(nil)
)
