// Package changegroup is the ChangeGroup workflow (ADR 59): it collects the builds
// of N nudging components into one draft pull request, holds CI until all are ready,
// releases it once and follows the PR to its end. The workflow's state is the truth;
// the CR status is a projection written by an activity.
package changegroup

import (
	"context"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
)

// HistoryShape names the workflow's current command-sequence shape; histories
// recorded from the tests carry it in their file name, beside older shapes' files.
const HistoryShape = "verify-builds"

// The workflow's contract lives in contracts/changegroupapi, where an activity
// that signals a group finds it without linking the workflow; these names keep
// the workflow's code reading as it did.
const (
	WorkflowName         = changegroupapi.WorkflowName
	SignalComponentBuilt = changegroupapi.SignalComponentBuilt
	SignalSpecChanged    = changegroupapi.SignalSpecChanged
	SignalPREvent        = changegroupapi.SignalPREvent
	SignalCancel         = changegroupapi.SignalCancel
	UpdateReleaseNow     = changegroupapi.UpdateReleaseNow
	UpdateCancel         = changegroupapi.UpdateCancel
	UpdateDropComponent  = changegroupapi.UpdateDropComponent
	UpdateRebase         = changegroupapi.UpdateRebase
	QueryState           = changegroupapi.QueryState
)

type (
	ComponentBuilt = changegroupapi.ComponentBuilt
	PREvent        = changegroupapi.PREvent
	CancelRequest  = changegroupapi.CancelRequest
	DropRequest    = changegroupapi.DropRequest
)

// WorkflowID is changegroupapi.WorkflowID.
func WorkflowID(namespace, name, uid string) string {
	return changegroupapi.WorkflowID(namespace, name, uid)
}

// SignalBuilt is changegroupapi.SignalBuilt.
func SignalBuilt(ctx context.Context, c client.Client, workflowID string, b ComponentBuilt) error {
	return changegroupapi.SignalBuilt(ctx, c, workflowID, b)
}

// SpecChanged carries the CR's spec after an edit.
type SpecChanged struct {
	Generation        int64    `json:"generation"`
	NudgingComponents []string `json:"nudgingComponents"`
	// Timeout is the spec's timeout; zero means none.
	Timeout time.Duration `json:"timeout,omitempty"`
	// AutoRelease is the spec's autoRelease; nil means none.
	AutoRelease *AutoRelease `json:"autoRelease,omitempty"`
}

// AutoRelease policies (the CR's spec.autoRelease.policy).
const (
	AutoReleaseWindow = "window"
	AutoReleaseQuorum = "quorum"
	AutoReleaseAll    = "all"
)

// AutoRelease lets the workflow release CI on its own: Window after the last
// collected build (as Policy allows: window releases what is ready, quorum needs
// Quorum ready members, all never releases on the window), or MaxWait after the
// group started, with what is ready. Zero durations are off.
type AutoRelease struct {
	Window  time.Duration `json:"window,omitempty"`
	MaxWait time.Duration `json:"maxWait,omitempty"`
	Policy  string        `json:"policy,omitempty"`
	Quorum  int           `json:"quorum,omitempty"`
}
