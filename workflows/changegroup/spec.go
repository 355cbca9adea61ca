// Package changegroup is the ChangeGroup workflow (ADR 59): it collects the builds
// of N nudging components into one draft pull request, holds CI until all are ready,
// releases it once and follows the PR to its end. The workflow's state is the truth;
// the CR status is a projection written by an activity.
package changegroup

import (
	"time"
)

// HistoryShape names the workflow's current command-sequence shape; histories
// recorded from the tests carry it in their file name, beside older shapes' files.
const HistoryShape = "verify-builds"

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
	autoReleaseWindow = "window"
	autoReleaseQuorum = "quorum"
	autoReleaseAll    = "all"
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
