// Package forge is nudgeflow's Git forge client library (as Kargo's pkg/gitprovider):
// one small interface that GitHub, GitLab and Forgejo/Gitea (packages forge/github,
// forge/gitlab, forge/forgejo) implement, used by the activities, the bridge's forge
// webhooks and the CLI alike. It sits on the library floor (internal/), below the
// activities, and knows no workflow, activity or Kubernetes reconciler. Every
// operation works through the forge's API: no clone.
package forge

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Repo names a repository on a forge.
type Repo struct {
	// Owner is the owner or, on GitLab, the whole namespace (group/subgroup).
	// Scheme is https, or http for a loopback test forge.
	Scheme string
	// Host is the forge's host (with port when not the default).
	Host  string
	Owner string
	Name  string
}

// FullName is owner/name.
func (r Repo) FullName() string { return r.Owner + "/" + r.Name }

// ParseRepoURL reads a clone URL as written in a Component (https://host/org/repo(.git)).
// Plain http is accepted only for loopback hosts (test forges), so tokens never cross
// a network unencrypted.
func ParseRepoURL(raw string) (Repo, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return Repo{}, fmt.Errorf("repository URL %q: %w", raw, err)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if h := u.Hostname(); h != "localhost" && h != "127.0.0.1" && h != "::1" {
			return Repo{}, fmt.Errorf("repository URL %q: plain http is allowed only for loopback hosts", raw)
		}
	default:
		return Repo{}, fmt.Errorf("repository URL %q: scheme must be https", raw)
	}
	parts := strings.Split(strings.Trim(strings.TrimSuffix(u.Path, ".git"), "/"), "/")
	// "." and ".." would name another repository once a client resolves the path
	// (internal/ownership checks the repository as written).
	if u.Host == "" || len(parts) < 2 || slices.Contains(parts, "") || slices.Contains(parts, "-") ||
		slices.Contains(parts, ".") || slices.Contains(parts, "..") {
		return Repo{}, fmt.Errorf("repository URL %q: want <scheme>://<host>/<owner>/<repo>", raw)
	}
	// GitLab's subgroups: the owner is the whole namespace (group/subgroup).
	last := len(parts) - 1
	return Repo{Scheme: u.Scheme, Host: u.Host, Owner: strings.Join(parts[:last], "/"), Name: parts[last]}, nil
}

// Provider names, as Konflux's git-provider annotation writes them.
const (
	ProviderGitHub  = "github"
	ProviderGitLab  = "gitlab"
	ProviderForgejo = "forgejo"
)

// NormalizeProvider lower-cases a provider name and maps aliases: "gitea" is
// Forgejo (build-service's rule), "" is GitHub (requests from before providers).
func NormalizeProvider(p string) string {
	p = strings.ToLower(strings.TrimSpace(p))
	switch p {
	case "":
		return ProviderGitHub
	case "gitea":
		return ProviderForgejo
	}
	return p
}

// ProviderOf is build-service's rule: the Component's git-provider annotation
// wins, else the URL's host names the forge (github, gitlab, forgejo, gitea or
// codeberg in it); "" when neither tells.
func ProviderOf(annotation, host string) string {
	if strings.TrimSpace(annotation) != "" {
		return NormalizeProvider(annotation)
	}
	host = strings.ToLower(host)
	for _, p := range []string{"github", "gitlab", "forgejo", "gitea", "codeberg"} {
		if strings.Contains(host, p) {
			if p == "codeberg" {
				return ProviderForgejo
			}
			return NormalizeProvider(p)
		}
	}
	return ""
}

// ProviderOrGitHub is the rule for the pull requests nudgeflow opens itself
// (ChangeGroups, PR groups): ProviderOf, else GitHub, because GitHub Enterprise
// hosts are named anything. Renovate runs of builds a ChangeGroup hands back take
// it too, so they land on the forge the group's pull request was on.
func ProviderOrGitHub(annotation, host string) string {
	if p := ProviderOf(annotation, host); p != "" {
		return p
	}
	return ProviderGitHub
}

// Signature is a commit's author or committer.
type Signature struct {
	Name  string
	Email string
}

// Commit is a commit's metadata.
type Commit struct {
	SHA string
	// Tree is what Files reads: the tree object on GitHub, the commit itself on
	// forges whose tree API reads by ref (GitLab).
	Tree      string
	Parents   []string
	Message   string
	Author    Signature
	Committer Signature
}

// File is a blob in a recursive tree listing.
type File struct {
	Path string
	Mode string
	SHA  string
}

// PRState is open or closed as the forge says; Merged is separate.
type PR struct {
	Number  int
	NodeID  string
	URL     string
	Title   string
	Body    string
	Open    bool
	Merged  bool
	Draft   bool
	Head    string
	HeadSHA string
	Base    string
	// MergeCommitSHA is the commit a merge put on the base branch ("" when unknown).
	MergeCommitSHA string
	// Author is the login of the account that opened the PR (whom Pipelines as
	// Code's ACL checks).
	Author string
	// Labels are the names of the PR's labels.
	Labels []string
}

// NewPR is a pull request to open.
type NewPR struct {
	Title, Head, Base, Body string
	Draft                   bool
	// Labels are label names to open it with (as Labeler adds them; none: none).
	Labels []string
}

// Comment is an issue comment on a PR.
type Comment struct {
	ID   int64
	Body string
}

// Push is one commit to push: the parent's tree with Files' contents replaced.
type Push struct {
	Branch string
	Parent Commit
	// Base is the branch whose head Parent is, for forges whose commit API starts from
	// a branch rather than a commit (Forgejo); empty means the default branch.
	Base string
	// Files are the changed files (path -> content, UTF-8 text).
	Files map[string][]byte
	// New names the paths of Files that Parent's tree does not hold (forges whose
	// commit API tells creating from updating, GitLab, need it).
	New []string
	// Tree, when set, is an existing tree that already holds the result: forges
	// that write trees separately (GitHub) reuse it instead of writing one.
	Tree    string
	Message string
	// Exists says the branch exists; then ExpectedHead is the head it must still be at.
	Exists       bool
	ExpectedHead string
}

// ChangedFile is one file a pull request changes (against its merge base).
type ChangedFile struct {
	Path string
	// PreviousPath is the path before a rename.
	PreviousPath string
	// Status is ChangeAdded, ChangeRemoved, ChangeModified or ChangeRenamed
	// (GitHub's words; other values GitHub sends pass through).
	Status string
}

// Change statuses of a ChangedFile.
const (
	ChangeAdded    = "added"
	ChangeRemoved  = "removed"
	ChangeModified = "modified"
	ChangeRenamed  = "renamed"
)

// PRFilesLister is optional (callers type-assert it; a forge client without it
// still is a Forge): the files a pull request changes, every page.
type PRFilesLister interface {
	PRFiles(ctx context.Context, number int) ([]ChangedFile, error)
}

// BranchPRLister is optional: the pull requests whose head is branch in the
// repository itself, open, closed and merged, newest first, at most the first
// page of them (max), for a caller that asks whether a change reached one.
type BranchPRLister interface {
	BranchPRs(ctx context.Context, branch string, max int) ([]PR, error)
}

// BotCommitter is optional: a forge that records its own identity for the token's
// user as the committer of the commits it writes through its API (GitLab: the user's
// commit email), whatever author the client names. A commit whose author is Bot()
// and whose committer is BotCommitter() is the bot's own.
type BotCommitter interface {
	BotCommitter() Signature
}

// CommitWriter is optional: it makes a commit on parent (the client's bot as
// author and committer) without moving any branch, so a caller can stack two
// commits and move the branch once (one CI-triggering event, not two).
type CommitWriter interface {
	WriteCommit(ctx context.Context, parent Commit, files map[string][]byte, message string) (Commit, error)
}

// ErrHeadMoved: the branch changed between the caller's read and its push.
var ErrHeadMoved = errors.New("the branch moved while nudgeflow was updating it")

// ErrDraftsUnsupported is returned by CreatePR when the repository does not allow
// draft pull requests (GitHub's plans without drafts); the caller opens a normal one.
var ErrDraftsUnsupported = errors.New("draft pull requests are not supported in this repository")

// Forge is the API the pull request activities use. Implementations classify errors
// (temporal ApplicationErrors: rate limits retryable with NextRetryDelay, other 4xx
// non-retryable) and never put a credential in an error.
type Forge interface {
	// DefaultBranch is the repository's default branch.
	DefaultBranch(ctx context.Context) (string, error)
	// BranchHead is the branch's head commit; ok is false when the branch does not exist.
	BranchHead(ctx context.Context, branch string) (c Commit, ok bool, err error)
	// Commit reads one commit.
	Commit(ctx context.Context, sha string) (Commit, error)
	// Files lists every blob of a tree, recursively.
	Files(ctx context.Context, tree string) ([]File, error)
	// Blob reads a blob's content.
	Blob(ctx context.Context, sha string) ([]byte, error)
	// Push makes one commit on the parent (author and committer: the client's bot)
	// and points the branch at it, creating it or force-moving it. It returns
	// ErrHeadMoved, writing nothing to the branch, when the branch is no longer at
	// ExpectedHead: a commit pushed meanwhile is never overwritten.
	Push(ctx context.Context, p Push) (Commit, error)
	// FindPR returns the PR by number, or else the newest open PR whose head is branch.
	FindPR(ctx context.Context, branch string, number int) (pr PR, ok bool, err error)
	CreatePR(ctx context.Context, pr NewPR) (PR, error)
	// EditPR changes the body (when body is not nil) and the state (open when open is
	// not nil and true, closed when false).
	EditPR(ctx context.Context, number int, body *string, open *bool) (PR, error)
	// MarkReady lifts the draft. With body, it first sets the description, in the
	// same request where the forge allows (GitHub: one GraphQL document whose two
	// mutations run in order), so a release costs one write, not two.
	MarkReady(ctx context.Context, pr PR, body *string) error
	Comments(ctx context.Context, number int) ([]Comment, error)
	CreateComment(ctx context.Context, number int, body string) error
	// CIReports lists what CI systems reported on a commit: check runs and the
	// newest commit status of each context (and, on GitLab, pipelines of GitLab
	// CI's own), every page. ClassifyCI reads them.
	CIReports(ctx context.Context, sha string) ([]CIReport, error)
	// Bot is the identity this client commits as.
	Bot() Signature
	// Writes counts the write calls made so far.
	Writes() int
}
