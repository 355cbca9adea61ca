// Package pullrequest owns the one pull request of a ChangeGroup on the nudged
// component's repository: it renders the description, rewrites digest references in
// the repository's files, pushes commits through the forge's API (no clone), holds CI
// with `[skip ci]` and releases it exactly once, and reports what it observes.
//
// Every activity here looks before it writes: it reads the PR's real state first, so
// a retry or a second call with the same request changes nothing.
//
// Nothing in these types is a secret: they travel through workflow histories,
// which the Temporal Web UI shows. Activities read tokens from Kubernetes Secrets.
package pullrequest

import "github.com/nudgeflow/nudgeflow/contracts/pullrequestapi"

// The activities' contract (names, requests, results) lives in contracts/pullrequestapi,
// where a workflow finds it without linking this package and its forge clients;
// these names keep the activities' code reading as it did.
const (
	ModeHold        = pullrequestapi.ModeHold
	ModeRelease     = pullrequestapi.ModeRelease
	PRNone          = pullrequestapi.PRNone
	PROpen          = pullrequestapi.PROpen
	PRClosed        = pullrequestapi.PRClosed
	PRMerged        = pullrequestapi.PRMerged
	SyncActivity    = pullrequestapi.SyncActivity
	ObserveActivity = pullrequestapi.ObserveActivity
	CloseActivity   = pullrequestapi.CloseActivity
	CIActivity      = pullrequestapi.CIActivity
	CommentActivity = pullrequestapi.CommentActivity
)

type (
	CIRequest      = pullrequestapi.CIRequest
	CIObserved     = pullrequestapi.CIObserved
	CommentRequest = pullrequestapi.CommentRequest
	CommentResult  = pullrequestapi.CommentResult
	Repo           = pullrequestapi.Repo
	Row            = pullrequestapi.Row
	Mode           = pullrequestapi.Mode
	SyncRequest    = pullrequestapi.SyncRequest
	PRRef          = pullrequestapi.PRRef
	PRState        = pullrequestapi.PRState
	Observed       = pullrequestapi.Observed
	RowReferences  = pullrequestapi.RowReferences
	ObserveRequest = pullrequestapi.ObserveRequest
	CloseRequest   = pullrequestapi.CloseRequest
)

// CommentMarker is pullrequestapi.CommentMarker.
func CommentMarker(key string) string {
	return pullrequestapi.CommentMarker(key)
}
