// Package prgroupapi is the contract of the PR group activities
// (activities/prgroup): their registered names, requests and results. The
// PRGroup workflow calls by these names without linking the activities or their
// forge clients.
package prgroupapi

import (
	"time"

	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
)

// Activity names, registered with these exact names so histories stay replayable.
const (
	SyncActivity           = "PRGroupSync"
	ObserveOriginsActivity = "PRGroupObserveOrigins"
	FindPushBuildActivity  = "PRGroupFindPushBuild"
	CloseActivity          = "PRGroupClose"
)

// Row is one component's digest in the target PR.
type Row struct {
	Component string `json:"component"`
	Image     string `json:"image"`
	Digest    string `json:"digest"`
	// From is "pull-request" or "push".
	From string `json:"from"`
	// Origin is the originating PR's key (owner/repo#N).
	Origin string `json:"origin"`
	// Dropped rows are listed, not applied (their originating PR closed unmerged).
	Dropped bool `json:"dropped,omitempty"`
}

// Origin is an originating PR as the description lists it.
type Origin struct {
	Key   string `json:"key"`
	URL   string `json:"url,omitempty"`
	Title string `json:"title,omitempty"`
	State string `json:"state"`
}

// PRRef is the target PR.
type PRRef struct {
	Number int    `json:"number,omitempty"`
	URL    string `json:"url,omitempty"`
}

// SyncRequest is the desired target PR.
type SyncRequest struct {
	Namespace string `json:"namespace"`
	Group     string `json:"group"`
	// Target is the nudged component; its Component names the repository and base.
	Target string `json:"target"`
	Branch string `json:"branch"`
	Rows   []Row  `json:"rows"`
	// Origins are every originating PR of the group.
	Origins []Origin `json:"origins"`
	// Draft keeps the PR a draft; false lifts the draft.
	Draft bool `json:"draft"`
	// Notes are shown in the description (what nudgeflow could not do, and why).
	Notes     []string `json:"notes,omitempty"`
	FileMatch []string `json:"fileMatch,omitempty"`
	// FollowUp: the PR that carried the group was merged out of order; this one
	// carries the push builds' digests.
	FollowUp bool `json:"followUp,omitempty"`
	// WorkflowID links the description to the workflow.
	WorkflowID string `json:"workflowID,omitempty"`
	Known      PRRef  `json:"known"`
}

// PR states.
const (
	PRNone   = ""
	PROpen   = "Open"
	PRClosed = "Closed"
	PRMerged = "Merged"
)

// SyncResult is the target PR as the forge shows it after the call.
type SyncResult struct {
	PR    PRRef  `json:"pr"`
	State string `json:"state"`
	Draft bool   `json:"draft"`
	// NoChanges: the base branch already holds every digest; no PR was opened.
	NoChanges bool `json:"noChanges,omitempty"`
	// HumanEdits: a commit on the branch is not nudgeflow's; nothing was pushed.
	HumanEdits string `json:"humanEdits,omitempty"`
	// Monorepo: the target shares an originating PR's repository (ADR 29's
	// synthetic commit: the description says what was copied, or why not).
	Monorepo bool `json:"monorepo,omitempty"`
	Writes   int  `json:"writes"`
}

// OriginRef names an originating PR to read.
type OriginRef struct {
	RepoURL string `json:"repoURL"`
	Number  int    `json:"number"`
}

// ObserveRequest reads originating PRs.
type ObserveRequest struct {
	Namespace string      `json:"namespace"`
	Origins   []OriginRef `json:"origins"`
}

// OriginObservation is one originating PR as the forge shows it.
type OriginObservation struct {
	RepoURL        string `json:"repoURL"`
	Number         int    `json:"number"`
	Found          bool   `json:"found"`
	Open           bool   `json:"open"`
	Merged         bool   `json:"merged"`
	URL            string `json:"url,omitempty"`
	Title          string `json:"title,omitempty"`
	HeadSHA        string `json:"headSHA,omitempty"`
	MergeCommitSHA string `json:"mergeCommitSHA,omitempty"`
	// Error says why this PR could not be read (others still are).
	Error string `json:"error,omitempty"`
}

// FindPushBuildRequest looks for the succeeded push build of Component that built
// CommitSHA (the merge commit), or, when the forge did not name the merge commit, the
// first one that started after After.
type FindPushBuildRequest struct {
	Namespace string    `json:"namespace"`
	Component string    `json:"component"`
	CommitSHA string    `json:"commitSHA,omitempty"`
	After     time.Time `json:"after"`
}

// PushBuild is what FindPushBuild found.
type PushBuild struct {
	Found bool `json:"found"`
	imagebuild.Build
}

// CloseRequest comments (once per marker) on the target PR and, with Close, closes it.
type CloseRequest struct {
	Namespace string `json:"namespace"`
	Target    string `json:"target"`
	Known     PRRef  `json:"known"`
	// Marker makes the comment idempotent (one comment per marker).
	Marker  string `json:"marker"`
	Comment string `json:"comment"`
	Close   bool   `json:"close"`
}
