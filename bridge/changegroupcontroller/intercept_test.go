package changegroupcontroller

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

// A hand-back nudge is never held by the group that handed it back (its CR may
// still say it collects), but is held by another group that collects the edge (a
// manual group, preferred over an automatic one).
func TestHandBackNudgeIsNotHeldByTheGroupThatHandedItBack(t *testing.T) {
	auto := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "bundle-batch-x", Namespace: "ns",
		Labels: map[string]string{grouplookup.LabelAutomatic: "true"}},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "a"}}}}
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(auto).Build()
	i := &Interceptor{Index: &grouplookup.Index{Cache: c}}
	decide := func(handedBackBy string) admission.Response {
		ann := map[string]string{konflux.AnnotationNudging: "a", konflux.AnnotationNudged: "bundle"}
		if handedBackBy != "" {
			ann[konflux.AnnotationHandedBackBy] = handedBackBy
		}
		raw, err := json.Marshal(map[string]any{"apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
			"metadata": map[string]any{"name": "renovate-x", "namespace": "ns", "labels": map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue}, "annotations": ann},
			"spec":     map[string]any{}})
		require.NoError(t, err)
		return i.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, Namespace: "ns", Object: runtime.RawExtension{Raw: raw}}})
	}
	require.NotEmpty(t, decide("").Patches, "an ordinary nudge of a held edge is cancelled")
	resp := decide("bundle-batch-x")
	require.True(t, resp.Allowed)
	require.Empty(t, resp.Patches, "the group that handed the build back does not take it again")

	manual := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "manual", Namespace: "ns"},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "a"}}}}
	require.NoError(t, c.Create(context.Background(), manual))
	resp = decide("bundle-batch-x")
	require.NotEmpty(t, resp.Patches, "another group collecting the edge holds it")
	var found bool
	for _, p := range resp.Patches {
		if v, ok := p.Value.(map[string]any); ok && v[konflux.AnnotationHeldBy] == "bundle=manual" {
			found = true
		}
		if p.Value == "bundle=manual" {
			found = true
		}
	}
	require.True(t, found, "held by the manual group: %+v", resp.Patches)
}

// The interceptor writes its JSON patch from what it changes. Applied to a nudge
// PipelineRun with and without annotations (one of them already set) and with and
// without a spec, it yields what the diff of the rewritten object did: the
// annotations set, everything else kept, spec.status Cancelled.
func TestCancelPatchSetsAnnotationsAndCancels(t *testing.T) {
	set := [][2]string{{konflux.AnnotationHeldBy, "bundle=g"}, {konflux.AnnotationCancelReason, "cancelled by ChangeGroup g"}, {"a/b~c", "x"}}
	for name, doc := range map[string]map[string]any{
		"annotations and spec": {"metadata": map[string]any{"name": "r", "annotations": map[string]any{"keep": "me", konflux.AnnotationHeldBy: "old"}},
			"spec": map[string]any{"pipelineRef": map[string]any{"name": "p"}, "status": "PipelineRunPending"}},
		"no annotations": {"metadata": map[string]any{"name": "r"}, "spec": map[string]any{"pipelineRef": map[string]any{"name": "p"}}},
		"no spec":        {"metadata": map[string]any{"name": "r", "annotations": map[string]any{}}},
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := json.Marshal(doc)
			require.NoError(t, err)
			meta := doc["metadata"].(map[string]any)
			_, hasAnn := meta["annotations"]
			_, hasSpec := doc["spec"]
			ops, err := json.Marshal(cancelPatch(hasAnn, hasSpec, set))
			require.NoError(t, err)
			p, err := jsonpatch.DecodePatch(ops)
			require.NoError(t, err)
			patched, err := p.Apply(raw)
			require.NoError(t, err)

			// The object as the interceptor meant it.
			ann, _ := meta["annotations"].(map[string]any)
			if ann == nil {
				ann = map[string]any{}
				meta["annotations"] = ann
			}
			for _, a := range set {
				ann[a[0]] = a[1]
			}
			spec, _ := doc["spec"].(map[string]any)
			if spec == nil {
				spec = map[string]any{}
				doc["spec"] = spec
			}
			spec["status"] = "Cancelled"
			want, err := json.Marshal(doc)
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(patched))
		})
	}
}

// Another service's nudge of a target that NudgeConfig batches, with no group
// open yet, is cancelled and held for the batch (the held-nudge reconciler opens
// it); a validated edge, an unbatched target and nudgeflow's own Renovate run are
// not; a target a group already holds stays the group's.
func TestNudgeOfABatchedTargetIsHeldForTheBatch(t *testing.T) {
	nc := &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName, Namespace: "ns"},
		Spec: konfluxv1alpha1.NudgeConfigSpec{
			Nudges: []konfluxv1alpha1.NudgeRelationship{
				{From: "a", To: "bundle", Mode: konfluxv1alpha1.ModeImmediate},
				{From: "a", To: "other", Mode: konfluxv1alpha1.ModeImmediate},
				{From: "v", To: "bundle", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "gate"},
			},
			Batching: []konfluxv1alpha1.BatchingPolicy{{Target: "bundle"}},
		}}
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(nc).Build()
	i := &Interceptor{Index: &grouplookup.Index{Cache: c}, Batches: NudgeConfigBatches{Reader: c}}
	decide := func(source, targets string, extra map[string]string) map[string]string {
		t.Helper()
		ann := map[string]string{konflux.AnnotationNudging: source, konflux.AnnotationNudged: targets}
		for k, v := range extra {
			ann[k] = v
		}
		doc := map[string]any{"apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
			"metadata": map[string]any{"name": "nudge-x", "namespace": "ns", "labels": map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue}, "annotations": ann},
			"spec":     map[string]any{}}
		raw, err := json.Marshal(doc)
		require.NoError(t, err)
		resp := i.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, Namespace: "ns", Object: runtime.RawExtension{Raw: raw}}})
		require.True(t, resp.Allowed)
		if len(resp.Patches) == 0 {
			return nil
		}
		ops, err := json.Marshal(resp.Patches)
		require.NoError(t, err)
		p, err := jsonpatch.DecodePatch(ops)
		require.NoError(t, err)
		patched, err := p.Apply(raw)
		require.NoError(t, err)
		var out struct {
			Metadata struct{ Annotations map[string]string } `json:"metadata"`
			Spec     struct{ Status string }                 `json:"spec"`
		}
		require.NoError(t, json.Unmarshal(patched, &out))
		require.Equal(t, "Cancelled", out.Spec.Status)
		return out.Metadata.Annotations
	}

	got := decide("a", "bundle other", nil)
	require.Equal(t, "bundle", got[konflux.AnnotationHeldForBatch], "the batched target waits for its batch")
	require.Equal(t, "other", got[konflux.AnnotationRenudge], "the other target is nudged by nudgeflow")
	require.Empty(t, got[konflux.AnnotationHeldBy])
	require.Contains(t, got[konflux.AnnotationCancelReason], "batch of bundle")

	require.Nil(t, decide("a", "other", nil), "an unbatched target runs")
	require.Nil(t, decide("v", "bundle", nil), "a validated edge is never another service's")
	require.Nil(t, decide("a", "bundle", map[string]string{konflux.AnnotationWorkflowID: "nudge/ns/uid/bundle"}),
		"nudgeflow's own run: the batch had its chance before the Nudge started")

	open := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "bundle-batch-x", Namespace: "ns",
		Labels: map[string]string{grouplookup.LabelAutomatic: "true"}},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "a"}}}}
	require.NoError(t, c.Create(context.Background(), open))
	got = decide("a", "bundle", nil)
	require.Equal(t, "bundle=bundle-batch-x", got[konflux.AnnotationHeldBy], "an open batch holds it as any group")
	require.Empty(t, got[konflux.AnnotationHeldForBatch])
}

// admit sends doc through the interceptor as the API server does on a create and
// returns the object it would store (doc when the interceptor changes nothing).
func admit(t *testing.T, i *Interceptor, doc []byte) ([]byte, admission.Response) {
	t.Helper()
	resp := i.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Namespace: "ns", Object: runtime.RawExtension{Raw: doc}}})
	require.True(t, resp.Allowed, "the interceptor never refuses a run: %+v", resp.Result)
	if len(resp.Patches) == 0 {
		return doc, resp
	}
	ops, err := json.Marshal(resp.Patches)
	require.NoError(t, err)
	p, err := jsonpatch.DecodePatch(ops)
	require.NoError(t, err)
	out, err := p.Apply(doc)
	require.NoError(t, err)
	return out, resp
}

type storedRun struct {
	Metadata struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Status string `json:"status"`
	} `json:"spec"`
}

func decodeRun(t *testing.T, raw []byte) storedRun {
	t.Helper()
	var r storedRun
	require.NoError(t, json.Unmarshal(raw, &r))
	return r
}

// kueuePends does what tekton-kueue's mutating webhook does to every PipelineRun
// it admits (internal/webhook/v1/pipelinerun_webhook.go Default): spec.status
// PipelineRunPending and its queue label.
func kueuePends(t *testing.T, raw []byte) []byte {
	t.Helper()
	var obj map[string]any
	require.NoError(t, json.Unmarshal(raw, &obj))
	meta := obj["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
	}
	labels["kueue.x-k8s.io/queue-name"] = "pipelines-queue"
	meta["labels"] = labels
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	spec["status"] = "PipelineRunPending"
	obj["spec"] = spec
	out, err := json.Marshal(obj)
	require.NoError(t, err)
	return out
}

// The interceptor is reinvoked (reinvocationPolicy IfNeeded) after tekton-kueue's
// webhook re-pends the run it cancelled. The second call puts Cancelled back and
// nothing else: the hold, the reason and the renudge list are the first call's,
// even when the groups changed in between (classifying again would now free the
// run). A third call on a run already cancelled changes nothing.
func TestReinvocationKeepsTheFirstDecision(t *testing.T) {
	g := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns"},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "a"}}}}
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(g).Build()
	i := &Interceptor{Index: &grouplookup.Index{Cache: c}}
	raw, err := json.Marshal(map[string]any{"apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
		"metadata": map[string]any{"name": "renovate-pipeline-0123456789ab", "namespace": "ns",
			"labels":      map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue},
			"annotations": map[string]string{konflux.AnnotationNudging: "a", konflux.AnnotationNudged: "bundle other"}},
		"spec": map[string]any{"pipelineSpec": map[string]any{"tasks": []any{map[string]any{"name": "renovate"}}}}})
	require.NoError(t, err)

	first, _ := admit(t, i, raw)
	decided := decodeRun(t, first)
	require.Equal(t, "Cancelled", decided.Spec.Status)
	require.Equal(t, "bundle=g", decided.Metadata.Annotations[konflux.AnnotationHeldBy])
	require.Equal(t, "other", decided.Metadata.Annotations[konflux.AnnotationRenudge])

	// The group goes between the two calls: classifying again would let the run go.
	require.NoError(t, c.Delete(context.Background(), g))
	pended := kueuePends(t, first)
	second, resp := admit(t, i, pended)
	require.Len(t, resp.Patches, 1, "only spec.status is written again: %+v", resp.Patches)
	again := decodeRun(t, second)
	require.Equal(t, "Cancelled", again.Spec.Status, "cancelled again after the later webhook")
	require.Equal(t, decided.Metadata.Annotations, again.Metadata.Annotations, "the first decision stands, written once")
	require.Equal(t, "pipelines-queue", again.Metadata.Labels["kueue.x-k8s.io/queue-name"], "the later webhook's other changes are kept")

	third, resp := admit(t, i, second)
	require.Empty(t, resp.Patches, "a run already cancelled by nudgeflow is left as it is")
	require.JSONEq(t, string(second), string(third))
}

// build-service and integration-service write their nudge PipelineRuns with the
// same label and annotation keys and the same space-joined target list
// (build-service internal/controller/renovate_util.go CreateRenovaterPipeline,
// integration-service tekton/nudging/nudge_pipeline.go CreateNudgePipelineRun and
// tekton/consts/consts.go); only the name differs (random suffix; sha256 of the
// build's UID). The keys are spelled out here, not taken from package konflux, so
// a typo there fails this test. Both runs of a partly held build are held alike.
func TestBothServicesNudgesAreHeldAlike(t *testing.T) {
	g := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns"},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "operand"}}}}
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(g).Build()
	i := &Interceptor{Index: &grouplookup.Index{Cache: c}}
	annotations := map[string]string{
		"build.appstudio.redhat.com/nudged-components": "bundle docs",
		"build.appstudio.redhat.com/nudging-commit":    "0123456789abcdef0123456789abcdef01234567",
		"build.appstudio.redhat.com/nudging-component": "operand",
		"build.appstudio.redhat.com/nudging-image":     "quay.io/org/operand:0123456789abcdef0123456789abcdef01234567",
		"build.appstudio.redhat.com/nudging-pipeline":  "operand-on-push-x7k2p",
	}
	runs := map[string]map[string]any{
		// build-service: renovate-pipeline-<unix time>-<5 random>, ServiceAccount of the nudging component.
		"build-service": {"name": "renovate-pipeline-1787312345-ab1cd", "serviceAccount": "build-pipeline-operand"},
		// integration-service: renovate-pipeline-<sha256(build UID)[:12]>, the build's ServiceAccount.
		"integration-service": {"name": "renovate-pipeline-" + fmt.Sprintf("%x", sha256.Sum256([]byte("build-uid")))[:12], "serviceAccount": "appstudio-pipeline"},
	}
	decisions := map[string]map[string]string{}
	for producer, r := range runs {
		raw, err := json.Marshal(map[string]any{"apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
			"metadata": map[string]any{"name": r["name"], "namespace": "ns",
				"labels": map[string]string{"build.appstudio.redhat.com/type": "nudge"}, "annotations": annotations},
			"spec": map[string]any{
				"pipelineSpec":    map[string]any{"tasks": []any{map[string]any{"name": "renovate"}}},
				"taskRunTemplate": map[string]any{"serviceAccountName": r["serviceAccount"]}}})
		require.NoError(t, err)
		out, _ := admit(t, i, raw)
		run := decodeRun(t, out)
		require.Equal(t, "Cancelled", run.Spec.Status, "%s's nudge of a held edge is cancelled", producer)
		decisions[producer] = run.Metadata.Annotations
	}
	require.Equal(t, "bundle=g", decisions["integration-service"][konflux.AnnotationHeldBy])
	require.Equal(t, "docs", decisions["integration-service"][konflux.AnnotationRenudge], "the target no group holds is nudged by nudgeflow")
	require.Equal(t, decisions["build-service"], decisions["integration-service"], "one decision whichever service nudges")
}

// build-service nudges every build-nudges-ref target at build time; when a
// Component lists a target that NudgeConfig makes a validated edge (admission
// refuses the edge only while the ref is there; the ref may come later), that
// nudge would be ungated and a second one. The interceptor cancels it: nudgeflow
// nudges the validated target after the tests, and the run's other targets are
// renudged.
func TestAnotherServicesNudgeOfAValidatedTargetIsCancelledToKeepTheGate(t *testing.T) {
	nc := &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName, Namespace: "ns"},
		Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: []konfluxv1alpha1.NudgeRelationship{
			{From: "a", To: "tests", Mode: konfluxv1alpha1.ModeValidated},
			{From: "a", To: "bundle", Mode: konfluxv1alpha1.ModeImmediate},
		}}}
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(nc).Build()
	i := &Interceptor{Index: &grouplookup.Index{Cache: c}, Batches: NudgeConfigBatches{Reader: c}, Gates: NudgeConfigBatches{Reader: c}}
	run := func(targets string, extra map[string]string) []byte {
		ann := map[string]string{konflux.AnnotationNudging: "a", konflux.AnnotationNudged: targets}
		for k, v := range extra {
			ann[k] = v
		}
		raw, err := json.Marshal(map[string]any{"apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
			"metadata": map[string]any{"name": "renovate-pipeline-1", "namespace": "ns",
				"labels": map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue}, "annotations": ann},
			"spec": map[string]any{}})
		require.NoError(t, err)
		return raw
	}

	out, _ := admit(t, i, run("bundle tests", nil))
	got := decodeRun(t, out)
	require.Equal(t, "Cancelled", got.Spec.Status, "the ungated nudge of tests never runs")
	require.Equal(t, "bundle", got.Metadata.Annotations[konflux.AnnotationRenudge], "bundle, immediate, is nudged by nudgeflow instead")
	require.Contains(t, got.Metadata.Annotations[konflux.AnnotationCancelReason], "validated edges to tests")
	require.True(t, konflux.HeldAtAdmission(got.Metadata.Annotations), "it stays cancelled whoever touches it")

	out, resp := admit(t, i, run("bundle", nil))
	require.Empty(t, resp.Patches, "an immediate target alone runs")
	require.Equal(t, "", decodeRun(t, out).Spec.Status)

	_, resp = admit(t, i, run("tests", map[string]string{konflux.AnnotationWorkflowID: "validated/ns/a/tests"}))
	require.Empty(t, resp.Patches, "nudgeflow's own run of the validated edge, after its tests, runs")
}
