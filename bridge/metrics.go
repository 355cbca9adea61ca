package bridge

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
)

// CountChangeGroups makes the manager's metrics endpoint report ChangeGroups by
// phase (nudgeflow_changegroups), counted from the manager's informer cache on each
// scrape. One bridge per process: the last one called counts.
func CountChangeGroups(mgr ctrl.Manager) {
	metrics.CountChangeGroupsWith(func(ctx context.Context) (map[string]int, error) {
		var list appstudiov1alpha1.ChangeGroupList
		if err := mgr.GetCache().List(ctx, &list); err != nil {
			return nil, err
		}
		counts := map[string]int{}
		for _, cg := range list.Items {
			phase := string(cg.Status.Phase)
			if phase == "" {
				phase = string(appstudiov1alpha1.PhaseInitialized)
			}
			counts[phase]++
		}
		return counts, nil
	})
}
