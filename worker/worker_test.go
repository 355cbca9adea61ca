package worker

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTuningDefaultsAndLimits(t *testing.T) {
	d := Tuning{}.WithDefaults()
	require.Equal(t, Tuning{StickyCacheSize: DefaultStickyCacheSize, MaxConcurrentActivities: DefaultMaxConcurrentActivities,
		MaxConcurrentWorkflowTasks: DefaultMaxConcurrentWorkflowTasks, WorkflowTaskPollers: DefaultWorkflowTaskPollers,
		ActivityTaskPollers: DefaultActivityTaskPollers}, d)
	require.NoError(t, d.Validate())
	require.Equal(t, 500, Tuning{StickyCacheSize: 500}.WithDefaults().StickyCacheSize, "a set value is kept")

	// The SDK panics on one workflow-task poller or slot (sticky and normal polls alternate).
	require.ErrorContains(t, Tuning{WorkflowTaskPollers: 1}.Validate(), "pollers must be at least 2")
	require.ErrorContains(t, Tuning{MaxConcurrentWorkflowTasks: 1}.Validate(), "at least 2")
}
