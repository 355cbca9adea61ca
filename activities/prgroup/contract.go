// Package prgroup holds the activities of the PRGroup workflow (ADR 29 PR groups):
// the target PR on the nudged component's repository (draft, digest commit,
// description linking every originating PR), reads of the originating PRs, and the
// lookup of a merged commit's push build. Every activity looks before it writes.
//
// Nothing in these types is a secret: they travel through workflow histories.
package prgroup

import "github.com/nudgeflow/nudgeflow/contracts/prgroupapi"

// The activities' contract (names, requests, results) lives in contracts/prgroupapi,
// where a workflow finds it without linking this package and its forge clients;
// these names keep the activities' code reading as it did.
const (
	SyncActivity           = prgroupapi.SyncActivity
	ObserveOriginsActivity = prgroupapi.ObserveOriginsActivity
	FindPushBuildActivity  = prgroupapi.FindPushBuildActivity
	CloseActivity          = prgroupapi.CloseActivity
	PRNone                 = prgroupapi.PRNone
	PROpen                 = prgroupapi.PROpen
	PRClosed               = prgroupapi.PRClosed
	PRMerged               = prgroupapi.PRMerged
)

type (
	Row                  = prgroupapi.Row
	Origin               = prgroupapi.Origin
	PRRef                = prgroupapi.PRRef
	SyncRequest          = prgroupapi.SyncRequest
	SyncResult           = prgroupapi.SyncResult
	OriginRef            = prgroupapi.OriginRef
	ObserveRequest       = prgroupapi.ObserveRequest
	OriginObservation    = prgroupapi.OriginObservation
	FindPushBuildRequest = prgroupapi.FindPushBuildRequest
	PushBuild            = prgroupapi.PushBuild
	CloseRequest         = prgroupapi.CloseRequest
)
