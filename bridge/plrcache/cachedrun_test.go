package plrcache

import (
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// TestCachedRunRoundTrip: what a reader gets from the cache (a cachedRun expanded)
// is the stripped run, field by field, for builds and nudges with and without
// each optional part: deletion, finalizers, held spec.status, no labels, empty
// label maps, array and object results, no condition.
func TestCachedRunRoundTrip(t *testing.T) {
	created, start, done := metav1.Unix(900, 0), metav1.Unix(1000, 0), metav1.Unix(1600, 5)
	grace := int64(30)
	build := func() *tektonv1.PipelineRun {
		return &tektonv1.PipelineRun{
			ObjectMeta: metav1.ObjectMeta{
				Name: "operand-on-push-1", Namespace: "ns", UID: "0f9a8b7c-1d2e-4f30-a1b2-c3d4e5f6a7b8", ResourceVersion: "7", Generation: 1,
				CreationTimestamp: created,
				Labels: map[string]string{konflux.LabelComponent: "operand", konflux.LabelPipelineType: "build",
					"pipelinesascode.tekton.dev/sha": "abc", "tekton.dev/pipeline": "docker-build"},
				Annotations: map[string]string{konflux.AnnotationEventType: "push", konflux.AnnotationRepo: "https://github.com/org/operand?rev=abc",
					"build.appstudio.redhat.com/commit_sha": "abc", "pipelinesascode.tekton.dev/log-url": "https://console.example.com/abc"},
			},
			Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "docker-build"}},
			Status: tektonv1.PipelineRunStatus{
				Status: duckv1.Status{Conditions: duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue,
					Reason: "Succeeded", Message: "Tasks Completed: 19", LastTransitionTime: apis.VolatileTime{Inner: done}}}},
				PipelineRunStatusFields: tektonv1.PipelineRunStatusFields{StartTime: &start, CompletionTime: &done,
					Results: []tektonv1.PipelineRunResult{
						{Name: konflux.ResultImageURL, Value: *tektonv1.NewStructuredValues("quay.io/org/operand:abc")},
						{Name: konflux.ResultImageDigest, Value: *tektonv1.NewStructuredValues("sha256:0123")},
					}},
			},
		}
	}
	cases := map[string]func(*tektonv1.PipelineRun){
		"a finished build": func(*tektonv1.PipelineRun) {},
		"a build being deleted under the routing finalizer": func(p *tektonv1.PipelineRun) {
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &done, &grace
			p.Finalizers = []string{konflux.FinalizerBuildRouting}
		},
		"a running build": func(p *tektonv1.PipelineRun) {
			p.Status.Conditions[0].Status, p.Status.Conditions[0].Reason = corev1.ConditionUnknown, "Running"
			p.Status.CompletionTime, p.Status.Results = nil, nil
		},
		"a new build without status": func(p *tektonv1.PipelineRun) { p.Status = tektonv1.PipelineRunStatus{} },
		"a run without labels or annotations": func(p *tektonv1.PipelineRun) {
			p.Labels, p.Annotations = nil, nil
		},
		"a run whose keys are all dropped": func(p *tektonv1.PipelineRun) {
			p.Labels, p.Annotations = map[string]string{"tekton.dev/pipeline": "x"}, map[string]string{}
		},
		"a held nudge with its outcome": func(p *tektonv1.PipelineRun) {
			p.Labels = map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue, renovaterun.LabelManagedBy: renovaterun.ManagedByNudgeflow}
			p.Annotations = map[string]string{konflux.AnnotationHeldBy: "bundle=g", konflux.AnnotationWorkflowID: "wf"}
			p.Spec.Status = tektonv1.PipelineRunSpecStatusPending
			p.Status.Conditions[0].Status, p.Status.Conditions[0].Reason = corev1.ConditionFalse, "Failed"
			p.Status.Conditions[0].Message = "renovate: registry auth failed"
			p.Status.Results = []tektonv1.PipelineRunResult{
				{Name: renovaterun.ResultOutcome, Value: *tektonv1.NewStructuredValues(renovaterun.OutcomeRegistryAuthFailed)},
				{Name: konflux.ResultImageURL, Value: *tektonv1.NewStructuredValues("a", "b")},
				{Name: konflux.ResultImageDigest, Value: *tektonv1.NewObject(map[string]string{"k": "v"})},
			}
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			full := build()
			change(full)
			stripped, err := stripPipelineRun(full.DeepCopy())
			require.NoError(t, err)
			want := stripped.(*tektonv1.PipelineRun)
			want.TypeMeta = metav1.TypeMeta{APIVersion: "tekton.dev/v1", Kind: "PipelineRun"}

			cached, err := CompactPipelineRun(full.DeepCopy())
			require.NoError(t, err)
			run := cached.(*cachedRun)
			got := run.expand()
			require.True(t, apiequality.Semantic.DeepEqual(want, got), "expanded:\n%+v\nstripped:\n%+v", got, want)

			// What the informer's own functions read of the cachedRun itself.
			key, err := toolscache.MetaNamespaceKeyFunc(run)
			require.NoError(t, err)
			require.Equal(t, "ns/operand-on-push-1", key)
			require.Equal(t, want.Labels, run.GetLabels())
			require.Equal(t, want.Annotations, run.GetAnnotations())
			require.Equal(t, want.Finalizers, run.GetFinalizers())
			for k, v := range want.Labels {
				require.True(t, labels.SelectorFromSet(labels.Set{k: v}).Matches(cachedLabels{run}), k)
			}
			require.False(t, labels.SelectorFromSet(labels.Set{"absent": "x"}).Matches(cachedLabels{run}))

			// Compacting a compact run (the first list's pages) changes nothing;
			// a copy is equal and independent of the original's rare fields.
			again, err := CompactPipelineRun(run)
			require.NoError(t, err)
			require.Same(t, run, again)
			cp := run.DeepCopyObject().(*cachedRun)
			cp.SetFinalizers([]string{"other"})
			require.Equal(t, want.Finalizers, run.GetFinalizers())

			// An expanded run is the reader's own: writing it leaves the cache alone.
			if got.Labels != nil {
				got.Labels["written"] = "x"
			}
			if len(got.Status.Results) > 0 {
				got.Status.Results[0].Value.StringVal = "written"
			}
			require.True(t, apiequality.Semantic.DeepEqual(want, run.expand()))
		})
	}
}

// TestCachedRunHandlersAndIndexersSeePipelineRuns: what an informer hands a
// handler or indexer of the bridge is a PipelineRun, tombstones included.
func TestCachedRunHandlersAndIndexersSeePipelineRuns(t *testing.T) {
	cached, err := CompactPipelineRun(&tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}})
	require.NoError(t, err)
	var got []any
	h := expandingHandler{toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { got = append(got, o) },
		UpdateFunc: func(o, n any) { got = append(got, o, n) },
		DeleteFunc: func(o any) { got = append(got, o) },
	}}
	h.OnAdd(cached, true)
	h.OnUpdate(cached, cached)
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/a", Obj: cached})
	require.Len(t, got, 4)
	for _, o := range got[:3] {
		require.IsType(t, &tektonv1.PipelineRun{}, o)
	}
	require.IsType(t, &tektonv1.PipelineRun{}, got[3].(toolscache.DeletedFinalStateUnknown).Obj)
	require.Equal(t, "a", expandCached(cached).(*tektonv1.PipelineRun).Name)
	require.Equal(t, "not a run", expandCached("not a run"))
}
