package nudges

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"knative.dev/pkg/apis"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// Two builds race to one branch, and the older one's run is queued there: the
// newer build's launch created its run but listed the edge's runs before the older
// run existed, so it stopped nothing (supersession is check-then-act across two
// launches). When the branch frees, the bridge's release looks again: the older
// run is stopped, never started, so its older digest never lands over the newer
// one, and its Nudge ends Superseded (not failed, not retried).
//
// The newer launch caught in that window is played by the test: it creates the
// run that launch had created (nudgeflow's labels and annotations, the newer
// build's start, pending), and lets the real bridge and worker do the rest.
func TestOlderQueuedRunNeverStartsOverANewerBuild(t *testing.T) {
	f, older, running, waiting := simpleBranchTargetsOfOneBuild(t)
	target := konflux.NudgedKey.Get(waiting.Annotations)
	statuses := f.watchSpecStatus(waiting)

	// The newer build's run of the queued run's edge, as its launch left it (the
	// build itself is not created: its other Nudges would stop the older run the
	// way a launch that won the race does, which is not what this shows). Its
	// name sorts before every run name nudgeflow makes: the queue orders runs by
	// creation to the second, then by name, so when it is created in the same
	// second as the queued run (a warm world makes it so) it stands ahead of it,
	// undecided; the release must stop the older run all the same.
	newerBuild := "operand-on-push-2"
	newer := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{
		Name:        "renovate-nudge-000000000000-1",
		Labels:      waiting.Labels,
		Annotations: map[string]string{},
	}, Spec: waiting.Spec}
	for k, v := range waiting.Annotations {
		newer.Annotations[k] = v
	}
	delete(newer.Annotations, renovaterun.AnnotationQueuedForBranch)
	konflux.NudgingPipelineKey.Set(newer.Annotations, newerBuild)
	newer.Annotations[renovaterun.AnnotationBuiltAt] = time.Date(2026, 11, 1, 10, 2, 0, 0, time.UTC).Format(time.RFC3339Nano)
	newer.Annotations[renovate.AnnotationWorkflowID] = "racing-launch-of-" + newerBuild
	newer.Spec.Status = tektonv1.PipelineRunSpecStatusPending
	f.create(newer)
	t.Logf("queued run %s created %s, the newer build's run %s created %s",
		waiting.Name, waiting.CreationTimestamp.UTC().Format(time.RFC3339), newer.Name, newer.CreationTimestamp.UTC().Format(time.RFC3339))

	f.finish(running, true)
	world.Eventually(t, waitFor, "the older build's queued run is stopped for the newer one", func() (bool, error) {
		got := f.get(&waiting)
		waiting = *got
		return got.Spec.Status == tektonv1.PipelineRunSpecStatusCancelled, nil
	})
	require.Equal(t, newer.Name, waiting.Annotations[renovaterun.AnnotationSupersededBy])
	// Tekton ends a cancelled run that never started.
	require.NoError(t, world.SetStatus(f.ctx, f.w.Kube, &waiting, func() {
		waiting.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionFalse,
			Reason: tektonv1.PipelineRunReasonCancelled.String(), Message: "PipelineRun was cancelled"})
	}))
	res := f.nudgeResult(nudgeapi.WorkflowID(f.ns, string(older.UID), target))
	require.Equal(t, nudgeapi.PhaseSuperseded, res.Phase, res.Reason)
	require.Contains(t, res.Reason, newer.Name)
	require.Equal(t, 1, res.Attempts, "a superseded run is not retried")
	require.NotContains(t, statuses(), tektonv1.PipelineRunSpecStatus(""), "the older build's run never started")
}

// watchSpecStatus records every spec.status plr has from its version on, until the
// test ends; the returned func reads them.
func (f *fixture) watchSpecStatus(plr tektonv1.PipelineRun) func() []tektonv1.PipelineRunSpecStatus {
	f.t.Helper()
	c, err := ctrlclient.NewWithWatch(f.w.Config(), ctrlclient.Options{Scheme: kube.NewScheme()})
	require.NoError(f.t, err)
	ctx, cancel := context.WithCancel(f.ctx)
	w, err := c.Watch(ctx, &tektonv1.PipelineRunList{}, &ctrlclient.ListOptions{Namespace: f.ns,
		FieldSelector: fields.OneTermEqualSelector("metadata.name", plr.Name),
		Raw:           &metav1.ListOptions{ResourceVersion: plr.ResourceVersion}})
	require.NoError(f.t, err)
	var mu sync.Mutex
	seen := []tektonv1.PipelineRunSpecStatus{plr.Spec.Status}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if got, ok := ev.Object.(*tektonv1.PipelineRun); ok {
				mu.Lock()
				seen = append(seen, got.Spec.Status)
				mu.Unlock()
			}
		}
	}()
	f.t.Cleanup(func() { w.Stop(); cancel(); <-done })
	return func() []tektonv1.PipelineRunSpecStatus {
		mu.Lock()
		defer mu.Unlock()
		return append([]tektonv1.PipelineRunSpecStatus(nil), seen...)
	}
}
