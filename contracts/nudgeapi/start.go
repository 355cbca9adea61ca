package nudgeapi

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
	_, err := start(ctx, c, taskQueue, WorkflowID(req.Namespace, req.BuildUID, req.Nudged), req, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING)
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
// A Nudge still running is the build's nudge unless mayEndHeld says it may still
// end HeldByChangeGroup: a group took its run's build (that group may be the one
// handing it back now, ended before the Nudge closed), or it has not launched yet
// and its run may be held for a group that has seen the build and handed it back.
// Then the hand-back starts under HandBackWorkflowID as for a closed one: at worst
// the build is nudged twice, never not at all.
func StartHandBack(ctx context.Context, c client.Client, taskQueue string, req Request, groupUID string, mayEndHeld HeldProbe) (string, error) {
	id := WorkflowID(req.Namespace, req.BuildUID, req.Nudged)
	taken, err := start(ctx, c, taskQueue, id, req, enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL)
	if err != nil || !taken {
		return id, err
	}
	held, err := ownNudgeHeld(ctx, c, id, req.Namespace, mayEndHeld)
	if err != nil || !held {
		return id, err
	}
	hid := HandBackWorkflowID(req.Namespace, req.BuildUID, req.Nudged, groupUID)
	if _, err := start(ctx, c, taskQueue, hid, req, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING); err != nil {
		return hid, err
	}
	return hid, nil
}

// HeldProbe reports whether the running Nudge workflowID may still end
// HeldByChangeGroup (StartHandBack). It fails, to be retried, while a held run's
// fate is not decided yet.
type HeldProbe func(ctx context.Context, namespace, workflowID string) (bool, error)

// ownNudgeHeld reports whether the Nudge id that holds the build's own ID ended, or
// may still end, HeldByChangeGroup: a closed one by its result, a running one by
// mayEndHeld.
func ownNudgeHeld(ctx context.Context, c client.Client, id, namespace string, mayEndHeld HeldProbe) (bool, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return false, fmt.Errorf("reading the state of Nudge %s: %w", id, err)
	}
	switch desc.GetWorkflowExecutionInfo().GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return mayEndHeld(ctx, namespace, id)
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
	default:
		return false, nil
	}
	var res Result
	if err := c.GetWorkflow(ctx, id, desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()).Get(ctx, &res); err != nil {
		return false, fmt.Errorf("reading the result of Nudge %s: %w", id, err)
	}
	return res.Phase == PhaseHeldByChangeGroup, nil
}

// start starts Nudge id once (REJECT_DUPLICATE) and reports whether the ID was
// taken already: by a closed run, or, with conflict policy FAIL, by a running one
// (USE_EXISTING reuses a running one without saying so).
func start(ctx context.Context, c client.Client, taskQueue, id string, req Request, onRunning enumspb.WorkflowIdConflictPolicy) (taken bool, err error) {
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                taskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: onRunning,
		// Without it the SDK answers a taken ID with that run, no error: a taken
		// ID must be told apart (StartHandBack reads how its Nudge ended or runs).
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
