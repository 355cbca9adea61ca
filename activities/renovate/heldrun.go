package renovate

import (
	"context"
	"fmt"
	"strconv"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// LatestRunTakenByGroup reports whether the newest Renovate run of Nudge
// workflowID was held at admission and a ChangeGroup took its build: that Nudge
// ends HeldByChangeGroup once it reads the run, so it is not the build's nudge any
// more even while it still runs. A run returned by its group (the Nudge tries
// again), one not held, or no run yet (the Nudge has not launched: its run will
// nudge or be held by a group that then owns the build) is false. A held run whose
// fate the bridge has not written yet is an error, to be retried.
func LatestRunTakenByGroup(ctx context.Context, kube ctrlclient.Reader, namespace, workflowID string) (bool, error) {
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
	if latest == nil || latest.Annotations[konflux.AnnotationHeldBy] == "" {
		return false, nil
	}
	st := StatusOf(latest)
	switch {
	case st.HeldBy != "":
		return true, nil
	case st.Reason == ReasonHeldReturned:
		return false, nil
	}
	return false, fmt.Errorf("the Renovate run %s/%s of %s is held and the bridge has not yet written which ChangeGroup takes its build", namespace, latest.Name, workflowID)
}
