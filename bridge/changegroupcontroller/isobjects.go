package changegroupcontroller

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// integration-service's nudge run and the objects it creates beside it
// (IS:tekton/nudging/nudge_pipeline.go:314-317,369-394 at 2ae2878): the run, its
// Secret (the targets' SCM and registry tokens, keys token_<i> and image_<i>) and
// its ConfigMap (Renovate configs, keys <component>-<i>.json) are all named
// renovate-pipeline-<sha256(build UID)[:12]>; the CA bundle copy, made only when
// integration-service's namespace holds a trusted CA ConfigMap, is
// renovate-ca-<same suffix>. The step reads the Secret with envFrom (prefix
// TOKEN_), mounts the ConfigMap as the volume named like the run, and the CA copy
// as the volume trusted-ca. None of them has an owner reference and
// integration-service never deletes them, so a run nudgeflow cancels at admission
// would leave its tokens behind for good. (build-service's runs are named
// renovate-pipeline-<unix>-<random> and own their objects: the garbage collector
// deletes those with the run.)
//
// deploy/base/bridge-deletes.yaml repeats these shapes as the API server's bound
// on the bridge's deletes: change both together.
const (
	isCAPrefix        = "renovate-ca-"
	isSecretEnvPrefix = "TOKEN_"
	isCAVolume        = "trusted-ca"
)

var isRunName = regexp.MustCompile(`^renovate-pipeline-([0-9a-f]{12})$`)

// ISRunObjects names the Secret and ConfigMaps integration-service created for its
// nudge run plr, as plr references them: only a name the run's step or volumes
// reference and that is exactly the name integration-service gives it counts.
// Nothing (ok false) for any other run: nudgeflow's own (AnnotationWorkflowID),
// build-service's (another name shape), or one that references nothing of the
// kind.
func ISRunObjects(plr *tektonv1.PipelineRun) (secrets, configMaps []string, ok bool) {
	m := isRunName.FindStringSubmatch(plr.Name)
	if m == nil || plr.Labels[konflux.LabelNudgeType] != konflux.NudgeTypeValue || plr.Annotations[konflux.AnnotationWorkflowID] != "" ||
		plr.Spec.PipelineSpec == nil {
		return nil, nil, false
	}
	caName := isCAPrefix + m[1]
	add := func(list *[]string, name string) {
		if !slices.Contains(*list, name) {
			*list = append(*list, name)
		}
	}
	for _, task := range plr.Spec.PipelineSpec.Tasks {
		if task.TaskSpec == nil {
			continue
		}
		for _, step := range task.TaskSpec.Steps {
			for _, from := range step.EnvFrom {
				if from.SecretRef != nil && from.SecretRef.Name == plr.Name && from.Prefix == isSecretEnvPrefix {
					add(&secrets, plr.Name)
				}
			}
		}
		for _, v := range task.TaskSpec.Volumes {
			if v.ConfigMap == nil {
				continue
			}
			switch {
			case v.Name == plr.Name && v.ConfigMap.Name == plr.Name:
				add(&configMaps, plr.Name)
			case v.Name == isCAVolume && v.ConfigMap.Name == caName:
				add(&configMaps, caName)
			}
		}
	}
	return secrets, configMaps, len(secrets)+len(configMaps) > 0
}

// ReasonRunObjectsDeleted is the reason of the Event on an integration-service
// nudge run nudgeflow cancelled, once its Secret and ConfigMaps are deleted.
const ReasonRunObjectsDeleted = "RunObjectsDeleted"

// ReasonRunObjectsNotDeleted: the API server refused to delete one of them (it is
// not shaped as integration-service writes it any more).
const ReasonRunObjectsNotDeleted = "RunObjectsNotDeleted"

// deleteISRunObjects deletes the Secret and ConfigMaps of integration-service's
// nudge run plr once nudgeflow has cancelled it at admission (it never starts:
// keepCancelled keeps it so), and says so in an Event. Deleting what is gone
// already is no error, so a resync, or a bridge upgraded after the cancel, does
// it at any time; an upgraded bridge collects what older ones left. The bridge
// cannot read Secrets: it deletes by the names the run references, and the
// ValidatingAdmissionPolicy nudgeflow-bridge-deletes refuses any delete of an
// object not shaped as integration-service makes them.
func (r *HeldReconciler) deleteISRunObjects(ctx context.Context, plr *tektonv1.PipelineRun) error {
	if !konflux.HeldAtAdmission(plr.Annotations) || plr.Spec.Status != tektonv1.PipelineRunSpecStatusCancelled {
		return nil
	}
	if !isRunName.MatchString(plr.Name) || plr.Annotations[konflux.AnnotationWorkflowID] != "" {
		return nil
	}
	// The informers keep a run without its spec (plrcache.StripPipelineRun): what
	// the run references is read from the API server.
	var live tektonv1.PipelineRun
	if err := r.apiReader().Get(ctx, ctrlclient.ObjectKeyFromObject(plr), &live); err != nil {
		return ctrlclient.IgnoreNotFound(err)
	}
	if live.UID != plr.UID {
		return nil // another run of the name since: its own reconcile decides
	}
	secrets, configMaps, ok := ISRunObjects(&live)
	if !ok {
		return nil
	}
	var deleted []string
	del := func(obj ctrlclient.Object, kind string) error {
		err := r.Kube.Delete(ctx, obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if apierrors.IsForbidden(err) {
			// Refused by RBAC or nudgeflow-bridge-deletes: the object is not what
			// integration-service writes (someone changed it) and stays; asking
			// again would be refused again.
			r.Recorder.Eventf(plr, corev1.EventTypeWarning, ReasonRunObjectsNotDeleted,
				"%s %s, which this run references, was not deleted: %v", kind, obj.GetName(), err)
			log.FromContext(ctx).Error(err, "integration-service's nudge run object not deleted", "pipelineRun", plr.Name,
				"namespace", plr.Namespace, "kind", kind, "name", obj.GetName())
			return nil
		}
		if err != nil {
			return fmt.Errorf("deleting %s %s/%s of integration-service's cancelled nudge run %s: %w", kind, plr.Namespace, obj.GetName(), plr.Name, err)
		}
		deleted = append(deleted, kind+" "+obj.GetName())
		return nil
	}
	for _, name := range secrets {
		if err := del(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: plr.Namespace, Name: name}}, "Secret"); err != nil {
			return err
		}
	}
	for _, name := range configMaps {
		if err := del(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: plr.Namespace, Name: name}}, "ConfigMap"); err != nil {
			return err
		}
	}
	if len(deleted) > 0 {
		msg := fmt.Sprintf("deleted %s: integration-service created them for this run, which nudgeflow cancelled, and sets no owner reference", strings.Join(deleted, ", "))
		r.Recorder.Event(plr, corev1.EventTypeNormal, ReasonRunObjectsDeleted, msg)
		log.FromContext(ctx).Info("integration-service's nudge run objects deleted", "pipelineRun", plr.Name, "namespace", plr.Namespace, "deleted", deleted)
	}
	return nil
}
