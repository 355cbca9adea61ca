package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nudgeflow/nudgeflow/internal/kube"
)

func TestTuningDefaultsAndLimits(t *testing.T) {
	d := Tuning{}.WithDefaults()
	require.Equal(t, Tuning{StickyCacheSize: DefaultStickyCacheSize, MaxConcurrentActivities: DefaultMaxConcurrentActivities,
		MaxConcurrentWorkflowTasks: defaultMaxConcurrentWorkflowTasks, WorkflowTaskPollers: defaultWorkflowTaskPollers,
		ActivityTaskPollers: defaultActivityTaskPollers}, d)
	require.NoError(t, d.Validate())
	require.Equal(t, 500, Tuning{StickyCacheSize: 500}.WithDefaults().StickyCacheSize, "a set value is kept")

	// The SDK panics on one workflow-task poller or slot (sticky and normal polls alternate).
	require.ErrorContains(t, Tuning{WorkflowTaskPollers: 1}.Validate(), "pollers must be at least 2")
	require.ErrorContains(t, Tuning{MaxConcurrentWorkflowTasks: 1}.Validate(), "at least 2")
}

// The SDK's WorkerStopTimeout is the tuning's stop timeout: a stopping worker lets
// running activities finish that long (the SDK's default, 0, cancels them at once).
func TestStopTimeoutReachesTheSDK(t *testing.T) {
	require.Equal(t, DefaultStopTimeout, Options{Tuning: Tuning{StopTimeout: DefaultStopTimeout}}.sdkOptions().WorkerStopTimeout)
	require.Zero(t, Options{}.sdkOptions().WorkerStopTimeout, "zero is kept: tests stop at once")
	require.Less(t, DefaultStopTimeout, 90*time.Second, "below deploy/base/worker.yaml's terminationGracePeriodSeconds")
}

// TestRegisterEverything registers every workflow and activity as the worker
// does: the SDK refuses (panics on) an exported method of a registered struct
// that is not an activity, and a name registered twice.
func TestRegisterEverything(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	register(env, Deps{Kube: fake.NewClientBuilder().WithScheme(kube.NewScheme()).Build()}, Options{})
}
