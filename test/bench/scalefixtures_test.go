package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/nudgeflow/nudgeflow/bridge/plrcache"
	"github.com/nudgeflow/nudgeflow/test/localenv"
)

// TestCachedRunHeap: what the bridge's cache keeps of one bridge-scale build or
// nudge, decoded from JSON as the informer decodes it and made a cachedRun by the
// cache's transform (plrcache.CompactPipelineRun), measured as live heap over a few
// thousand runs. At 100,000
// PipelineRuns the bridge caches 75,000 of them: every 100 bytes here is 7.5 MB
// of the bridge's heap (before the informer's own index, about 150 bytes a run).
// The budget fails a change that makes the cache keep more without saying so.
func TestCachedRunHeap(t *testing.T) {
	const n = 4000
	spec := scalePipelineSpec()
	var raw [][]byte
	for i := 0; len(raw) < n; i++ {
		if k := scaleKindOf(i); k != scalePushBuild && k != scalePRBuild && k != scaleNudge {
			continue
		}
		plr := scaleRun(i, spec)
		plr.Name = fmt.Sprintf("%s%05d", plr.GenerateName, i)
		plr.UID = "0f9a8b7c-1d2e-4f30-a1b2-c3d4e5f6a7b8"
		plr.ResourceVersion = fmt.Sprint(100000 + i)
		finishScaleRun(plr, i, spec)
		b, err := json.Marshal(plr)
		require.NoError(t, err)
		raw = append(raw, b)
	}
	kept := make([]any, 0, n)
	before := liveHeap()
	for _, b := range raw {
		var plr tektonv1.PipelineRun
		require.NoError(t, json.Unmarshal(b, &plr))
		out, err := plrcache.CompactPipelineRun(&plr)
		require.NoError(t, err)
		kept = append(kept, out)
	}
	perRun := (liveHeap() - before) / n
	runtime.KeepAlive(kept)
	t.Logf("a cached build or nudge: %d bytes of heap (%d bytes of JSON on the server)", perRun, len(raw[0]))
	require.LessOrEqual(t, perRun, int64(cachedRunBudget), "heap per cached build or nudge")
}

// cachedRunBudget: 1,095 bytes measured (2,177 as a stripped PipelineRun, 3,791
// before the cache kept only what its readers read), with room for the runtime's
// variation.
const cachedRunBudget = 1250

func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestBridgeScaleRunsTheBridgeAsDeployed: the bridge-scale measure gives the bridge
// the memory limit and GOGC that deploy/base gives its container.
func TestBridgeScaleRunsTheBridgeAsDeployed(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(localenv.RepoRoot(), "deploy", "base", "bridge.yaml"))
	require.NoError(t, err)
	var deployment appsv1.Deployment
	for _, doc := range strings.Split(string(raw), "\n---") {
		var d appsv1.Deployment
		if yaml.Unmarshal([]byte(doc), &d) == nil && d.Kind == "Deployment" {
			deployment = d
		}
	}
	require.NotEmpty(t, deployment.Spec.Template.Spec.Containers, "the bridge's Deployment in deploy/base/bridge.yaml")
	bridge := deployment.Spec.Template.Spec.Containers[0]
	limit := bridge.Resources.Limits[corev1.ResourceMemory]
	require.Equal(t, strings.TrimSuffix(bridgeMemoryLimit, "B"), limit.String(), "memory limit")
	env := map[string]corev1.EnvVar{}
	for _, e := range bridge.Env {
		env[e.Name] = e
	}
	require.Equal(t, bridgeGOMEMLIMIT, env["GOMEMLIMIT"].Value, "GOMEMLIMIT, below the limit")
	require.Equal(t, bridgeGOGC, env["GOGC"].Value, "GOGC")
}
