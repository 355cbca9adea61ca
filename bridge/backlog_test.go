package bridge

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
)

// The backlog gauges report the oldest waiting ChangeGroup of each phase, the most
// overdue one still collecting, and the build held longest after it finished; final
// groups, released groups past their timeout, running builds and builds the bridge
// released count for nothing there.
func TestBacklogGaugesReportTheOldestStuckWork(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	group := func(name string, created time.Duration, phase appstudiov1alpha1.ChangeGroupPhase, timeout time.Duration) *appstudiov1alpha1.ChangeGroup {
		cg := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant", CreationTimestamp: ago(created)}}
		cg.Status.Phase = phase
		if timeout > 0 {
			cg.Spec.Timeout = &metav1.Duration{Duration: timeout}
		}
		return cg
	}
	build := func(name string, created time.Duration, finalizers []string, mutate func(*tektonv1.PipelineRun)) *tektonv1.PipelineRun {
		plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "tenant", CreationTimestamp: ago(created), Finalizers: finalizers,
			Labels:      map[string]string{builds.LabelComponent: "operand", builds.LabelPipelineType: builds.PipelineTypeBuild},
			Annotations: map[string]string{builds.KeyEventType: "push"},
		}}
		if mutate != nil {
			mutate(plr)
		}
		return plr
	}
	succeeded := func(at time.Duration, completion bool) func(*tektonv1.PipelineRun) {
		return func(plr *tektonv1.PipelineRun) {
			plr.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue,
				LastTransitionTime: apis.VolatileTime{Inner: ago(at)}}}
			if completion {
				ct := ago(at)
				plr.Status.CompletionTime = &ct
			}
		}
	}
	held := []string{konflux.FinalizerBuildRouting}
	objs := []ctrlclient.Object{
		group("unstarted", 3*time.Hour, "", 0), // no status yet: Initialized
		group("initialized", time.Hour, appstudiov1alpha1.PhaseInitialized, 0),
		group("waiting", 2*time.Hour, appstudiov1alpha1.PhaseWaiting, 24*time.Hour),
		group("overdue", 26*time.Hour, appstudiov1alpha1.PhaseWaiting, 24*time.Hour),
		// Released: it follows its PR past the timeout, by design.
		group("released", 30*time.Hour, appstudiov1alpha1.PhaseReady, 24*time.Hour),
		group("merged-long-ago", 90*24*time.Hour, appstudiov1alpha1.PhaseCompleted, time.Hour),
		group("timed-out", 48*time.Hour, appstudiov1alpha1.PhaseCancelled, time.Hour),

		build("running", 5*time.Hour, held, nil),
		build("finished-10m", time.Hour, held, succeeded(10*time.Minute, true)),
		build("finished-20m-no-completion-time", time.Hour, held, succeeded(20*time.Minute, false)),
		build("deleted-running-15m", time.Hour, held, func(plr *tektonv1.PipelineRun) {
			ts := ago(15 * time.Minute)
			plr.DeletionTimestamp = &ts
		}),
		build("routed", 50*time.Hour, nil, succeeded(48*time.Hour, true)),
		build("held-by-another-service", 50*time.Hour, []string{"example.com/other"}, succeeded(48*time.Hour, true)),
	}
	indexed := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(objs...)
	require.NoError(t, builds.IndexHeldBuilds(fakeIndexer{indexed}))
	r := indexed.Build()

	b, err := readBacklog(context.Background(), r, now)
	require.NoError(t, err)
	require.Equal(t, metrics.Backlog{
		OldestWaiting:  map[string]time.Duration{"Initialized": 3 * time.Hour, "Waiting": 26 * time.Hour, "Ready": 30 * time.Hour},
		OldestOverdue:  2 * time.Hour,
		OldestUnrouted: 20 * time.Minute,
	}, b)

	// As scraped: every waiting phase reported, 0 where no group waits.
	metrics.MeasureBacklogWith(func(ctx context.Context) (metrics.Backlog, error) { return readBacklog(ctx, r, now) })
	want := `
# HELP nudgeflow_build_oldest_unrouted_seconds Seconds since the oldest finished build PipelineRun still held under the build-routing finalizer finished (0: none).
# TYPE nudgeflow_build_oldest_unrouted_seconds gauge
nudgeflow_build_oldest_unrouted_seconds 1200
# HELP nudgeflow_changegroup_oldest_overdue_seconds Seconds the most overdue ChangeGroup still collecting (Initialized, Waiting) has been past its spec.timeout (0: none).
# TYPE nudgeflow_changegroup_oldest_overdue_seconds gauge
nudgeflow_changegroup_oldest_overdue_seconds 7200
# HELP nudgeflow_changegroup_oldest_waiting_seconds Age in seconds of the oldest ChangeGroup in each phase that is not final (0: none), from the bridge's cache.
# TYPE nudgeflow_changegroup_oldest_waiting_seconds gauge
nudgeflow_changegroup_oldest_waiting_seconds{phase="Initialized"} 10800
nudgeflow_changegroup_oldest_waiting_seconds{phase="Ready"} 108000
nudgeflow_changegroup_oldest_waiting_seconds{phase="Waiting"} 93600
`
	require.NoError(t, testutil.GatherAndCompare(metrics.Registry, strings.NewReader(want),
		metrics.ChangeGroupOldestWaiting, metrics.ChangeGroupOldestOverdue, metrics.BuildOldestUnrouted))
}

// fakeIndexer registers an index with a fake client's builder, as the manager's
// field indexer registers it with the cache.
type fakeIndexer struct{ b *fake.ClientBuilder }

func (f fakeIndexer) IndexField(_ context.Context, obj ctrlclient.Object, field string, extract ctrlclient.IndexerFunc) error {
	f.b.WithIndex(obj, field, extract)
	return nil
}
