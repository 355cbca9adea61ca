// Package changegroupprapi is the contract of the ChangeGroup's pull request
// activities (activities/changegrouppr): their registered names, requests and
// results. The ChangeGroup workflow calls by these names without linking the
// activities or their forge clients.
package changegroupprapi

import "time"

// Repo identifies the nudged component's repository and the branch PRs target.
type Repo struct {
	// Provider is "github", "gitlab" or "forgejo" ("gitea" is an alias).
	Provider string `json:"provider"`
	// URL is the clone URL as written in the Component (https://github.com/org/repo).
	URL string `json:"url"`
	// BaseBranch is the branch the PR targets; the repository's default when empty.
	BaseBranch string `json:"baseBranch,omitempty"`
	// Namespace is the Kubernetes namespace where the credentials Secret is looked up.
	Namespace string `json:"namespace"`
}

// Row is one nudging component in the PR's status table.
type Row struct {
	// Component is the nudging component's name.
	Component string `json:"component"`
	// Image is the image repository (without tag or digest) whose references are rewritten.
	Image string `json:"image"`
	// Current is the digest the component was at when the group started (sha256:...).
	Current string `json:"current,omitempty"`
	// New is the newest collected digest; empty while waiting.
	New string `json:"new,omitempty"`
	// State is Waiting, Ready or Dropped.
	State string `json:"state"`
	// UpdatedAt is when New last changed.
	UpdatedAt time.Time `json:"updatedAt,omitempty"`
}

// Mode says what a sync must leave behind.
type Mode string

const (
	// ModeHold: a draft PR whose commits and description carry `[skip ci]`.
	ModeHold Mode = "Hold"
	// ModeRelease: the marker removed from the description, draft lifted, then one
	// final commit without the marker, so CI triggers exactly once.
	ModeRelease Mode = "Release"
)

// SyncRequest is the desired state of the PR.
type SyncRequest struct {
	Repo Repo `json:"repo"`
	// Branch is the PR's head branch (deterministic per ChangeGroup).
	Branch string `json:"branch"`
	// Namespace, ChangeGroup and NudgedComponent name the group in titles and text.
	Namespace       string `json:"namespace"`
	ChangeGroup     string `json:"changeGroup"`
	NudgedComponent string `json:"nudgedComponent"`
	// ChangeGroupURL links the PR to the group (Konflux UI or kubectl hint).
	ChangeGroupURL string `json:"changeGroupURL,omitempty"`
	// Rows are every component; rows with State Ready and New set are applied to files.
	Rows []Row `json:"rows"`
	// FileMatch are the regexes selecting files to edit (Renovate's fileMatch semantics).
	FileMatch []string `json:"fileMatch"`
	Mode      Mode     `json:"mode"`
	// Overwrite discards human edits (the rebase checkbox or override was used).
	Overwrite bool `json:"overwrite,omitempty"`
	// DiscardHead, with Overwrite, is the branch head the rebase was requested on:
	// only the commits up to it may be discarded. A branch that moved on since (a
	// person pushed again) is not overwritten: the sync reports the new human edit
	// and unticks the rebase checkbox. Empty: whatever the branch holds (requests of
	// groups started before this field).
	DiscardHead string `json:"discardHead,omitempty"`
	// Known is what the workflow learned from earlier results; zero on the first call.
	Known PRRef `json:"known"`
}

// PRRef identifies a PR once it exists.
type PRRef struct {
	Number int    `json:"number,omitempty"`
	URL    string `json:"url,omitempty"`
	// NodeID is GitHub's GraphQL ID (for draft toggling).
	NodeID string `json:"nodeID,omitempty"`
	// LastPushedSHA is the head commit nudgeflow pushed last.
	LastPushedSHA string `json:"lastPushedSHA,omitempty"`
}

// PRState is the forge's state of a PR.
type PRState string

const (
	PRNone   PRState = ""
	PROpen   PRState = "Open"
	PRClosed PRState = "Closed"
	PRMerged PRState = "Merged"
)

// Observed is what the forge says after a sync or an observation.
type Observed struct {
	PR    PRRef   `json:"pr"`
	State PRState `json:"state"`
	Draft bool    `json:"draft"`
	// HeadSHA is the branch head now.
	HeadSHA string `json:"headSHA,omitempty"`
	// HeadHasSkipMarker reports whether the head commit message holds a PaC skip marker.
	HeadHasSkipMarker bool `json:"headHasSkipMarker"`
	// HumanEdits is set when a commit on the branch is not the bot's, or the
	// description was edited outside the managed section; automated pushes stop.
	HumanEdits      bool   `json:"humanEdits,omitempty"`
	HumanEditReason string `json:"humanEditReason,omitempty"`
	// RebaseRequested and ReleaseRequested are the PR's control checkboxes.
	RebaseRequested  bool `json:"rebaseRequested,omitempty"`
	ReleaseRequested bool `json:"releaseRequested,omitempty"`
	// MarkedReadyByHuman: a person lifted the draft (or removed the marker) while held.
	MarkedReadyByHuman bool `json:"markedReadyByHuman,omitempty"`
	// Writes counts forge write calls this activity made (for the e2e report).
	Writes int `json:"writes"`
	// References says, for each row not dropped, which repositories its image is
	// referenced by in the matched files (built and distribution); a row with none
	// is referenced nowhere. Nil when this call did not search the files.
	References []RowReferences `json:"references,omitempty"`
}

// RowReferences is where one row's image is referenced.
type RowReferences struct {
	Component    string   `json:"component"`
	Repositories []string `json:"repositories,omitempty"`
}

// ObserveRequest reads a PR without writing.
type ObserveRequest struct {
	Repo   Repo   `json:"repo"`
	Branch string `json:"branch"`
	Known  PRRef  `json:"known"`
}

// CloseRequest closes the PR (the group was cancelled) with an explanatory comment.
type CloseRequest struct {
	Repo    Repo   `json:"repo"`
	Known   PRRef  `json:"known"`
	Comment string `json:"comment"`
}

// Activity names, registered with these exact names so histories stay replayable.
const (
	SyncActivity    = "SyncPullRequest"
	ObserveActivity = "ObservePullRequest"
	CloseActivity   = "ClosePullRequest"
	CIActivity      = "ReadPullRequestCI"
	CommentActivity = "CommentOnPullRequest"
)
