package renovate

import (
	"fmt"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// nudgeRunLabels are the labels of nudgeflow's Renovate runs.
func nudgeRunLabels() map[string]string {
	return konflux.NudgeTypeKey.Set(map[string]string{LabelManagedBy: ManagedByNudgeflow}, konflux.NudgeTypeValue)
}

// nudgeRunAnnotations are the annotations of nudgeflow's Renovate run for req.
func nudgeRunAnnotations(req renovateapi.LaunchRequest) map[string]string {
	a := map[string]string{AnnotationWorkflowID: req.WorkflowID, AnnotationAttempt: fmt.Sprint(req.Attempt)}
	konflux.NudgedKey.Set(a, req.Nudged)
	konflux.NudgingKey.Set(a, req.Nudging)
	konflux.NudgingImageKey.Set(a, req.ImageURL)
	konflux.NudgingPipelineKey.Set(a, req.BuildPipelineRun)
	if sha := CommitFromRepoLink(req.RepoAtSHA); sha != "" {
		konflux.NudgingCommitKey.Set(a, sha)
	}
	return a
}

// SimpleBranch reads the nudging component's build-nudge-simple-branch annotation
// as build-service does: exactly "true".
func SimpleBranch(nudging *mirrorv1alpha1.Component) bool {
	return konflux.NudgeSimpleBranchKey.Get(nudging.Annotations) == "true"
}

func configFile(nudged string) string { return nudged + ".json" }

// renovateCommand is build-service's command line for one target. Host rules come
// from the run's Secret through the environment: the password never appears in
// the command or the config (build-service passes them by environment too,
// "because we can't resolve variable in json config").
func renovateCommand(nudged string, withHostRules bool) string {
	cmd := fmt.Sprintf("RENOVATE_X_GITLAB_MERGE_REQUEST_DELAY=5000 RENOVATE_X_GITLAB_AUTO_MERGEABLE_CHECK_ATTEMPS=11 "+
		"RENOVATE_PR_HOURLY_LIMIT=0 RENOVATE_PR_CONCURRENT_LIMIT=0 RENOVATE_TOKEN=$%s%s RENOVATE_CONFIG_FILE=%s/%s",
		secretEnvPrefix, tokenKey, configMountPath, configFile(nudged))
	if withHostRules {
		cmd += fmt.Sprintf(` RENOVATE_HOST_RULES="$%s%s"`, secretEnvPrefix, hostRulesKey)
	}
	return cmd + " renovate"
}

func mountsTrustedCA(plr *tektonv1.PipelineRun) bool {
	if plr.Spec.PipelineSpec == nil {
		return false
	}
	for _, t := range plr.Spec.PipelineSpec.Tasks {
		if t.TaskSpec == nil {
			continue
		}
		for _, v := range t.TaskSpec.Volumes {
			if v.Name == caVolumeName {
				return true
			}
		}
	}
	return false
}

func (a *Activities) pipelineRun(req renovateapi.LaunchRequest, withHostRules, withCA bool) *tektonv1.PipelineRun {
	plr := a.newPipelineRun(req, withHostRules, withCA)
	if req.HandedBackBy != "" {
		plr.Annotations[konflux.AnnotationHandedBackBy] = req.HandedBackBy
	}
	if !req.BuiltAt.IsZero() {
		plr.Annotations[renovaterun.AnnotationBuiltAt] = req.BuiltAt.UTC().Format(time.RFC3339Nano)
	}
	return plr
}

func (a *Activities) newPipelineRun(req renovateapi.LaunchRequest, withHostRules, withCA bool) *tektonv1.PipelineRun {
	image := a.Image
	if image == "" {
		image = DefaultImage
	}
	mounts := []corev1.VolumeMount{{Name: "configs", MountPath: configMountPath}}
	volumes := []corev1.Volume{{Name: "configs", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: req.Name}}}}}
	if withCA {
		// build-service mounts the whole pem directory; a subPath replaces only the
		// bundle and keeps the image's other trust files there.
		mounts = append(mounts, corev1.VolumeMount{Name: caVolumeName, MountPath: CAMountPath, SubPath: caFileName, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: caVolumeName, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: CAConfigMapName(req.Name)},
			Items:                []corev1.KeyToPath{{Key: CABundleKey, Path: caFileName}},
		}}})
	}
	return &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{
			Name: req.Name, Namespace: req.Namespace,
			// integration-service labels its nudge runs with the type label only
			// (tekton/nudging/nudge_pipeline.go); Konflux's queues and quotas select
			// nudge runs by it. No other Konflux label: pipelines.appstudio.openshift.io/type
			// or appstudio.openshift.io/component would make build-service and
			// integration-service take the run for a build (and nudge from it).
			// Konflux's keys go in both forms (ADR 69 phase 1): a reader of either
			// (Kueue's rules, a peer's interceptor, nudgeflow's own) finds them.
			Labels:      nudgeRunLabels(),
			Annotations: nudgeRunAnnotations(req),
		},
		Spec: tektonv1.PipelineRunSpec{
			Status: tektonv1.PipelineRunSpecStatusPending,
			PipelineSpec: &tektonv1.PipelineSpec{
				Tasks: []tektonv1.PipelineTask{{
					Name: "renovate",
					TaskSpec: &tektonv1.EmbeddedTask{TaskSpec: tektonv1.TaskSpec{
						Steps: []tektonv1.Step{{
							Name:    "renovate",
							Image:   image,
							Command: []string{"bash", "-c", withOutcomeCheck(renovateCommand(req.Nudged, withHostRules))},
							EnvFrom: []corev1.EnvFromSource{{Prefix: secretEnvPrefix, SecretRef: &corev1.SecretEnvSource{
								LocalObjectReference: corev1.LocalObjectReference{Name: req.Name}}}},
							// build-service always runs Renovate with debug logs: a nudge that
							// opened no PR is explained only there.
							Env:          []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}},
							VolumeMounts: mounts,
							SecurityContext: &corev1.SecurityContext{
								Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
								RunAsNonRoot:             ptr.To(true),
								AllowPrivilegeEscalation: ptr.To(false),
								SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
							},
						}},
						Volumes: volumes,
						Results: []tektonv1.TaskResult{{Name: renovaterun.ResultOutcome, Type: tektonv1.ResultsTypeString,
							Description: "ok, registry-auth-failed when Renovate could not authenticate to the image registry, image-lookup-failed when it could not look the image up otherwise, " +
								"repository-not-updated when it did not write the branch, pr-not-opened when it opened no pull request, " +
								"superseded:<run> when the nudge branch carried a newer build and Renovate did not run"}},
					}},
				}},
				Results: []tektonv1.PipelineResult{{Name: renovaterun.ResultOutcome, Type: tektonv1.ResultsTypeString,
					Value: *tektonv1.NewStructuredValues("$(tasks.renovate.results." + renovaterun.ResultOutcome + ")")}},
			},
			TaskRunTemplate: tektonv1.PipelineTaskRunTemplate{ServiceAccountName: "build-pipeline-" + req.Nudging},
		},
	}
}
