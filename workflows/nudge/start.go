package nudge

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// Start starts the immediate nudge of one build for one target, once: a running
// one is reused and a closed one is never started again, so the bridge, a
// renudge and a ChangeGroup handing a build back can never nudge a build twice.
func Start(ctx context.Context, c client.Client, taskQueue string, req Request) error {
	id := WorkflowID(req.Namespace, req.BuildUID, req.Nudged)
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                taskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(SearchAttributes(req, PhaseLaunching)...),
		StaticSummary:            fmt.Sprintf("nudge %s to %s", req.Nudged, req.PullSpec),
	}, WorkflowName, req)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &already) && !temporal.IsWorkflowExecutionAlreadyStartedError(err) {
		return fmt.Errorf("starting %s: %w", id, err)
	}
	return nil
}
