// Package nudgeapi is the Nudge workflow's contract (workflows/nudge): its
// registered name, ID, request and result, and how a caller starts one once.
// Whoever starts a Nudge (the bridge, a ChangeGroup's hand-back activity) imports
// this leaf package, never the workflow.
package nudgeapi

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/internal/searchattr"
)

// WorkflowName is the registered name; never change it (histories replay by name).
const WorkflowName = "Nudge"

// SignalRunFinished carries a renovate.RunStatus when a run this workflow launched ends.
const SignalRunFinished = "renovate-run-finished"

// Phases, as the Phase search attribute shows them.
const (
	PhaseLaunching    = "Launching"
	PhaseRunning      = "Running"
	PhaseRetryWaiting = "RetryWaiting"
	PhaseSucceeded    = "Succeeded"
	PhaseFailed       = "Failed"
	// PhaseHeldByChangeGroup: a ChangeGroup held the Renovate run at admission and
	// collects the build into its pull request; this nudge is done.
	PhaseHeldByChangeGroup = "HeldByChangeGroup"
	// PhaseCancelled: someone cancelled the Renovate run; the nudge stops there.
	PhaseCancelled = "Cancelled"
	// PhaseSuperseded: a newer build of the nudging component nudges the same
	// target; this older one stops rather than roll its digest back.
	PhaseSuperseded = "Superseded"
	// PhaseBuildNotVerified: the cluster did not build the digest the nudge was
	// started with (buildcheck); nothing was launched.
	PhaseBuildNotVerified = "BuildNotVerified"
	// PhaseBranchEdited: the direct writer found a person's commit on the nudge
	// branch and wrote nothing over it (Renovate's edited-PR rule); the next build
	// of the nudging component nudges again.
	PhaseBranchEdited = "BranchEdited"
)

// Defaults for Request's tuning fields.
const (
	DefaultMaxAttempts  = 3
	DefaultRetryBackoff = 5 * time.Minute
	DefaultPollInterval = 5 * time.Minute
)

// WorkflowID is deterministic per (namespace, build PipelineRun UID, nudged
// component): a resync or a second bridge can never start a second nudge.
func WorkflowID(namespace, buildUID, nudged string) string {
	return fmt.Sprintf("nudge/%s/%s/%s", namespace, buildUID, nudged)
}

// Edge is "from->to", the NudgeEdge search attribute.
func Edge(from, to string) string { return from + "->" + to }

// Build is a succeeded push build of the nudging component (imagebuild.Build: read once
// by the bridge, carried whole). No secrets.
type Build = imagebuild.Build

// Tuning sets retries; zero values mean the defaults.
type Tuning struct {
	// MaxAttempts runs at most; RetryBackoff before the 2nd (doubling); PollInterval
	// between polls when no end signal arrives.
	MaxAttempts  int           `json:"maxAttempts,omitempty"`
	RetryBackoff time.Duration `json:"retryBackoff,omitempty"`
	PollInterval time.Duration `json:"pollInterval,omitempty"`
}

// Request is the nudge. No secrets.
type Request struct {
	Namespace string `json:"namespace"`
	Nudging   string `json:"nudging"`
	Nudged    string `json:"nudged"`
	// Mode is immediate or validated (for the record).
	Mode string `json:"mode"`
	Build
	DistributionRepos []string `json:"distributionRepos,omitempty"`
	// HandedBackBy names the ChangeGroup that handed this build back (a hand-back
	// nudge): that group never intercepts the nudge's Renovate run.
	HandedBackBy string `json:"handedBackBy,omitempty"`
	Tuning
}

// Result is the nudge's outcome.
type Result struct {
	Phase        string   `json:"phase"`
	Digest       string   `json:"digest"`
	Attempts     int      `json:"attempts"`
	PipelineRuns []string `json:"pipelineRuns"`
	Reason       string   `json:"reason,omitempty"`
	// Writer is the writer that wrote, or tried to write, the pull request
	// (WriterDirect or WriterRenovate; empty before the direct writer existed,
	// when it was always Renovate), and WriterReason why it was that one.
	Writer       string `json:"writer,omitempty"`
	WriterReason string `json:"writerReason,omitempty"`
	// PullRequest is the URL of the pull request the direct writer wrote or found.
	PullRequest string `json:"pullRequest,omitempty"`
}

// WithDefaults fills the tuning fields left zero.
func (r Request) WithDefaults() Request {
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = DefaultMaxAttempts
	}
	if r.RetryBackoff <= 0 {
		r.RetryBackoff = DefaultRetryBackoff
	}
	if r.PollInterval <= 0 {
		r.PollInterval = DefaultPollInterval
	}
	return r
}

// WriterSearchAttribute records which writer a Nudge used (NudgeWriter).
func WriterSearchAttribute(writer string) temporal.SearchAttributeUpdate {
	return searchattr.NudgeWriter.ValueSet(writer)
}

// SearchAttributes are the attributes a Nudge run carries from its start.
func SearchAttributes(req Request, phase string) []temporal.SearchAttributeUpdate {
	return []temporal.SearchAttributeUpdate{
		searchattr.KubeNamespace.ValueSet(req.Namespace),
		searchattr.NudgeEdge.ValueSet(Edge(req.Nudging, req.Nudged)),
		searchattr.NudgingComponent.ValueSet(req.Nudging),
		searchattr.NudgedComponent.ValueSet(req.Nudged),
		searchattr.Phase.ValueSet(phase),
	}
}
