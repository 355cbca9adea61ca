package nudge

import (
	"go.temporal.io/sdk/temporal"

	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
)

// The workflow's contract lives in contracts/nudgeapi, where an activity that
// starts a Nudge finds it without linking the workflow; these names keep the
// workflow's code reading as it did.
const (
	WorkflowName           = nudgeapi.WorkflowName
	SignalRunFinished      = nudgeapi.SignalRunFinished
	PhaseLaunching         = nudgeapi.PhaseLaunching
	PhaseRunning           = nudgeapi.PhaseRunning
	PhaseRetryWaiting      = nudgeapi.PhaseRetryWaiting
	PhaseSucceeded         = nudgeapi.PhaseSucceeded
	PhaseFailed            = nudgeapi.PhaseFailed
	PhaseHeldByChangeGroup = nudgeapi.PhaseHeldByChangeGroup
	PhaseCancelled         = nudgeapi.PhaseCancelled
	PhaseSuperseded        = nudgeapi.PhaseSuperseded
	PhaseBuildNotVerified  = nudgeapi.PhaseBuildNotVerified
	PhaseBranchEdited      = nudgeapi.PhaseBranchEdited
	DefaultMaxAttempts     = nudgeapi.DefaultMaxAttempts
	DefaultRetryBackoff    = nudgeapi.DefaultRetryBackoff
	DefaultPollInterval    = nudgeapi.DefaultPollInterval
)

type (
	Build     = nudgeapi.Build
	Tuning    = nudgeapi.Tuning
	Request   = nudgeapi.Request
	Result    = nudgeapi.Result
	HeldProbe = nudgeapi.HeldProbe
)

// WorkflowID is nudgeapi.WorkflowID.
func WorkflowID(namespace, buildUID, nudged string) string {
	return nudgeapi.WorkflowID(namespace, buildUID, nudged)
}

// Edge is nudgeapi.Edge.
func Edge(from, to string) string { return nudgeapi.Edge(from, to) }

// SearchAttributes is nudgeapi.SearchAttributes.
func SearchAttributes(req Request, phase string) []temporal.SearchAttributeUpdate {
	return nudgeapi.SearchAttributes(req, phase)
}
