package changegroup

import (
	"go.temporal.io/sdk/workflow"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
)

// count records n on one of the group's counters (internal/metrics). The workflow's
// metrics handler records nothing while a history replays and issues no command, so
// counting never changes the workflow's command sequence.
func (r *run) count(name string, n int) {
	metrics.Count(workflow.GetMetricsHandler(r.ctx), name, n)
}

// delivered is how many held builds a merged PR carries: in the nothing-lost shape
// those nudgeflow saw pushed to the open PR, before it every ready member's.
func (s *State) delivered(nothingLost bool) int {
	if s.Phase != appstudiov1alpha1.PhaseCompleted {
		return 0
	}
	n := 0
	for _, c := range s.Components {
		if c.State == appstudiov1alpha1.ComponentDropped || c.New == "" {
			continue
		}
		if nothingLost && c.Pushed != c.New {
			continue
		}
		n++
	}
	return n
}
