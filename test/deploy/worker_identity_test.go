package deploy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// asWorker is a client with exactly the permissions of the worker's ServiceAccount
// as the manifests bind it (the same impersonation the worker pod of
// TestManifestsAreTheProgram runs with).
func asWorker(t *testing.T) ctrlclient.Client {
	t.Helper()
	applied(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", asServiceAccount(t, systemNamespace, "nudgeflow-worker"))
	require.NoError(t, err)
	c, err := ctrlclient.New(cfg, ctrlclient.Options{Scheme: kube.NewScheme()})
	require.NoError(t, err)
	return c
}

// launchWorld is a tenant namespace with a nudging component "operand" and a
// nudged "bundle" on GitHub with its credentials, written by an administrator.
func launchWorld(t *testing.T) (ns string, req renovate.LaunchRequest) {
	t.Helper()
	w := world.Get(t)
	ctx := context.Background()
	ns = w.Namespace(t)
	for _, obj := range []ctrlclient.Object{
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "operand", Namespace: ns},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: "operand", ContainerImage: "quay.io/org/operand"}},
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "bundle", Namespace: ns},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: "bundle", Source: mirrorv1alpha1.ComponentSource{
				GitSource: &mirrorv1alpha1.GitSource{URL: "https://github.com/" + ns + "/bundle", Revision: "main"}}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "scm", Namespace: ns, Labels: map[string]string{
			credentials.LabelCredentials: credentials.LabelCredentialsSCM, credentials.LabelSCMHost: "github.com"}},
			Type: corev1.SecretTypeBasicAuth,
			Data: map[string][]byte{corev1.BasicAuthUsernameKey: []byte("konflux-bot"), corev1.BasicAuthPasswordKey: []byte(forgeToken)}},
	} {
		require.NoError(t, w.Kube.Create(ctx, obj), "creating %T %s", obj, obj.GetName())
	}
	wfID := "nudge/" + ns + "/build-uid/bundle"
	return ns, renovate.LaunchRequest{Namespace: ns, Name: renovate.RunName(wfID, 1), WorkflowID: wfID, Attempt: 1,
		Nudging: "operand", Nudged: "bundle", ImageURL: "quay.io/org/operand:rev1", Digest: "sha256:" + strings.Repeat("1", 64),
		BuildPipelineRun: "operand-on-push-1", RepoAtSHA: "https://github.com/org/operand?rev=" + strings.Repeat("a", 40)}
}

// launch runs the real LaunchRenovate activity with the given client.
func launch(t *testing.T, c ctrlclient.Client, req renovate.LaunchRequest) (renovate.LaunchResult, error) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	a := renovate.New(c, systemNamespace)
	env.RegisterActivity(a)
	v, err := env.ExecuteActivity(a.LaunchRenovate, req)
	if err != nil {
		return renovate.LaunchResult{}, err
	}
	var res renovate.LaunchResult
	require.NoError(t, v.Get(&res))
	return res, nil
}

// OpenShift's OwnerReferencesPermissionEnforcement, on in the test world's API
// server: the worker's ServiceAccount, bound to the shipped ClusterRole, may not
// set blockOwnerDeletion on an owner reference to a PipelineRun (it may not update
// pipelineruns/finalizers), so a ConfigMap created that way is refused with the
// plugin's message. LaunchRenovate, as that ServiceAccount, creates and releases
// the run with its ConfigMap and Secret, owned by the run without blocking its
// deletion.
func TestWorkerLaunchesUnderOwnerReferencePermissions(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	c := asWorker(t)
	ns, req := launchWorld(t)

	owner := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns},
		Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "any"}}}
	require.NoError(t, c.Create(ctx, owner), "the worker creates PipelineRuns")
	ownedBy := func(block *bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: tektonv1.SchemeGroupVersion.String(), Kind: "PipelineRun",
			Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: block}}
	}
	err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "blocking", Namespace: ns, OwnerReferences: ownedBy(ptr.To(true))}})
	require.True(t, apierrors.IsForbidden(err), "refused: %v", err)
	require.ErrorContains(t, err, "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on")
	require.NoError(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owned", Namespace: ns, OwnerReferences: ownedBy(nil)}}),
		"the same owner reference without blockOwnerDeletion is allowed")

	res, err := launch(t, c, req)
	require.NoError(t, err)
	require.True(t, res.Created)
	var run tektonv1.PipelineRun
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: req.Name}, &run))
	require.False(t, run.IsPending(), "the run is released")
	for _, obj := range []ctrlclient.Object{&corev1.ConfigMap{}, &corev1.Secret{}} {
		require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: req.Name}, obj), "the run's %T", obj)
		refs := obj.GetOwnerReferences()
		require.Len(t, refs, 1, fmt.Sprintf("%T", obj))
		require.Equal(t, run.UID, refs[0].UID, "%T is owned by the run", obj)
		require.Nil(t, refs[0].BlockOwnerDeletion, "%T does not block the run's deletion", obj)
	}
}

// A launch whose Secret a cluster's admission policy refuses, as the worker's
// ServiceAccount: LaunchRenovate deletes the run it created pending (the shipped
// ClusterRole lets it), so no PipelineRun stays pending, and fails for good with
// the policy's message. The ConfigMap it had created is owned by the deleted run:
// the garbage collector's to delete.
func TestWorkerDeletesTheRunItCannotRelease(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	c := asWorker(t)
	ns, req := launchWorld(t)
	w.DenyCreate(t, ns, &corev1.Secret{}, "Secrets are managed by the platform team here")

	_, err := launch(t, c, req)
	require.ErrorContains(t, err, "Secrets are managed by the platform team here")
	require.ErrorContains(t, err, "deleted the pending PipelineRun "+ns+"/"+req.Name)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.True(t, appErr.NonRetryable(), "a refusal comes back on every try")

	var runs tektonv1.PipelineRunList
	require.NoError(t, w.Kube.List(ctx, &runs, ctrlclient.InNamespace(ns)))
	require.Empty(t, runs.Items, "no run is left pending")
	var cm corev1.ConfigMap
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: req.Name}, &cm))
	require.Len(t, cm.OwnerReferences, 1)
	require.Equal(t, req.Name, cm.OwnerReferences[0].Name, "owned by the deleted run, for the garbage collector")
}
