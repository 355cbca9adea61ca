package changegroupcontroller

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

// isRun is integration-service's nudge run as CreateNudgePipelineRun writes it
// (IS:tekton/nudging/nudge_pipeline.go:410-490 at 2ae2878): the Secret read with
// envFrom prefix TOKEN_, the ConfigMap and the CA copy mounted as volumes.
func isRun(name, suffix string) *tektonv1.PipelineRun {
	return &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
			Labels: map[string]string{"build.appstudio.redhat.com/type": "nudge"},
			Annotations: map[string]string{konflux.AnnotationNudging: "a", konflux.AnnotationNudged: "bundle",
				konflux.AnnotationHeldBy: "bundle=g", konflux.AnnotationCancelReason: "cancelled by ChangeGroup g"}},
		Spec: tektonv1.PipelineRunSpec{Status: tektonv1.PipelineRunSpecStatusCancelled, PipelineSpec: &tektonv1.PipelineSpec{Tasks: []tektonv1.PipelineTask{{
			Name: "renovate",
			TaskSpec: &tektonv1.EmbeddedTask{TaskSpec: tektonv1.TaskSpec{
				Steps: []tektonv1.Step{{Name: "renovate", Image: "renovate",
					EnvFrom:      []corev1.EnvFromSource{{Prefix: "TOKEN_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}},
					VolumeMounts: []corev1.VolumeMount{{Name: name, MountPath: "/configs"}, {Name: "trusted-ca", MountPath: "/etc/pki/ca-trust/extracted/pem"}}}},
				Volumes: []corev1.Volume{
					{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}},
					{Name: "trusted-ca", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "renovate-ca-" + suffix}}}},
				},
			}},
		}}}},
	}
}

// Only integration-service's run, and only what it references under the names
// integration-service gives them: not build-service's (other names, owned objects),
// not nudgeflow's own, not a name the run references under another shape.
func TestISRunObjectsAreWhatTheRunReferencesByISNames(t *testing.T) {
	run := isRun("renovate-pipeline-0123456789ab", "0123456789ab")
	secrets, cms, ok := ISRunObjects(run)
	require.True(t, ok)
	require.Equal(t, []string{"renovate-pipeline-0123456789ab"}, secrets)
	require.Equal(t, []string{"renovate-pipeline-0123456789ab", "renovate-ca-0123456789ab"}, cms)

	bs := isRun("renovate-pipeline-1787312345-ab1cd", "1787312345-ab1cd")
	_, _, ok = ISRunObjects(bs)
	require.False(t, ok, "build-service's run: its objects are owned by it")

	own := isRun("renovate-pipeline-0123456789ab", "0123456789ab")
	own.Annotations[konflux.AnnotationWorkflowID] = "nudge-x"
	_, _, ok = ISRunObjects(own)
	require.False(t, ok, "nudgeflow's own run")

	// A run that names another Secret and CA ConfigMap than its own: nothing of
	// them is taken, whatever the run says.
	odd := isRun("renovate-pipeline-0123456789ab", "ffffffffffff")
	odd.Spec.PipelineSpec.Tasks[0].TaskSpec.Steps[0].EnvFrom[0].SecretRef.Name = "scm-github"
	secrets, cms, ok = ISRunObjects(odd)
	require.True(t, ok)
	require.Empty(t, secrets)
	require.Equal(t, []string{"renovate-pipeline-0123456789ab"}, cms)
}

// The held-nudge reconciler deletes them once the run is cancelled at admission
// (reading what the run references from the API server, past the stripped cache),
// leaves the namespace's other Secrets and ConfigMaps alone, says so once in an
// Event, and a second pass (a resync) is no error.
func TestCancelledISRunObjectsAreDeleted(t *testing.T) {
	name := "renovate-pipeline-0123456789ab"
	run := isRun(name, "0123456789ab")
	objs := []ctrlclient.Object{run,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Data: map[string][]byte{"token_0": []byte("t")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Data: map[string]string{"bundle-0.json": "{}"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "renovate-ca-0123456789ab", Namespace: "ns"}, Data: map[string]string{"ca-bundle.crt": "x"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "scm-github", Namespace: "ns"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "renovate-pipeline-ba9876543210", Namespace: "ns"}},
	}
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(objs...).Build()
	rec := record.NewFakeRecorder(10)
	r := &HeldReconciler{Kube: c, Recorder: rec}
	ctx := context.Background()

	// As the informer holds it: without its spec (plrcache.StripPipelineRun).
	cached := run.DeepCopy()
	cached.Spec.PipelineSpec = nil
	require.NoError(t, r.deleteISRunObjects(ctx, cached))
	for _, obj := range []ctrlclient.Object{&corev1.Secret{}, &corev1.ConfigMap{}} {
		err := c.Get(ctx, ctrlclient.ObjectKey{Namespace: "ns", Name: name}, obj)
		require.True(t, apierrors.IsNotFound(err), "%T %s deleted: %v", obj, name, err)
	}
	require.True(t, apierrors.IsNotFound(c.Get(ctx, ctrlclient.ObjectKey{Namespace: "ns", Name: "renovate-ca-0123456789ab"}, &corev1.ConfigMap{})))
	for _, other := range []string{"scm-github", "renovate-pipeline-ba9876543210"} {
		require.NoError(t, c.Get(ctx, ctrlclient.ObjectKey{Namespace: "ns", Name: other}, &corev1.Secret{}), "Secret %s kept", other)
	}
	require.Len(t, rec.Events, 1)
	require.Contains(t, <-rec.Events, ReasonRunObjectsDeleted)

	require.NoError(t, r.deleteISRunObjects(ctx, cached), "again: nothing left, no error")
	require.Empty(t, rec.Events, "no second Event")

	// A run nudgeflow did not cancel keeps them: integration-service's to run.
	free := isRun("renovate-pipeline-ba9876543210", "ba9876543210")
	free.Annotations = map[string]string{konflux.AnnotationNudging: "a", konflux.AnnotationNudged: "bundle"}
	free.Spec.Status = ""
	require.NoError(t, r.deleteISRunObjects(ctx, free))
	require.NoError(t, c.Get(ctx, ctrlclient.ObjectKey{Namespace: "ns", Name: "renovate-pipeline-ba9876543210"}, &corev1.Secret{}))
}

// tekton-kueue with multiKueueOverride writes spec.managedBy MultiKueue after the
// interceptor: the reinvocation takes it off a run nudgeflow cancels and off
// nudgeflow's own run, and leaves it on another service's run nobody holds.
func TestHeldAndOwnRunsStayOnThisCluster(t *testing.T) {
	g := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns"},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "a"}}}}
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(g).Build()
	i := &Interceptor{Index: &grouplookup.Index{Cache: c}}
	doc := func(source string, own bool) []byte {
		labels := map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue}
		annotations := map[string]string{konflux.AnnotationNudging: source, konflux.AnnotationNudged: "bundle"}
		if own {
			labels["app.kubernetes.io/managed-by"] = "nudgeflow"
			annotations[konflux.AnnotationWorkflowID] = "nudge-x"
		}
		raw, err := json.Marshal(map[string]any{"apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
			"metadata": map[string]any{"name": "r", "namespace": "ns", "labels": labels, "annotations": annotations},
			"spec":     map[string]any{"pipelineSpec": map[string]any{"tasks": []any{map[string]any{"name": "renovate"}}}}})
		require.NoError(t, err)
		return raw
	}
	managedBy := func(raw []byte) any {
		var obj map[string]any
		require.NoError(t, json.Unmarshal(raw, &obj))
		return obj["spec"].(map[string]any)["managedBy"]
	}
	for _, tc := range []struct {
		name   string
		doc    []byte
		status string
		stays  bool
	}{
		{"held", doc("a", false), "Cancelled", true},
		{"own, not held", doc("b", true), "PipelineRunPending", true},
		{"another service's, not held", doc("b", false), "PipelineRunPending", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first, _ := admit(t, i, tc.doc)
			require.Nil(t, managedBy(first), "nobody set it yet")
			after := multiKueuePends(t, kueuePends(t, first))
			second, _ := admit(t, i, after)
			require.Equal(t, tc.status, decodeRun(t, second).Spec.Status)
			if tc.stays {
				require.Nil(t, managedBy(second), "kept on this cluster")
			} else {
				require.Equal(t, ManagedByMultiKueue, managedBy(second), "left to MultiKueue")
			}
			third, resp := admit(t, i, second)
			require.Empty(t, resp.Patches, "nothing more to change")
			require.JSONEq(t, string(second), string(third))
		})
	}
}

// multiKueuePends adds what tekton-kueue's webhook writes with multiKueueOverride
// (internal/webhook/v1/pipelinerun_webhook.go Default).
func multiKueuePends(t *testing.T, raw []byte) []byte {
	t.Helper()
	var obj map[string]any
	require.NoError(t, json.Unmarshal(raw, &obj))
	obj["spec"].(map[string]any)["managedBy"] = ManagedByMultiKueue
	out, err := json.Marshal(obj)
	require.NoError(t, err)
	return out
}

// A delete the API server refuses (the policy: the object is no longer shaped as
// integration-service writes it) is a Warning Event, not an error retried forever;
// the other objects are still deleted.
func TestRefusedDeleteIsReportedNotRetried(t *testing.T) {
	name := "renovate-pipeline-0123456789ab"
	run := isRun(name, "0123456789ab")
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(run,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}).
		WithInterceptorFuncs(interceptor.Funcs{Delete: func(ctx context.Context, c ctrlclient.WithWatch, obj ctrlclient.Object, opts ...ctrlclient.DeleteOption) error {
			if _, ok := obj.(*corev1.Secret); ok {
				return apierrors.NewForbidden(corev1.Resource("secrets"), obj.GetName(), errors.New("ValidatingAdmissionPolicy 'nudgeflow-bridge-deletes' denied request"))
			}
			return c.Delete(ctx, obj, opts...)
		}}).Build()
	rec := record.NewFakeRecorder(10)
	r := &HeldReconciler{Kube: c, Recorder: rec}
	require.NoError(t, r.deleteISRunObjects(context.Background(), run))
	require.True(t, apierrors.IsNotFound(c.Get(context.Background(), ctrlclient.ObjectKey{Namespace: "ns", Name: name}, &corev1.ConfigMap{})), "the ConfigMap is deleted")
	require.Len(t, rec.Events, 2)
	require.Contains(t, <-rec.Events, ReasonRunObjectsNotDeleted)
	require.Contains(t, <-rec.Events, ReasonRunObjectsDeleted)
}
