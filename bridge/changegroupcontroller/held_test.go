package changegroupcontroller

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/autogroups"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

// A run held for a batch is decided once and the decision written on it: the
// batched target gets its (newly opened) automatic group in held-by, a target no
// longer batched goes to renudge, and what was decided before stays. A second pass
// changes nothing, so a resync never opens a second batch.
func TestHeldForBatchIsDecidedOnceOnTheRun(t *testing.T) {
	nc := &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName, Namespace: "ns", UID: "nc-uid"},
		Spec: konfluxv1alpha1.NudgeConfigSpec{
			Nudges:   []konfluxv1alpha1.NudgeRelationship{{From: "a", To: "bundle", Mode: konfluxv1alpha1.ModeImmediate}, {From: "a", To: "other", Mode: konfluxv1alpha1.ModeImmediate}},
			Batching: []konfluxv1alpha1.BatchingPolicy{{Target: "bundle"}},
		}}
	plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "nudge-x", Namespace: "ns", Annotations: map[string]string{
		konflux.AnnotationNudging: "a", konflux.AnnotationNudged: "bundle other third",
		konflux.AnnotationHeldForBatch: "bundle other", konflux.AnnotationRenudge: "third"}}}
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(nc, plr).Build()
	r := &HeldReconciler{Kube: c, Batches: &autogroups.Opener{Kube: c, Live: c}}
	ctx := context.Background()
	stale := plr.DeepCopy() // as the cache may still hand it out after the decision

	require.NoError(t, r.decideBatches(ctx, plr))
	var got tektonv1.PipelineRun
	require.NoError(t, c.Get(ctx, ctrlclient.ObjectKeyFromObject(plr), &got))
	held := ParseHeldBy(got.Annotations[konflux.AnnotationHeldBy])
	require.Len(t, held, 1)
	require.True(t, strings.HasPrefix(held["bundle"], autogroups.GenerateName("bundle")), "the batch opened for it: %v", held)
	require.Equal(t, "third other", got.Annotations[konflux.AnnotationRenudge], "no longer batched: nudged normally, after what was there")
	require.Empty(t, got.Annotations[konflux.AnnotationHeldForBatch], "decided")

	// Held for a batch again (a restore from backup): the recorded group stands.
	got.Annotations[konflux.AnnotationHeldForBatch] = "bundle"
	require.NoError(t, c.Update(ctx, &got))
	require.NoError(t, r.decideBatches(ctx, &got))
	require.Equal(t, held["bundle"], ParseHeldBy(got.Annotations[konflux.AnnotationHeldBy])["bundle"])
	require.Equal(t, "third other", got.Annotations[konflux.AnnotationRenudge])
	var groups appstudiov1alpha1.ChangeGroupList
	require.NoError(t, c.List(ctx, &groups))
	require.Len(t, groups.Items, 1, "one batch opened, whatever the passes")

	// A stale copy of the run (as the cache may hand it out) still shows it held
	// for a batch, and the batch no longer collects (released): the decision is
	// taken on the API server's copy, not again, so no second batch opens.
	cg := groups.Items[0]
	cg.Status.Phase = appstudiov1alpha1.PhaseReady
	require.NoError(t, c.Update(ctx, &cg)) // the fake has no status subresource: Update writes it
	require.NoError(t, r.decideBatches(ctx, stale))
	require.NoError(t, c.List(ctx, &groups))
	require.Len(t, groups.Items, 1, "no second batch from a stale copy")
}

type renudges struct{ calls [][]string }

func (r *renudges) Renudge(_ context.Context, _ *tektonv1.PipelineRun, targets []string) error {
	r.calls = append(r.calls, targets)
	return nil
}

// A held run whose targets all went back to normal nudging is still reconciled
// (a restart must not forget it), nudges them once, and is then settled: a later
// resync nudges nothing again, long after any group or workflow that could tell.
func TestHeldRunIsSettledOnce(t *testing.T) {
	build := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "a-on-push-1", Namespace: "ns"}}
	build.Status.Results = []tektonv1.PipelineRunResult{
		{Name: konflux.ResultImageURL, Value: *tektonv1.NewStructuredValues("quay.io/org/a:tag")},
		{Name: konflux.ResultImageDigest, Value: *tektonv1.NewStructuredValues("sha256:1")},
	}
	plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "nudge-x", Namespace: "ns", Annotations: map[string]string{
		konflux.AnnotationNudging: "a", konflux.AnnotationNudged: "bundle", konflux.AnnotationNudgingPLR: build.Name,
		konflux.AnnotationRenudge: "bundle"}}}
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(build, plr).Build()
	rn := &renudges{}
	r := &HeldReconciler{Kube: c, APIReader: c, Renudger: rn}
	require.True(t, heldOnly.Generic(event.GenericEvent{Object: plr}), "a run with only targets to nudge again is watched")

	ctx := context.Background()
	req := ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(plr)}
	_, err := r.Reconcile(ctx, req)
	require.NoError(t, err)
	require.Equal(t, [][]string{{"bundle"}}, rn.calls)
	var got tektonv1.PipelineRun
	require.NoError(t, c.Get(ctx, req.NamespacedName, &got))
	require.Equal(t, "renudged=bundle", got.Annotations[konflux.AnnotationHeldSettled])

	_, err = r.Reconcile(ctx, req)
	require.NoError(t, err)
	require.Len(t, rn.calls, 1, "settled: nothing is nudged again")
}

// Which runs the held-nudge reconciler cancels again: a run the interceptor
// cancelled (held for a group or a batch, or left with only targets to nudge again
// once its batches were decided) that another webhook re-pended or Kueue admitted,
// as long as it has not finished. Never a run the interceptor did not cancel:
// nudgeflow's own Renovate run is created pending and released by the worker, and
// another service's run nobody holds is not nudgeflow's to stop.
func TestReopenedHeldRuns(t *testing.T) {
	const (
		pending   = tektonv1.PipelineRunSpecStatusPending
		cancelled = tektonv1.PipelineRunSpecStatusCancelled
	)
	held := map[string]string{konflux.AnnotationHeldBy: "bundle=g", konflux.AnnotationCancelReason: "cancelled by ChangeGroup g"}
	forBatch := map[string]string{konflux.AnnotationHeldForBatch: "bundle", konflux.AnnotationCancelReason: "cancelled by the batch of bundle"}
	renudgeOnly := map[string]string{konflux.AnnotationRenudge: "bundle", konflux.AnnotationCancelReason: "cancelled by the batch of bundle"}
	own := map[string]string{konflux.AnnotationWorkflowID: "nudge/ns/uid/bundle"}
	ownHandedBack := map[string]string{konflux.AnnotationWorkflowID: "nudge/ns/uid/bundle", konflux.AnnotationHandedBackBy: "g"}
	ownHeld := map[string]string{konflux.AnnotationWorkflowID: "nudge/ns/uid/bundle", konflux.AnnotationHeldBy: "bundle=g",
		konflux.AnnotationCancelReason: "cancelled by ChangeGroup g", konflux.AnnotationHeldOutcome: "delivered=g"}
	settled := map[string]string{konflux.AnnotationHeldBy: "bundle=g", konflux.AnnotationCancelReason: "cancelled by ChangeGroup g",
		konflux.AnnotationHeldSettled: "delivered=bundle=g"}
	others := map[string]string{konflux.AnnotationNudging: "a", konflux.AnnotationNudged: "bundle"}
	now := metav1.Now()
	for _, c := range []struct {
		name        string
		annotations map[string]string
		status      tektonv1.PipelineRunSpecStatus
		mutate      func(*tektonv1.PipelineRun)
		want        bool
	}{
		{"held, re-pended by a later webhook", held, pending, nil, true},
		{"held, admitted by Kueue", held, "", nil, true},
		{"held, stopped another way", held, tektonv1.PipelineRunSpecStatusStoppedRunFinally, nil, true},
		{"held for a batch, admitted", forBatch, "", nil, true},
		{"batches decided, only renudge left, admitted", renudgeOnly, "", nil, true},
		{"settled long ago, admitted now", settled, "", nil, true},
		{"own run held, admitted", ownHeld, "", nil, true},
		{"held and still cancelled", held, cancelled, nil, false},
		{"held, admitted, but finished", held, "", func(p *tektonv1.PipelineRun) {
			p.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: corev1.ConditionFalse, Reason: "Cancelled"}}
		}, false},
		{"held, admitted, completion time set", held, "", func(p *tektonv1.PipelineRun) { p.Status.CompletionTime = &now }, false},
		{"held, admitted, being deleted", held, "", func(p *tektonv1.PipelineRun) { p.DeletionTimestamp = &now }, false},
		{"own run pending, not held", own, pending, nil, false},
		{"own run released by the worker, not held", own, "", nil, false},
		{"own hand-back run released, not held", ownHandedBack, "", nil, false},
		{"another service's run nobody held, admitted", others, "", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "nudge-x", Namespace: "ns",
				Labels: map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue}, Annotations: c.annotations},
				Spec: tektonv1.PipelineRunSpec{Status: c.status}}
			if c.mutate != nil {
				c.mutate(plr)
			}
			require.Equal(t, c.want, reopened(plr))
			if konflux.HeldAtAdmission(c.annotations) {
				require.True(t, heldOnly.Generic(event.GenericEvent{Object: plr}), "every run the interceptor cancelled is watched")
			}
		})
	}
}
