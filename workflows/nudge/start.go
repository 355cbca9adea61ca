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
	_, err := start(ctx, c, taskQueue, WorkflowID(req.Namespace, req.BuildUID, req.Nudged), req)
	return err
}

// HandBackWorkflowID is the ID of the Nudge that carries a build a ChangeGroup
// handed back when the build's own Nudge ended HeldByChangeGroup (that group, or an
// earlier one, took its Renovate run): deterministic per (group, build, target), so
// a hand-back run again starts nothing more, and distinct from WorkflowID, which
// that held run burnt.
func HandBackWorkflowID(namespace, buildUID, nudged, groupUID string) string {
	return fmt.Sprintf("%s/handback-%s", WorkflowID(namespace, buildUID, nudged), groupUID)
}

// StartHandBack starts the nudge of a build ChangeGroup groupUID handed back and
// returns its workflow ID. The build's own Nudge ID comes first: a bridge resync
// then finds it taken and never nudges the build a second time. When that ID is
// burnt by a Nudge that ended HeldByChangeGroup (nothing nudged the build: a group
// took it), the hand-back starts under HandBackWorkflowID. A closed Nudge that ended
// otherwise (it nudged, was superseded or cancelled, or failed with an Event) is the
// build's nudge: nothing more is started.
//
// A Nudge still running is the build's nudge unless boundToBeHeld says it is bound
// to end HeldByChangeGroup (a group took its run's build, and that group may be the
// one handing it back now, which ended before the Nudge closed): then the hand-back
// starts under HandBackWorkflowID as for a closed one.
func StartHandBack(ctx context.Context, c client.Client, taskQueue string, req Request, groupUID string, boundToBeHeld HeldProbe) (string, error) {
	id := WorkflowID(req.Namespace, req.BuildUID, req.Nudged)
	closed, err := start(ctx, c, taskQueue, id, req)
	if err != nil {
		return id, err
	}
	held := false
	if closed {
		held, err = endedHeld(ctx, c, id)
	} else {
		held, err = boundToBeHeld(ctx, req.Namespace, id)
	}
	if err != nil || !held {
		return id, err
	}
	hid := HandBackWorkflowID(req.Namespace, req.BuildUID, req.Nudged, groupUID)
	if _, err := start(ctx, c, taskQueue, hid, req); err != nil {
		return hid, err
	}
	return hid, nil
}

// HeldProbe reports whether the running Nudge workflowID is bound to end
// HeldByChangeGroup: its latest Renovate run was held and a ChangeGroup took the
// run's build. It fails (to be retried) while that is not decided yet.
type HeldProbe func(ctx context.Context, namespace, workflowID string) (bool, error)

// endedHeld reports whether the closed Nudge id completed HeldByChangeGroup.
func endedHeld(ctx context.Context, c client.Client, id string) (bool, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return false, fmt.Errorf("reading how Nudge %s ended: %w", id, err)
	}
	if desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		return false, nil
	}
	var res Result
	if err := c.GetWorkflow(ctx, id, desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()).Get(ctx, &res); err != nil {
		return false, fmt.Errorf("reading the result of Nudge %s: %w", id, err)
	}
	return res.Phase == PhaseHeldByChangeGroup, nil
}

// start starts Nudge id once (REJECT_DUPLICATE, a running one reused); closed
// reports that a closed run already has the ID.
func start(ctx context.Context, c client.Client, taskQueue, id string, req Request) (closed bool, err error) {
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                taskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		// Without it the SDK answers a closed run with that run, no error: a closed
		// run must be told apart (StartHandBack reads how it ended).
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes:                    temporal.NewSearchAttributes(SearchAttributes(req, PhaseLaunching)...),
		StaticSummary:                            fmt.Sprintf("nudge %s to %s", req.Nudged, req.PullSpec),
	}, WorkflowName, req)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && (errors.As(err, &already) || temporal.IsWorkflowExecutionAlreadyStartedError(err)) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("starting %s: %w", id, err)
	}
	return false, nil
}
