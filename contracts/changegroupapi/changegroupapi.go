// Package changegroupapi is the ChangeGroup workflow's contract (workflows/changegroup):
// its registered name, ID, signals, updates and their payloads. Whoever signals a
// group (the bridge, the batching activity) imports this leaf package, never the
// workflow.
package changegroupapi

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
)

// WorkflowName is the registered name; never change it (histories replay by name).
const WorkflowName = "ChangeGroup"

// Signal, update and query names. Signals carry events (at least once; the workflow
// deduplicates); updates carry people's overrides (validated, answered).
const (
	SignalComponentBuilt = "component-built"
	SignalSpecChanged    = "spec-changed"
	SignalPREvent        = "pr-event"
	SignalCancel         = "cancel"

	UpdateReleaseNow    = "release-now"
	UpdateCancel        = "cancel"
	UpdateDropComponent = "drop-component"
	UpdateRebase        = "rebase"

	QueryState = "state"
)

// WorkflowID is deterministic per CR; the UID keeps a re-created CR of the same name
// from attaching to an old run.
func WorkflowID(namespace, name, uid string) string {
	return fmt.Sprintf("changegroup/%s/%s/%s", namespace, name, uid)
}

// ComponentBuilt says a nudging component has a new build for the group. The
// group keeps it only once the cluster vouches for it (versionVerifyBuilds): anyone
// who reaches Temporal can send this signal.
type ComponentBuilt struct {
	Component string `json:"component"`
	// Namespace is the namespace the build is of, when the sender names it: it must
	// be the group's (empty: the group's).
	Namespace string `json:"namespace,omitempty"`
	// Build is the build, whole (its BuiltAt orders builds of one component: an
	// older build never replaces a newer one).
	imagebuild.Build
	// PipelineRun is the nudge PipelineRun that carried it (cancelled by nudgeflow).
	PipelineRun string `json:"pipelineRun,omitempty"`
}

// PREvent is a forge event about the group's PR (webhook or poll).
type PREvent struct {
	// DeliveryID deduplicates redelivered webhooks.
	DeliveryID string `json:"deliveryID,omitempty"`
	// Action is the forge's action (closed, edited, ready_for_review, synchronize, ...).
	Action string `json:"action"`
	Number int    `json:"number"`
	Merged bool   `json:"merged,omitempty"`
	Closed bool   `json:"closed,omitempty"`
}

// CancelRequest ends the group as Cancelled.
type CancelRequest struct {
	Reason string `json:"reason"`
}

// DropRequest stops waiting for a component.
type DropRequest struct {
	Component string `json:"component"`
}

// SignalBuilt delivers a build to a running ChangeGroup workflow.
func SignalBuilt(ctx context.Context, c client.Client, workflowID string, b ComponentBuilt) error {
	if err := c.SignalWorkflow(ctx, workflowID, "", SignalComponentBuilt, b); err != nil {
		return fmt.Errorf("signalling %s of %s: %w", SignalComponentBuilt, workflowID, err)
	}
	return nil
}
