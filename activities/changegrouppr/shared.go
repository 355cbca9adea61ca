package changegrouppr

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
)

// What other features' activities (PR groups, ADR 29) reuse of this package: the
// forge connection with its credential lookup, the digest rewrite of a tree, and
// the bot test. Kept in this file so the ChangeGroup code stays as it is.

// Connect returns a forge client for the repository (credentials read from the
// repository namespace's Secrets or the GitHub App) and a function that removes
// every credential value from an error before it leaves an activity. The
// namespace must own the repository: a refusal is a non-retryable
// RepositoryNotOwned, with a Warning Event on the object on refers to (nil: none).
func (a *Activities) Connect(ctx context.Context, r changegroupprapi.Repo, on *corev1.ObjectReference) (forge.Forge, func(error) error, error) {
	f, secrets, err := a.connect(ctx, r, on)
	clean := func(err error) error { return redact(err, secrets) }
	if err != nil {
		return nil, clean, clean(err)
	}
	return f, clean, nil
}

// Identity chooses the commit identity of a connection from the basic-auth
// credentials it found (provider as forge names it); a zero Signature keeps the
// configured bot's rule.
type Identity func(provider string, repo forge.Repo, ba forge.BasicAuth) forge.Signature

// ConnectAs is Connect committing as id chooses for basic-auth credentials (a
// GitHub App's token commits as its App either way): the direct nudge writer
// commits as Renovate's gitAuthor, so that either writer continues the other's
// branch.
func (a *Activities) ConnectAs(ctx context.Context, r changegroupprapi.Repo, on *corev1.ObjectReference, id Identity) (forge.Forge, func(error) error, error) {
	b := *a
	b.identity = id
	return b.Connect(ctx, r, on)
}

// Rewrite computes the files of base's tree whose digest references change when
// every ready row's image is set to its New digest (its distribution repositories
// too), under the fileMatch patterns. changes holds the new contents; tree is the
// whole desired tree (path -> blob SHA), for comparing with a commit's tree.
func (a *Activities) Rewrite(ctx context.Context, f forge.Forge, namespace string, rows []changegroupprapi.Row, fileMatch []string, base forge.Commit) (changes map[string][]byte, tree map[string]string, err error) {
	r, err := a.RewriteFound(ctx, f, namespace, rows, fileMatch, base)
	return r.Changes, r.Tree, err
}

// Rewritten is a rewrite's result in full: Changes and Tree as Rewrite returns
// them; Found names, per row's component, which of its repositories (the built
// one, its distribution repositories) the matched files reference at all (none:
// the image is not referenced there); Before holds the changed files' contents
// before the rewrite.
type Rewritten struct {
	Changes map[string][]byte
	Tree    map[string]string
	Found   map[string][]string
	Before  map[string]string
}

// RewriteFound is Rewrite with everything it found (Rewritten).
func (a *Activities) RewriteFound(ctx context.Context, f forge.Forge, namespace string, rows []changegroupprapi.Row, fileMatch []string, base forge.Commit) (Rewritten, error) {
	d, err := a.desiredTree(ctx, f, changegroupprapi.SyncRequest{Repo: changegroupprapi.Repo{Namespace: namespace}, Rows: rows, FileMatch: fileMatch}, base)
	if err != nil {
		return Rewritten{}, err
	}
	return Rewritten{Changes: d.changes, Tree: d.files, Found: d.refs, Before: d.before}, nil
}

// TreeHolds reports whether commit c's tree is exactly tree (path -> blob SHA).
func TreeHolds(ctx context.Context, f forge.Forge, c forge.Commit, tree map[string]string) (bool, error) {
	return holds(ctx, f, c, desired{files: tree})
}

// IsBot reports whether the bot of f authored and committed c.
func IsBot(f forge.Forge, c forge.Commit) bool { return isBot(f, c) }
