// Package renovate_test is the contract test of the Renovate PipelineRun: the run
// nudgeflow writes, run by test/plrunner with the real (pinned) Renovate against a
// real registry (test/ociregistry) and real git on each forge, must open the pull
// request build-service's Renovate would open. Each case runs on every forge that
// registered itself in forgeStarters, and prints one `renovate-e2e forge=<name> ...`
// line per forge and case.
package renovate_test

import "testing"

// forgeUnderTest is one forge the contract runs against: a server Renovate clones
// from and pushes to over git's smart HTTP, and whose API Renovate and the test read.
type forgeUnderTest interface {
	// Name is the forge in the renovate-e2e lines: github, gitlab or forgejo.
	Name() string
	// Platform and Endpoint are what the Renovate config names for this forge.
	Platform() string
	Endpoint() string
	// Username, GitAuthor and Token are the nudging bot's, as the config and the
	// Renovate run's Secret carry them.
	Username() string
	GitAuthor() string
	Token() string
	// CreateRepo creates owner/name with files on branch, the bot allowed to push.
	CreateRepo(t *testing.T, owner, name, branch string, files map[string]string)
	// CreateLabel creates a label on owner/name (Renovate applies only labels that
	// exist, as a Konflux tenant creates them).
	CreateLabel(t *testing.T, owner, name, label string)
	// PRs lists the open pull (merge) requests of owner/name.
	PRs(t *testing.T, owner, name string) []pullRequest
	// FileAt reads path at ref (a branch or commit SHA) of owner/name.
	FileAt(t *testing.T, owner, name, ref, path string) (string, bool)
}

// pullRequest is what the contract reads of a pull or merge request.
type pullRequest struct {
	Number  int
	Title   string
	Body    string
	HeadRef string
	HeadSHA string
	Labels  []string
}

// forgeStarters holds, by forge name, a function that starts that forge for a test
// (stopping it in t.Cleanup). Each forge's file adds itself in an init function, so
// forges are added without touching the cases.
var forgeStarters = map[string]func(t *testing.T) forgeUnderTest{}
