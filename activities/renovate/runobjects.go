package renovate

import (
	"context"
	"fmt"
	"reflect"

	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/activity"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// runObjects are what a run reads besides its spec: its Renovate config, the
// trusted CA bundle ("": none) and its Secret's data and annotations.
type runObjects struct {
	config            []byte
	caBundle          string
	secret            map[string]string
	secretAnnotations map[string]string
}

// completeAndRelease creates the run's ConfigMaps and Secret (owned by it) and
// releases it when it is still pending.
func (a *Activities) completeAndRelease(ctx context.Context, req renovateapi.LaunchRequest, plr *tektonv1.PipelineRun, created bool, objs runObjects) error {
	// A retry keeps the run an earlier attempt created: if that run mounts a CA
	// copy, the copy must exist, or its pod never starts.
	if !created && mountsTrustedCA(plr) && objs.caBundle == "" {
		err := a.Kube.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: CAConfigMapName(req.Name)}, &corev1.ConfigMap{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("PipelineRun %s/%s mounts the trusted CA bundle, but no ConfigMap labelled %s=true in %q holds one now",
				req.Namespace, req.Name, LabelInjectTrustedCABundle, a.OperatorNamespace)
		}
		if err != nil {
			return fmt.Errorf("reading ConfigMap %s/%s: %w", req.Namespace, CAConfigMapName(req.Name), err)
		}
	}
	// Owned by the run, so the garbage collector deletes them with it. No
	// blockOwnerDeletion (build-service sets none either): on OpenShift the
	// OwnerReferencesPermissionEnforcement admission plugin refuses it to whoever
	// may not update pipelineruns/finalizers, which the worker may not; it only
	// matters to a foreground deletion of the run, which nobody asks for.
	owner := []metav1.OwnerReference{{
		APIVersion: tektonv1.SchemeGroupVersion.String(), Kind: "PipelineRun",
		Name: plr.Name, UID: plr.UID,
	}}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: req.Name, Namespace: req.Namespace, OwnerReferences: owner,
			Labels: map[string]string{LabelManagedBy: ManagedByNudgeflow}},
		Data: map[string]string{configFile(req.Nudged): string(objs.config)},
	}
	if err := createOwned(ctx, a.Kube, cm, plr.UID); err != nil {
		return err
	}
	if objs.caBundle != "" {
		ca := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: CAConfigMapName(req.Name), Namespace: req.Namespace, OwnerReferences: owner,
				Labels: map[string]string{LabelManagedBy: ManagedByNudgeflow}},
			Data: map[string]string{CABundleKey: objs.caBundle},
		}
		if err := createOwned(ctx, a.Kube, ca, plr.UID); err != nil {
			return err
		}
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: req.Name, Namespace: req.Namespace, OwnerReferences: owner,
			Labels: map[string]string{LabelManagedBy: ManagedByNudgeflow}, Annotations: objs.secretAnnotations},
		Type:       corev1.SecretTypeOpaque,
		StringData: objs.secret,
	}
	if err := createOwned(ctx, a.Kube, secret, plr.UID); err != nil {
		return err
	}
	// Runs of older builds on the edge stop: they would write an older digest.
	// One look at the namespace's nudge runs serves both decisions below.
	runs, err := renovaterun.NudgeRuns(ctx, a.Kube, req.Namespace)
	if err != nil {
		return err
	}
	if err := a.supersedeOlder(ctx, req, runs); err != nil {
		return err
	}
	// The run was created pending so it never starts before its ConfigMaps and
	// Secret exist; now release it (releasable), when its branch is free
	// (branchqueue.go; else the bridge starts it when the branch's run ends). Not a
	// run the bridge's interceptor held for a ChangeGroup at admission: it is
	// pending only because a webhook called after the interceptor (tekton-kueue's)
	// re-pended it, and releasing it would start a nudge the group collects. Nor a
	// run Kueue queues (tekton-kueue labelled it with its queue and pended it):
	// Kueue admits it when the quota allows, and releasing it would jump the queue;
	// Kueue may admit it before its ConfigMap and Secret exist, as it may
	// build-service's and integration-service's runs; the pod waits for them.
	if renovaterun.Releasable(plr) {
		started, blocker, err := renovaterun.StartOrQueue(ctx, a.Kube, plr, runs)
		if err != nil {
			return err
		}
		switch {
		case plr.Annotations[renovaterun.AnnotationSupersededBy] != "":
			activity.GetLogger(ctx).Info("stopped the Renovate run before it started: a newer build's run of the edge exists",
				"pipelineRun", req.Name, "supersededBy", plr.Annotations[renovaterun.AnnotationSupersededBy])
		case !started:
			activity.GetLogger(ctx).Info("Renovate run waits for its branch", "pipelineRun", req.Name, "waitsFor", blocker,
				"branch", plr.Annotations[renovaterun.AnnotationBranch])
		}
	} else if _, err := renovaterun.StopIfSupersededInKueue(ctx, a.Kube, plr, runs); err != nil {
		return err
	}
	return nil
}

// createOwned creates one of a run's objects, or keeps the one an earlier try of
// this activity created for the same run. One owned by anything else is what a
// deleted run of the same name (withdrawn, or deleted by a person while pending)
// left to the garbage collector, which will delete it under the new run: the
// launch fails, retryably, until the collector has.
func createOwned(ctx context.Context, c ctrlclient.Client, obj ctrlclient.Object, owner types.UID) error {
	kind := reflect.TypeOf(obj).Elem().Name()
	err := c.Create(ctx, obj)
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	existing := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(ctrlclient.Object)
	if err := c.Get(ctx, ctrlclient.ObjectKeyFromObject(obj), existing); err != nil {
		return fmt.Errorf("reading existing %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	owners := []string{}
	for _, ref := range existing.GetOwnerReferences() {
		if ref.UID == owner {
			return nil
		}
		owners = append(owners, fmt.Sprintf("%s %s (uid %s)", ref.Kind, ref.Name, ref.UID))
	}
	return fmt.Errorf("%s %s/%s exists, owned by %v, not by this PipelineRun (uid %s): it is left over from a deleted run of the same name and waits for the garbage collector",
		kind, obj.GetNamespace(), obj.GetName(), owners, owner)
}
