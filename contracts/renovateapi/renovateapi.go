// Package renovateapi is the contract of the Renovate activities
// (activities/renovate) the Nudge workflow runs: their registered names, requests,
// results and error types, and what a run says when it ends (internal/renovaterun).
// The workflow calls by these names without linking the activities or their
// forge clients.
package renovateapi

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// The activities' registered names: the methods of renovate.Activities, which the
// worker registers whole (a test there keeps these equal to the methods).
const (
	LaunchActivity   = "LaunchRenovate"
	StatusActivity   = "RenovateRunStatus"
	DeliveryActivity = "CheckDelivery"
	OutcomeActivity  = "RecordNudgeOutcome"
)

// Error types of LaunchRenovate a retry never fixes.
const (
	ErrorTypeTargetMissing = "TargetMissing"
	ErrorTypeNotNudgeable  = "NotNudgeable"
	ErrorTypeNoCredentials = "NoCredentials"
	ErrorTypeNameConflict  = "NameConflict"
	ErrorTypeRefused       = "Refused"
	// ErrorTypeSuperseded is LaunchRenovate's (non-retryable) error when a newer
	// build of the nudging component already has a run for the target.
	ErrorTypeSuperseded = "Superseded"
)

// NonRetryableErrorTypes are the error types a retry never fixes.
var NonRetryableErrorTypes = []string{ErrorTypeTargetMissing, ErrorTypeNotNudgeable, ErrorTypeNoCredentials, ErrorTypeNameConflict, ErrorTypeRefused, ErrorTypeSuperseded}

// LaunchRequest says which run to create. No secrets.
type LaunchRequest struct {
	Namespace string `json:"namespace"`
	// Name is the PipelineRun's deterministic name (RunName).
	Name       string `json:"name"`
	WorkflowID string `json:"workflowID"`
	Attempt    int    `json:"attempt"`
	Nudging    string `json:"nudging"`
	Nudged     string `json:"nudged"`
	// Build is the build, whole as the bridge read it (the same JSON names as the
	// fields it replaced: imageURL, digest, buildPipelineRun, repoAtSHA, nudgeFiles,
	// builtAt), so stored requests decode.
	imagebuild.Build
	// DistributionRepos, when set, are used instead of the nudging component's
	// ReleasePlanAdmission repositories, which are read at launch otherwise. Only
	// histories recorded before that lookup carry them.
	DistributionRepos []string `json:"distributionRepos,omitempty"`
	// HandedBackBy names the ChangeGroup that handed the build back (empty for
	// other nudges); the run carries it as konflux.AnnotationHandedBackBy.
	HandedBackBy string `json:"handedBackBy,omitempty"`
}

// LaunchResult names the run.
type LaunchResult struct {
	Name string `json:"name"`
	// Created is false when the run already existed (a retried activity).
	Created bool `json:"created"`
}

// RunName is the deterministic PipelineRun name of one attempt of a nudge workflow.
func RunName(workflowID string, attempt int) string {
	sum := sha256.Sum256([]byte(workflowID))
	return fmt.Sprintf("renovate-nudge-%s-%d", hex.EncodeToString(sum[:])[:12], attempt)
}

// DeliveryRequest asks whether a run delivered its build. No secrets.
type DeliveryRequest struct {
	Namespace string `json:"namespace"`
	Nudging   string `json:"nudging"`
	Nudged    string `json:"nudged"`
	// ImageURL is the build's IMAGE_URL (repo:tag); Digest its IMAGE_DIGEST.
	ImageURL string `json:"imageURL"`
	Digest   string `json:"digest"`
	// NudgeFiles is the build's build-nudge-files annotation.
	NudgeFiles        string   `json:"nudgeFiles,omitempty"`
	DistributionRepos []string `json:"distributionRepos,omitempty"`
	// PipelineRun is the run asked about (for logs and messages).
	PipelineRun string `json:"pipelineRun"`
	// LogSaysOK: the run's log named no failure (RunStatus.Succeeded).
	LogSaysOK bool `json:"logSaysOK,omitempty"`
}

// Outcome is one nudge outcome to record as an Event on the nudged Component.
type Outcome struct {
	Namespace  string `json:"namespace"`
	Component  string `json:"component"`
	WorkflowID string `json:"workflowID"`
	Attempt    int    `json:"attempt"`
	// Warning makes a Warning event; otherwise Normal.
	Warning     bool   `json:"warning,omitempty"`
	Reason      string `json:"reason"`
	Message     string `json:"message"`
	PipelineRun string `json:"pipelineRun,omitempty"`
}

// How a run ended and what the forge said of it (internal/renovaterun).
type (
	RunStatus       = renovaterun.RunStatus
	DeliveryVerdict = renovaterun.DeliveryVerdict
)

const (
	AnnotationSupersededBy     = renovaterun.AnnotationSupersededBy
	ReasonHeldReturned         = renovaterun.ReasonHeldReturned
	ReasonRegistryAuthFailed   = renovaterun.ReasonRegistryAuthFailed
	ReasonImageLookupFailed    = renovaterun.ReasonImageLookupFailed
	ReasonRepositoryNotUpdated = renovaterun.ReasonRepositoryNotUpdated
	ReasonPRNotOpened          = renovaterun.ReasonPRNotOpened
	ReasonNotDelivered         = renovaterun.ReasonNotDelivered
	ReasonDeliveryUnknown      = renovaterun.ReasonDeliveryUnknown
)
