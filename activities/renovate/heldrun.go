package renovate

import (
	"context"
	"fmt"
	"strconv"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// NudgeMayEndHeld reports whether the running Nudge workflowID may still end
// HeldByChangeGroup, so that a ChangeGroup handing its build back must not count
// on it (nudgeapi.HeldProbe). It may when its newest Renovate run was held at
// admission and a group took the build (it ends HeldByChangeGroup once it reads
// the run), and when it has no run yet: the run it launches may be held for a
// group that has seen the build, which then counts as taken. It will not when its
// newest run was not held (it nudges) or was returned by its group (it tries
// again). A held run whose fate the bridge has not written yet is an error, to be
// retried.
func NudgeMayEndHeld(ctx context.Context, kube ctrlclient.Reader, namespace, workflowID string) (bool, error) {
	var runs tektonv1.PipelineRunList
	if err := kube.List(ctx, &runs, ctrlclient.InNamespace(namespace), ctrlclient.MatchingLabels{LabelManagedBy: ManagedByNudgeflow}); err != nil {
		return false, fmt.Errorf("listing the Renovate runs of %s: %w", namespace, err)
	}
	var latest *tektonv1.PipelineRun
	latestAttempt := 0
	for i := range runs.Items {
		r := &runs.Items[i]
		if r.Annotations[AnnotationWorkflowID] != workflowID {
			continue
		}
		if n, _ := strconv.Atoi(r.Annotations[AnnotationAttempt]); latest == nil || n > latestAttempt {
			latest, latestAttempt = r, n
		}
	}
	if latest == nil {
		return true, nil
	}
	if latest.Annotations[konflux.AnnotationHeldBy] == "" {
		return false, nil
	}
	st := renovaterun.StatusOf(latest)
	switch {
	case st.HeldBy != "":
		return true, nil
	case st.Reason == renovaterun.ReasonHeldReturned:
		return false, nil
	}
	return false, &UndecidedHeldRun{Namespace: namespace, Name: latest.Name, WorkflowID: workflowID, Created: latest.CreationTimestamp.Time}
}

// UndecidedHeldRun is NudgeMayEndHeld's error for a held run whose fate the bridge
// has not written (konflux.AnnotationHeldOutcome). Usually that comes within
// seconds; it never comes when the bridge cannot tell the run's build (its build
// run was pruned and the Component has no lastPromotedImage), so a caller decides
// by Created how long to wait (handback fails open).
type UndecidedHeldRun struct {
	Namespace, Name, WorkflowID string
	// Created is the held run's creation.
	Created time.Time
}

func (e *UndecidedHeldRun) Error() string {
	return fmt.Sprintf("the held Renovate run %s/%s of %s (created %s): the bridge has not yet written which ChangeGroup takes its build",
		e.Namespace, e.Name, e.WorkflowID, e.Created.UTC().Format(time.RFC3339))
}
