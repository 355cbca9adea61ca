package deploy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	nfworker "github.com/nudgeflow/nudgeflow/worker"
)

// bridgeMeasuredMiB is the bridge's steady memory at 100,000 PipelineRuns
// (docs/performance.md: 240 to 244 MiB RSS).
const bridgeMeasuredMiB = 240

// highestUserDefinablePriority is the API server's bound on a PriorityClass that is
// not a system-* one (k8s.io/kubernetes pkg/apis/scheduling).
const highestUserDefinablePriority = int32(1_000_000_000)

// The bridge's rollout and resources in every variant: a surge-only
// rollout with minReadySeconds and a preStop sleep that fits its grace period; a
// memory request at least what it was measured to use, GOMEMLIMIT below the limit
// with room for what the Go runtime cannot see; a priority above ordinary pods,
// below the system classes; never two bridges on one node. The worker's readiness
// probe outwaits its own check of Temporal.
func TestRolloutAndResourcesInEveryVariant(t *testing.T) {
	for _, set := range [][]variant{variants(t), renamespacedVariants(t)} {
		for _, v := range set {
			t.Run(v.name, func(t *testing.T) {
				bridge := v.objs.deployment(t, "nudgeflow-bridge")
				spec := bridge.Spec.Template.Spec
				c := spec.Containers[0]

				require.Positive(t, bridge.Spec.MinReadySeconds, "a new bridge counts as available a while after it is ready")
				ru := bridge.Spec.Strategy.RollingUpdate
				require.NotNil(t, ru)
				require.Equal(t, intstr.FromInt32(0), ptr.Deref(ru.MaxUnavailable, intstr.FromString("25%")), "no bridge is removed before its replacement is available")
				require.Equal(t, intstr.FromInt32(1), ptr.Deref(ru.MaxSurge, intstr.FromString("25%")))
				require.NotNil(t, c.Lifecycle, "the bridge has a preStop hook")
				require.NotNil(t, c.Lifecycle.PreStop, "the bridge has a preStop hook")
				require.NotNil(t, c.Lifecycle.PreStop.Sleep, "the preStop hook is the kubelet's sleep (no shell in the image)")
				preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
				require.GreaterOrEqual(t, preStop, 5*time.Second, "time for the endpoint's removal to reach every node")
				grace := time.Duration(ptr.Deref(spec.TerminationGracePeriodSeconds, 30)) * time.Second
				// The manager's graceful shutdown takes up to 30 s after the sleep.
				require.GreaterOrEqual(t, grace-preStop, 30*time.Second, "the bridge stops within its grace period after the preStop sleep")
				require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)

				request := c.Resources.Requests[corev1.ResourceMemory]
				limit := c.Resources.Limits[corev1.ResourceMemory]
				require.GreaterOrEqual(t, request.Value(), int64(bridgeMeasuredMiB)<<20, "the bridge requests what it was measured to use")
				checkGoMemLimit(t, c, limit)

				require.NotEmpty(t, spec.PriorityClassName)
				pc := get[schedulingv1.PriorityClass](t, v.objs, "PriorityClass", spec.PriorityClassName)
				require.Positive(t, pc.Value, "above ordinary pods")
				require.LessOrEqual(t, pc.Value, highestUserDefinablePriority, "below the system classes")
				require.False(t, pc.GlobalDefault)

				checkHardHostnameSpread(t, bridge)

				worker := v.objs.deployment(t, "nudgeflow-worker").Spec.Template.Spec.Containers[0]
				probe := time.Duration(worker.ReadinessProbe.TimeoutSeconds) * time.Second
				require.Greater(t, probe, nfworker.CheckTimeout, "the worker's readiness probe waits longer than its check of Temporal")
				checkGoMemLimit(t, worker, worker.Resources.Limits[corev1.ResourceMemory])
			})
		}
	}
}

// checkGoMemLimit: GOMEMLIMIT is set, at most 90% of the limit and at least 64 MiB
// under it (the binary's mapped pages, about 65 MiB, count against the limit and
// the Go runtime does not see them).
func checkGoMemLimit(t *testing.T, c corev1.Container, limit resource.Quantity) {
	t.Helper()
	require.False(t, limit.IsZero(), "%s has a memory limit", c.Name)
	for _, e := range c.Env {
		if e.Name != "GOMEMLIMIT" {
			continue
		}
		require.Nil(t, e.ValueFrom, "%s: GOMEMLIMIT is a value below the limit, not the limit itself", c.Name)
		v, ok := strings.CutSuffix(e.Value, "MiB")
		require.True(t, ok, "%s: GOMEMLIMIT in MiB: %s", c.Name, e.Value)
		q, err := resource.ParseQuantity(v + "Mi")
		require.NoError(t, err)
		require.LessOrEqual(t, q.Value()*10, limit.Value()*9, "%s: GOMEMLIMIT %s is at most 90%% of the limit %s", c.Name, e.Value, limit.String())
		require.LessOrEqual(t, q.Value(), limit.Value()-64<<20, "%s: GOMEMLIMIT %s leaves 64 MiB under the limit %s", c.Name, e.Value, limit.String())
		return
	}
	t.Fatalf("%s sets no GOMEMLIMIT", c.Name)
}

// checkHardHostnameSpread: the bridge's replicas never share a node; nodes a pod
// cannot go to (cordoned) do not count, so a drain is not blocked.
func checkHardHostnameSpread(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.TopologySpreadConstraints {
		if c.TopologyKey != corev1.LabelHostname {
			continue
		}
		require.Equal(t, corev1.DoNotSchedule, c.WhenUnsatisfiable, "%s: one node's loss never takes every replica", d.Name)
		require.Equal(t, corev1.NodeInclusionPolicyHonor, ptr.Deref(c.NodeTaintsPolicy, corev1.NodeInclusionPolicyIgnore), "%s: a cordoned node does not count", d.Name)
		require.Equal(t, d.Spec.Selector.MatchLabels, c.LabelSelector.MatchLabels, "%s spreads its own pods", d.Name)
		return
	}
	t.Fatalf("%s has no spread over nodes", d.Name)
}
