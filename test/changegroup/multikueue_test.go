package changegroup_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/changegroupcontroller"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// tekton-kueue with multiKueueOverride writes spec.managedBy
// kueue.x-k8s.io/multikueue on every PipelineRun, after nudgeflow's interceptor.
// A run nudgeflow holds, and nudgeflow's own Renovate run, are stored without it
// (they stay where the held-nudge reconciler and the worker reach them, and where
// their Secret is); another service's run no group holds keeps it. The held run is
// integration-service's, with the Secret, ConfigMap and CA copy integration-service
// creates before it, owned by nothing: once the run is cancelled the bridge deletes
// exactly those, and the namespace's other Secrets stay. It prints
//
//	multikueue held_kept_here=N own_kept_here=1 other_left_to_multikueue=1 is_objects_deleted=3
func TestHeldAndOwnNudgesStayOffMultiKueue(t *testing.T) {
	s := newScenario(t, "operand-a", "operand-b")
	ctx := context.Background()
	kueue := installKueueStandInWith(t, s.w, s.ns, changegroupcontroller.ManagedByMultiKueue)
	nudgeflowFirst(t, s.w, kueue.configName)
	s.createGroup("g", []string{"operand-a", "operand-b"}, 0)
	s.explainOnFailure("g")

	build := s.buildRunWith("operand-a", digestOf("operand-a", 1), time.Now(), nil)
	isRun := integrationServiceNudge(s.ns, "operand-a", []string{"bundle"}, build)
	// What integration-service creates before its run (IS
	// tekton/nudging/nudge_pipeline.go:369-394,464-504 at 2ae2878).
	suffix := isRun.Name[len("renovate-pipeline-"):]
	caName := "renovate-ca-" + suffix
	task := &isRun.Spec.PipelineSpec.Tasks[0].TaskSpec.TaskSpec
	task.Volumes = []corev1.Volume{
		{Name: isRun.Name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: isRun.Name}}}},
		{Name: "trusted-ca", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: caName},
			Items: []corev1.KeyToPath{{Key: "ca-bundle.crt", Path: "tls-ca-bundle.pem"}}}}},
	}
	isObjects := []ctrlclient.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: isRun.Name, Namespace: s.ns}, StringData: map[string]string{"token_0": "scm-token", "image_0": "registry-password"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: isRun.Name, Namespace: s.ns}, Data: map[string]string{"bundle-0.json": "{}"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: caName, Namespace: s.ns}, Data: map[string]string{"ca-bundle.crt": "pem"}},
	}
	for _, obj := range isObjects {
		require.NoError(t, s.w.Kube.Create(ctx, obj))
	}
	own := workerRun(s.ns, "operand-a", "not-in-any-group", build)
	other := buildServiceNudge(s.ns, "operand-a", []string{"not-in-any-group"}, build)

	held := []*tektonv1.PipelineRun{isRun, workerRun(s.ns, "operand-a", "bundle", build)}
	for _, plr := range held {
		require.NoError(t, s.w.Kube.Create(ctx, plr))
		require.Equal(t, tektonv1.PipelineRunSpecStatusCancelled, string(plr.Spec.Status), "%s held", plr.Name)
		require.Nil(t, plr.Spec.ManagedBy, "%s is stored without MultiKueue's managedBy", plr.Name)
		require.Equal(t, "pipelines-queue", plr.Labels[kueueQueueLabel], "%s went through tekton-kueue's webhook", plr.Name)
	}
	require.NoError(t, s.w.Kube.Create(ctx, own))
	require.False(t, konflux.HeldAtAdmission(own.Annotations))
	require.Equal(t, tektonv1.PipelineRunSpecStatusPending, string(own.Spec.Status))
	require.Nil(t, own.Spec.ManagedBy, "nudgeflow's own run stays where its Secret is")
	require.NoError(t, s.w.Kube.Create(ctx, other))
	require.False(t, konflux.HeldAtAdmission(other.Annotations))
	require.Equal(t, changegroupcontroller.ManagedByMultiKueue, ptr.Deref(other.Spec.ManagedBy, ""), "another service's run no group holds is left to MultiKueue")

	// integration-service's objects of the held run go; the namespace's others stay.
	world.Eventually(t, 30*time.Second, "integration-service's objects of the cancelled run deleted", func() (bool, error) {
		for _, obj := range isObjects {
			err := s.w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(obj), obj)
			if err == nil {
				return false, fmt.Errorf("%T %s still there", obj, obj.GetName())
			}
			if !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return true, nil
	})
	waitEvent(t, s.w, isRun, changegroupcontroller.ReasonRunObjectsDeleted, "integration-service created them for this run")
	require.NoError(t, s.w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: s.ns, Name: "forge"}, &corev1.Secret{}), "the tenant's SCM Secret stays")
	s.waitFor("g", "the group has operand-a's build", 60*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool {
		return statusOf(cg, "operand-a").NewBuild == digestOf("operand-a", 1)
	})
	fmt.Printf("multikueue held_kept_here=%d own_kept_here=1 other_left_to_multikueue=1 is_objects_deleted=%d\n", len(held), len(isObjects))
}
