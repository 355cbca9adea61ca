// Package changegrouppr owns the one pull request of a ChangeGroup on the nudged
// component's repository: it renders the description, rewrites digest references in
// the repository's files, pushes commits through the forge's API (no clone), holds CI
// with `[skip ci]` and releases it exactly once, and reports what it observes.
//
// Every activity here looks before it writes: it reads the PR's real state first, so
// a retry or a second call with the same request changes nothing.
//
// Nothing in these types is a secret: they travel through workflow histories,
// which the Temporal Web UI shows. Activities read tokens from Kubernetes Secrets.
package changegrouppr

import "github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"

// The activities' contract (names, requests, results) lives in contracts/changegroupprapi,
// where a workflow finds it without linking this package and its forge clients;
// these names keep the activities' code reading as it did.
const (
	ModeHold        = changegroupprapi.ModeHold
	ModeRelease     = changegroupprapi.ModeRelease
	PRNone          = changegroupprapi.PRNone
	PROpen          = changegroupprapi.PROpen
	PRClosed        = changegroupprapi.PRClosed
	PRMerged        = changegroupprapi.PRMerged
	SyncActivity    = changegroupprapi.SyncActivity
	ObserveActivity = changegroupprapi.ObserveActivity
	CloseActivity   = changegroupprapi.CloseActivity
	CIActivity      = changegroupprapi.CIActivity
	CommentActivity = changegroupprapi.CommentActivity
)

type (
	CIRequest      = changegroupprapi.CIRequest
	CIObserved     = changegroupprapi.CIObserved
	CommentRequest = changegroupprapi.CommentRequest
	CommentResult  = changegroupprapi.CommentResult
	Repo           = changegroupprapi.Repo
	Row            = changegroupprapi.Row
	Mode           = changegroupprapi.Mode
	SyncRequest    = changegroupprapi.SyncRequest
	PRRef          = changegroupprapi.PRRef
	PRState        = changegroupprapi.PRState
	Observed       = changegroupprapi.Observed
	RowReferences  = changegroupprapi.RowReferences
	ObserveRequest = changegroupprapi.ObserveRequest
	CloseRequest   = changegroupprapi.CloseRequest
)

// CommentMarker is changegroupprapi.CommentMarker.
func CommentMarker(key string) string {
	return changegroupprapi.CommentMarker(key)
}
