package forge

import "context"

// What a writer of Renovate's pull requests (activities/nudgewrite) needs beyond
// Forge: the title, labels by name and the forge's own auto-merge. Optional
// interfaces (callers type-assert them), so a client without them still is a Forge.

// TitleEditor is optional: it sets a pull request's title and, when body is not
// nil, its description, in one write.
type TitleEditor interface {
	EditTitle(ctx context.Context, number int, title string, body *string) (PR, error)
}

// Labeler is optional: it adds and removes labels, by name, on a pull request. A
// forge that applies only the labels a repository defines (Forgejo, Gitea) skips
// the others, as Renovate does there; GitHub and GitLab create them. Removing a
// label the PR does not carry is no error.
type Labeler interface {
	AddLabels(ctx context.Context, number int, names []string) error
	RemoveLabels(ctx context.Context, number int, names []string) error
}

// AutoMerger is optional: it asks the forge to merge the pull request itself
// once its checks pass (Renovate's platformAutomerge), with the forge's merge
// method Renovate would choose. enabled is false when the forge (or its version)
// has no such merge; Renovate then enables none either.
type AutoMerger interface {
	EnableAutoMerge(ctx context.Context, pr PR) (enabled bool, err error)
}
