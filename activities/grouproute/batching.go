// Package grouproute is the validated side of batched nudging (ADR 67 Phase 2): a
// ValidatedNudge whose build passed its Snapshot gives it, with the Snapshot's
// digest, to the ChangeGroup that holds the edge (a manual one first), or to the
// automatic ChangeGroup of a batched target, opened when none is open
// (internal/autogroups). Only when neither exists does the workflow nudge as before.
package grouproute

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	cgwf "github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	nudge "github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/autogroups"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
)

// Activity is the registered name; never change it (histories replay by name).
const Activity = "BatchValidatedBuild"

// Request is one validated build of the edge From -> To. No secrets.
type Request struct {
	Namespace string      `json:"namespace"`
	From      string      `json:"from"`
	To        string      `json:"to"`
	Build     nudge.Build `json:"build"`
}

// Result names the group that took the build; empty when no group holds the edge
// and the target is not batched (the caller nudges normally).
type Result struct {
	ChangeGroup string `json:"changeGroup,omitempty"`
	WorkflowID  string `json:"workflowID,omitempty"`
}

// Activities delivers validated builds to ChangeGroups.
type Activities struct {
	Temporal client.Client
	// Batches finds and opens the groups (shared with the hand-back activity, so
	// one worker serialises the opening of a target's batch).
	Batches *autogroups.Opener
}

// Register adds the activity under its stable name.
func (a *Activities) Register(r sdkworker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.Route, activity.RegisterOptions{Name: Activity})
}

// errNotStarted: the group exists but the bridge has not started its workflow yet;
// the activity is retried.
var errNotStarted = errors.New("the ChangeGroup's workflow has not started yet")

// internal/autogroups's Opener, live (no watch): the NudgeConfig by name, the
// namespace's groups, a new automatic group, its patched members.
// +kubebuilder:rbac:groups=konflux-ci.dev,resources=nudgeconfigs,verbs=get
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=nudgeconfigs,verbs=get
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=changegroups,verbs=get;list;create;patch

// Route gives the build to the group that takes it now. It never starts a group's
// workflow (the bridge does, with its settings, after the group's finalizer is on):
// a group not started yet makes the activity fail and be retried.
func (a *Activities) Route(ctx context.Context, req Request) (Result, error) {
	cg, err := a.Batches.HolderFor(ctx, req.Namespace, req.From, req.To, "")
	if err != nil || cg == nil {
		return Result{}, err
	}
	id := cgwf.WorkflowID(cg.Namespace, cg.Name, string(cg.UID))
	b := req.Build
	err = cgwf.SignalBuilt(ctx, a.Temporal, id, cgwf.ComponentBuilt{Component: req.From, Build: b})
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) && grouplookup.IsActive(cg) {
		// Not started yet, or ended a moment ago: the next attempt looks again.
		return Result{}, fmt.Errorf("%w: ChangeGroup %s/%s", errNotStarted, cg.Namespace, cg.Name)
	}
	if err != nil {
		return Result{}, err
	}
	activity.GetLogger(ctx).Info("validated build given to a ChangeGroup", "changeGroup", cg.Name,
		"automatic", grouplookup.IsAutomatic(cg), "component", req.From, "digest", b.Digest)
	return Result{ChangeGroup: cg.Name, WorkflowID: id}, nil
}
