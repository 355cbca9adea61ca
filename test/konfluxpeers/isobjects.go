package konfluxpeers

import (
	"context"
	"fmt"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// WithISObjects creates, before integration-service's nudge run (as
// CreateNudgePipelineRun does: "Create supporting resources before the PipelineRun
// so a partial failure on retry won't leave a running PLR without its
// Secret/ConfigMap"), the run's Secret (token_<i>, image_<i>: each target's SCM
// token and registry password), its ConfigMap (<component>-<i>.json: each target's
// Renovate config), both named after the run, with no labels and no owner
// reference (IS:tekton/nudging/nudge_pipeline.go:314-329,369-394 at 2ae2878); and
// makes the run read them as integration-service's does (envFrom prefix TOKEN_,
// the ConfigMap as the volume named like the run). Existing objects are kept
// (createIfNotExists). integration-service also copies a trusted CA bundle,
// renovate-ca-<suffix>, when its own namespace holds one: the stand-ins model a
// cluster without (they see only the tenant's namespace); the bridge's deletion
// of the copy is tested in bridge/changegroupcontroller and test/tenancy.
func WithISObjects(ctx context.Context, c ctrlclient.Client, run *tektonv1.PipelineRun, targets []string) error {
	tokens, configs := map[string]string{}, map[string]string{}
	for i, t := range targets {
		tokens[fmt.Sprintf("token_%d", i)] = "scm-token-for-" + t
		tokens[fmt.Sprintf("image_%d", i)] = "registry-password"
		configs[fmt.Sprintf("%s-%d.json", t, i)] = fmt.Sprintf(`{"repositories":[{"repository":"org/%s"}]}`, t)
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: run.Namespace} }
	objs := []ctrlclient.Object{
		&corev1.Secret{ObjectMeta: meta(run.Name), StringData: tokens},
		&corev1.ConfigMap{ObjectMeta: meta(run.Name), Data: configs},
	}
	task := &run.Spec.PipelineSpec.Tasks[0].TaskSpec.TaskSpec
	step := &task.Steps[0]
	step.EnvFrom = append(step.EnvFrom, corev1.EnvFromSource{Prefix: "TOKEN_",
		SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: run.Name}}})
	step.VolumeMounts = append(step.VolumeMounts, corev1.VolumeMount{Name: run.Name, MountPath: "/configs"})
	task.Volumes = append(task.Volumes, corev1.Volume{Name: run.Name, VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: run.Name}}}})
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating integration-service's %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}
