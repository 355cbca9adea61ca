package renovate_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/nudgeflow/nudgeflow/activities/changegrouppr"
	"github.com/nudgeflow/nudgeflow/activities/nudgewrite"
	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/contracts/nudgewriteapi"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
)

// writeDirect is the direct writer's side: activities/nudgewrite's
// WriteNudgePR, built as the worker builds it (worker.registerActivities: the
// ChangeGroup writer's forge connection and the Renovate launch's reading of a
// nudge, sharing one ownership checker), run as an activity. It returns when
// the activity has returned: the forge then holds what it wrote.
func writeDirect(ctx context.Context, t *testing.T, d *diffWorld, s *side, n diffNudge) (written, error) {
	owner := &ownership.Checker{Reader: d.kube, BindingNamespace: diffOperatorNamespace, Events: d.kube}
	launch := &renovate.Activities{Kube: d.kube, OperatorNamespace: diffOperatorNamespace, Ownership: owner}
	a := nudgewrite.New(d.kube, changegrouppr.New(d.kube, changegrouppr.Config{Ownership: owner}), launch)
	ae := activityEnv(t)
	a.Register(ae)
	req := nudgewriteapi.WriteRequest{Namespace: s.ns, WorkflowID: "nudge-" + n.Nudged + "-" + n.ID,
		Nudging: diffNudging, Nudged: n.Nudged, Build: d.build(n)}
	val, err := ae.ExecuteActivity(nudgewriteapi.WriteActivity, req)
	if err != nil {
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) {
			return written{}, fmt.Errorf("WriteNudgePR (%s): %w", appErr.Type(), err)
		}
		return written{}, fmt.Errorf("WriteNudgePR: %w", err)
	}
	var res nudgewriteapi.WriteResult
	if err := val.Get(&res); err != nil {
		return written{}, fmt.Errorf("WriteNudgePR's result: %w", err)
	}
	if res.Outcome == nudgewriteapi.OutcomeFallback {
		// Nothing written: the workflow would launch Renovate. Every case here is
		// configured as the writer supports, so a fallback is a failure.
		return written{}, fmt.Errorf("WriteNudgePR fell back to Renovate: %s", res.Reason)
	}
	return written{Outcome: res.Outcome, Detail: fmt.Sprintf("pr=%d branch=%s files=%v reason=%q", res.PR, res.Branch, res.Files, res.Reason),
		PR: res.PR, Branch: res.Branch, Files: res.Files}, nil
}
