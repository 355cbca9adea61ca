package deploy_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/test/world"
)

// The worker answers its probes from its start: while its ReleasePlanAdmission
// cache lists (held here by a front to the API server, as a large cluster's first
// list takes its time) it is alive and not ready, so a slow list never fails the
// liveness probe into a restart; once the cache synced it polls and is ready.
func TestWorkerProbesAnswerWhileItsCacheLists(t *testing.T) {
	w := world.Get(t)
	v := findVariant(t, variants(t), "cert-manager")
	prepared(t, v)
	const held = 8 * time.Second
	api := startSlowLists(t, held)
	started := time.Now()
	worker := startPod(t, v.objs, deploymentPod(v.objs.deployment(t, "nudgeflow-worker")),
		podOptions{temporalAddress: w.Temporal.Address, kubeconfig: api.kubeconfig(t)})
	worker.waitReadiness(http.StatusServiceUnavailable, startupTimeout)
	require.Less(t, time.Since(started), held, "the probes answer before the cache synced")
	code, body, err := worker.probe(worker.container.LivenessProbe)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, "alive while the cache lists: %s", body)
	_, body, err = worker.probe(worker.container.ReadinessProbe)
	require.NoError(t, err)
	require.Contains(t, body, "ReleasePlanAdmission cache has not synced")
	worker.waitReady(startupTimeout)
	require.GreaterOrEqual(t, time.Since(started), held, "ready only once the cache's list is in")
}
