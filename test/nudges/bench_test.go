package nudges

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
)

// BenchmarkBridgeBuildToSignals measures the bridge's throughput: succeeded build
// PipelineRuns reconciled into Temporal signals against the real API server and the
// real dev server. Each build has four validated edges, so each reconcile reads the
// build, the NudgeConfig and the ChangeGroups (uncached, straight from the API
// server), sends four SignalWithStart calls and acknowledges the build (one patch
// that also releases the build-routing finalizer). Builds are created before the timer.
//
//	go test -run '^$' -bench BridgeBuildToSignals -benchtime 200x ./test/nudges/
func BenchmarkBridgeBuildToSignals(b *testing.B) {
	f := newFixture(b)
	const targets = 4
	f.component("operand", "", nil)
	var edges []konfluxv1alpha1.NudgeRelationship
	for i := 0; i < targets; i++ {
		to := fmt.Sprintf("bundle-%d", i)
		f.component(to, f.repoURL("github.com", to), nil)
		edges = append(edges, validated("operand", to, "gate"))
	}
	f.nudgeConfig(edges...)
	hidden := map[string]string{labelNotForManager: "true"}
	plrs := make([]*tektonv1.PipelineRun, b.N)
	for i := range plrs {
		plrs[i] = f.build("operand", i+1, hidden)
	}
	r := &builds.BuildReconciler{Client: f.w.Kube, Options: builds.Options{Temporal: f.w.TemporalClient, TaskQueue: taskQueue, Tuning: tuning}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, err := r.Reconcile(f.ctx, ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(plrs[i])})
		require.NoError(b, err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "builds/s")
	b.ReportMetric(float64(b.N*targets)/b.Elapsed().Seconds(), "signals/s")
}
