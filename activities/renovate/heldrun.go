package renovate

import (
	"context"
	"fmt"
	"strconv"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// NudgeMayEndHeld reports whether the running Nudge workflowID may still end
// HeldByChangeGroup, so that a ChangeGroup handing its build back must not count
// on it (nudge.HeldProbe). It may when its newest Renovate run was held at
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
	st := StatusOf(latest)
	switch {
	case st.HeldBy != "":
		return true, nil
	case st.Reason == ReasonHeldReturned:
		return false, nil
	}
	return false, fmt.Errorf("the held Renovate run %s/%s of %s: the bridge has not yet written which ChangeGroup takes its build", namespace, latest.Name, workflowID)
}
