// Package nudgewriteapi is the contract of the direct writer (activities/nudgewrite):
// the activity that writes an immediate nudge's pull request itself, through the
// forge API, in exactly the shape Renovate gives it (branch, title, labels, body
// header and footer, commit identity), so that either writer, and build-service's
// or integration-service's Renovate, can continue the other's branch.
//
// The Nudge workflow calls it by name before it would launch a Renovate
// PipelineRun; when the tenant's configuration asks for something the writer does
// not do, the result says so (Fallback) and the workflow launches Renovate as
// before. No secrets in the request or the result.
package nudgewriteapi

import "github.com/nudgeflow/nudgeflow/internal/imagebuild"

// WriteActivity is the registered name of the direct writer; never change it
// (histories replay by name).
const WriteActivity = "WriteNudgePR"

// Writers a Nudge can use, as its status and Events name them.
const (
	WriterDirect   = "direct"
	WriterRenovate = "renovate"
)

// Error types of WriteNudgePR a retry never fixes.
const (
	ErrorTypeTargetMissing = "TargetMissing"
	ErrorTypeNotNudgeable  = "NotNudgeable"
	ErrorTypeNoCredentials = "NoCredentials"
	ErrorTypeRefused       = "Refused"
)

// NonRetryableErrorTypes are the error types a retry never fixes.
var NonRetryableErrorTypes = []string{ErrorTypeTargetMissing, ErrorTypeNotNudgeable, ErrorTypeNoCredentials, ErrorTypeRefused}

// WriteRequest is one immediate nudge: the build of Nudging to write into Nudged's
// repository. The activity reads the rest (the nudged Component's repository and
// branch, the tenant's Renovate ConfigMap tiers, the distribution repositories,
// the credentials) from the cluster, as the Renovate launch does.
type WriteRequest struct {
	Namespace  string `json:"namespace"`
	WorkflowID string `json:"workflowID"`
	Nudging    string `json:"nudging"`
	Nudged     string `json:"nudged"`
	imagebuild.Build
	// HandedBackBy names the ChangeGroup that handed the build back (empty for
	// other nudges).
	HandedBackBy string `json:"handedBackBy,omitempty"`
}

// Outcomes of a write.
const (
	// OutcomeOpened: a new branch and pull request.
	OutcomeOpened = "Opened"
	// OutcomeUpdated: a commit on the open pull request's branch.
	OutcomeUpdated = "Updated"
	// OutcomeAlreadyCurrent: every matching reference already holds the digest
	// (Renovate opens nothing then either).
	OutcomeAlreadyCurrent = "AlreadyCurrent"
	// OutcomeSuperseded: the branch already holds a newer build of Nudging; the
	// older build is not written over it.
	OutcomeSuperseded = "Superseded"
	// OutcomePersonCommitted: a person committed on the branch; nudgeflow does not
	// write over them (Renovate's "edited/blocked" PR rule).
	OutcomePersonCommitted = "PersonCommitted"
	// OutcomeFallback: the tenant's configuration asks for what the writer does
	// not do; nothing was written and the workflow launches Renovate (Reason says why).
	OutcomeFallback = "Fallback"
)

// WriteResult says what the writer did. No secrets.
type WriteResult struct {
	Outcome string `json:"outcome"`
	// Reason is a sentence for the Nudge's status and Event: why Renovate is used
	// (Fallback), or what the writer found.
	Reason string `json:"reason,omitempty"`
	// Branch, PR (the forge's number) and URL name the pull request written or found.
	Branch string `json:"branch,omitempty"`
	PR     int    `json:"pr,omitempty"`
	URL    string `json:"url,omitempty"`
	// Commit is the branch head after the write.
	Commit string `json:"commit,omitempty"`
	// Files are the paths the commit changed.
	Files []string `json:"files,omitempty"`
}
