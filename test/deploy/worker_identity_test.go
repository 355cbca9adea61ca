package deploy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
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
func launchWorld(t *testing.T) (ns string, req renovateapi.LaunchRequest) {
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
	return ns, renovateapi.LaunchRequest{Namespace: ns, Name: renovateapi.RunName(wfID, 1), WorkflowID: wfID, Attempt: 1, Nudging: "operand", Nudged: "bundle", Build: imagebuild.Build{ImageURL: "quay.io/org/operand:rev1", Digest: "sha256:" + strings.Repeat("1", 64), BuildPipelineRun: "operand-on-push-1", RepoAtSHA: "https://github.com/org/operand?rev=" + strings.Repeat("a", 40)}}
}

// launch runs the real LaunchRenovate activity with the given client.
func launch(t *testing.T, c ctrlclient.Client, req renovateapi.LaunchRequest) (renovateapi.LaunchResult, error) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	a := renovate.New(c, systemNamespace)
	env.RegisterActivity(a)
	v, err := env.ExecuteActivity(a.LaunchRenovate, req)
	if err != nil {
		return renovateapi.LaunchResult{}, err
	}
	var res renovateapi.LaunchResult
	require.NoError(t, v.Get(&res))
	return res, nil
}

// OpenShift's OwnerReferencesPermissionEnforcement, on in the test world's API
// server: the worker's ServiceAccount, bound to the shipped ClusterRole, may not
// set blockOwnerDeletion on an owner reference to a PipelineRun (it may not update
// pipelineruns/finalizers), so a ConfigMap created that way is refused with the
// plugin's message (the ConfigMaps here are otherwise of the shape the policy
// nudgeflow-worker-writes admits). LaunchRenovate, as that ServiceAccount, creates
// and releases the run with its ConfigMap and Secret, owned by the run without
// blocking its deletion.
func TestWorkerLaunchesUnderOwnerReferencePermissions(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	c := asWorker(t)
	ns, req := launchWorld(t)

	owner := nudgeflowRun(ns, "renovate-nudge-000000000000-1")
	require.NoError(t, c.Create(ctx, owner), "the worker creates PipelineRuns")
	ownedBy := func(block *bool) []metav1.OwnerReference {
		refs := ownedByRun(owner)
		refs[0].BlockOwnerDeletion = block
		return refs
	}
	err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "renovate-nudge-blocking", Namespace: ns,
		Labels: managedByNudgeflow(), OwnerReferences: ownedBy(ptr.To(true))}})
	require.True(t, apierrors.IsForbidden(err), "refused: %v", err)
	require.ErrorContains(t, err, "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on")
	require.NoError(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "renovate-nudge-owned", Namespace: ns,
		Labels: managedByNudgeflow(), OwnerReferences: ownedBy(nil)}}),
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

// nudgeflowRun is a PipelineRun named and labelled as LaunchRenovate makes them.
func nudgeflowRun(ns, name string) *tektonv1.PipelineRun {
	return &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Labels: map[string]string{renovate.LabelType: renovate.LabelTypeNudge, renovate.LabelManagedBy: renovate.ManagedByNudgeflow}},
		Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "any"}, Status: tektonv1.PipelineRunSpecStatusPending}}
}

// ownedByRun is the owner reference LaunchRenovate sets on a run's objects.
func ownedByRun(run *tektonv1.PipelineRun) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: tektonv1.SchemeGroupVersion.String(), Kind: "PipelineRun", Name: run.Name, UID: run.UID}}
}

func managedByNudgeflow() map[string]string {
	return map[string]string{renovate.LabelManagedBy: renovate.ManagedByNudgeflow}
}

// policyDenied: the write was refused by the ValidatingAdmissionPolicy
// nudgeflow-worker-writes (RBAC let it through).
func policyDenied(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'nudgeflow-worker-writes'")
}

// waitForWorkerPolicy returns once the API server enforces nudgeflow-worker-writes
// (its admission plugin loads policies through an informer): a ConfigMap the
// worker may create by RBAC but not by the policy is refused.
func waitForWorkerPolicy(t *testing.T, c ctrlclient.Client, ns string) {
	t.Helper()
	w := world.Get(t)
	world.Eventually(t, time.Minute, "the API server enforces nudgeflow-worker-writes", func() (bool, error) {
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "renovate-nudge-policy-probe", Namespace: ns}}
		err := c.Create(context.Background(), probe)
		if err == nil {
			return false, w.Kube.Delete(context.Background(), probe)
		}
		if policyDenied(err) {
			return true, nil
		}
		return false, err
	})
}

// The worker's writes are bound by the policy, as an attacker holding the worker's ServiceAccount would try
// it on the real API server: the shipped ClusterRole still lets the worker create
// Secrets and ConfigMaps in any namespace (a run's config, CA bundle and token go
// beside the run), and the policy nudgeflow-worker-writes refuses every write that
// is not the shape of a Renovate run's objects. A ServiceAccount token Secret in
// kube-system (what the token controller would fill with a token of any
// ServiceAccount; none runs in this world, so the refusal is what is shown), an
// Opaque Secret in a system namespace or nudgeflow's own, one without the label,
// without the owner reference or owned by something else, under another name, a
// run in kube-system, a takeover of a run that is not nudgeflow's: each is refused
// and leaves nothing behind. LaunchRenovate's own writes, with the cluster's
// trusted CA bundle so that every object it writes is made, are admitted.
func TestWorkerWritesAreBoundByThePolicy(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	c := asWorker(t)
	ns, req := launchWorld(t)
	waitForWorkerPolicy(t, c, ns)
	for _, name := range []string{"openshift-config", "default"} {
		if err := w.Kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	run := nudgeflowRun(ns, "renovate-nudge-0123456789ab-1")
	require.NoError(t, c.Create(ctx, run), "the worker creates its run first, pending")
	// shaped is a Secret of exactly the shape the policy admits, changed by edit.
	shaped := func(edit func(*corev1.Secret)) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: run.Name, Namespace: ns, Labels: managedByNudgeflow(),
			OwnerReferences: ownedByRun(run)}, Type: corev1.SecretTypeOpaque, StringData: map[string]string{"token_0": "x"}}
		edit(s)
		return s
	}
	tenantRun := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "app-on-push-1", Namespace: ns},
		Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "docker-build"}}}
	require.NoError(t, w.Kube.Create(ctx, tenantRun), "a tenant's run")

	cases := []struct {
		name string
		obj  ctrlclient.Object
		want string
	}{
		{"service-account-token-in-kube-system", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin-token", Namespace: "kube-system",
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "clusterrole-aggregation-controller"}},
			Type: corev1.SecretTypeServiceAccountToken}, "system namespace kube-system"},
		{"service-account-token-shaped-in-tenant-namespace", shaped(func(s *corev1.Secret) {
			s.Type, s.StringData = corev1.SecretTypeServiceAccountToken, nil
			s.Annotations = map[string]string{corev1.ServiceAccountNameKey: "build-pipeline-operand"}
		}), "only Secrets of type Opaque, not kubernetes.io/service-account-token"},
		{"dockerconfigjson-shaped", shaped(func(s *corev1.Secret) {
			s.Type, s.StringData = corev1.SecretTypeDockerConfigJson, map[string]string{corev1.DockerConfigJsonKey: "{}"}
		}), "only Secrets of type Opaque"},
		{"opaque-in-kube-system", shaped(func(s *corev1.Secret) { s.Namespace = "kube-system" }), "system namespace kube-system"},
		{"opaque-in-default", shaped(func(s *corev1.Secret) { s.Namespace = "default" }), "system namespace default"},
		{"opaque-in-openshift-config", shaped(func(s *corev1.Secret) { s.Namespace = "openshift-config" }), "system namespace openshift-config"},
		{"opaque-in-nudgeflow-namespace", shaped(func(s *corev1.Secret) { s.Namespace = systemNamespace }), "system namespace " + systemNamespace},
		{"without-managed-by-label", shaped(func(s *corev1.Secret) { s.Labels = nil }), "labelled app.kubernetes.io/managed-by=nudgeflow"},
		{"without-owner", shaped(func(s *corev1.Secret) { s.OwnerReferences = nil }), "owned by its PipelineRun"},
		{"owned-by-a-configmap", shaped(func(s *corev1.Secret) {
			s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "0b7f8c5e-0000-4000-8000-000000000001"}}
		}), "owned by its PipelineRun"},
		{"another-name", shaped(func(s *corev1.Secret) { s.Name = "scm-credentials" }), "named renovate-nudge-*"},
		{"configmap-without-label", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: run.Name + "-cm", Namespace: ns,
			OwnerReferences: ownedByRun(run)}}, "labelled app.kubernetes.io/managed-by=nudgeflow"},
		{"run-in-kube-system", nudgeflowRun("kube-system", "renovate-nudge-0123456789ab-9"), "system namespace kube-system"},
		{"run-without-label", &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "renovate-nudge-0123456789ab-8", Namespace: ns},
			Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "any"}}}, "labelled app.kubernetes.io/managed-by=nudgeflow"},
	}
	for _, tc := range cases {
		err := c.Create(ctx, tc.obj)
		require.True(t, policyDenied(err), "%s: refused by the policy, got %v", tc.name, err)
		require.ErrorContains(t, err, tc.want, tc.name)
		fresh := tc.obj.DeepCopyObject().(ctrlclient.Object)
		require.True(t, apierrors.IsNotFound(w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(tc.obj), fresh)), "%s: nothing was written", tc.name)
		fmt.Printf("worker-writes case=%s refused=true\n", tc.name)
	}
	// A takeover of a run that is not nudgeflow's: labelling it (so that the
	// worker's later patches and deletes would pass), or deleting it.
	take := tenantRun.DeepCopy()
	take.Labels = managedByNudgeflow()
	err := c.Patch(ctx, take, ctrlclient.MergeFrom(tenantRun))
	require.True(t, policyDenied(err), "labelling a tenant's run: %v", err)
	err = c.Delete(ctx, tenantRun)
	require.True(t, policyDenied(err), "deleting a tenant's run: %v", err)
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(tenantRun), tenantRun))
	require.Empty(t, tenantRun.Labels, "the tenant's run is unchanged")
	fmt.Println("worker-writes case=take-over-tenant-run refused=true")
	refused := len(cases) + 1

	// What the Renovate activity writes is admitted: the run, its config, the copy
	// of the trusted CA bundle, its token Secret.
	var trusted corev1.ConfigMap
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: systemNamespace, Name: "nudgeflow-trusted-ca"}, &trusted))
	if trusted.Data[renovate.CABundleKey] == "" {
		_, _, certDir := w.WebhookServer()
		bundle, err := os.ReadFile(filepath.Join(certDir, "tls.crt"))
		require.NoError(t, err)
		trusted.Data = map[string]string{renovate.CABundleKey: string(bundle)}
		require.NoError(t, w.Kube.Update(ctx, &trusted))
	}
	res, err := launch(t, c, req)
	require.NoError(t, err, "LaunchRenovate's writes pass the policy")
	require.True(t, res.Created)
	var secret corev1.Secret
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: req.Name}, &secret))
	require.Equal(t, corev1.SecretTypeOpaque, secret.Type)
	for _, obj := range []ctrlclient.Object{&corev1.ConfigMap{}, &corev1.Secret{}} {
		require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: req.Name}, obj), "the run's %T", obj)
	}
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: renovate.CAConfigMapName(req.Name)}, &corev1.ConfigMap{}),
		"the run's copy of the trusted CA bundle")
	fmt.Printf("worker-writes attempts=%d refused=%d real_shape_admitted=true\n", refused, refused)
}

// The worker's ClusterRole holds only the verbs its code uses (deploy/rbac/worker,
// from the markers): as its ServiceAccount it cannot watch anything but
// ReleasePlanAdmissions (the one informer it runs), cannot list ConfigMaps outside
// nudgeflow's namespace (the trusted CA bundle is found by label there; tenants'
// ConfigMaps are read by name), and cannot change or delete a Secret or ConfigMap
// (it only creates them). It still lists Secrets in a tenant namespace, by label:
// Konflux's SCM credentials are found that way (build-service's convention; their
// names are the tenant's), which no lookup by name can replace.
func TestWorkerRoleHoldsOnlyWhatTheCodeUses(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	c := asWorker(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", asServiceAccount(t, systemNamespace, "nudgeflow-worker"))
	require.NoError(t, err)
	wc, err := ctrlclient.NewWithWatch(cfg, ctrlclient.Options{Scheme: kube.NewScheme()})
	require.NoError(t, err)
	ns := w.Namespace(t)
	forbidden := func(err error, what string) {
		t.Helper()
		require.True(t, apierrors.IsForbidden(err), "%s is forbidden: %v", what, err)
	}

	forbidden(c.List(ctx, &corev1.ConfigMapList{}, ctrlclient.InNamespace(ns)), "listing a tenant's ConfigMaps")
	forbidden(c.List(ctx, &corev1.ConfigMapList{}), "listing every ConfigMap")
	require.NoError(t, c.List(ctx, &corev1.ConfigMapList{}, ctrlclient.InNamespace(systemNamespace),
		ctrlclient.MatchingLabels{renovate.LabelInjectTrustedCABundle: "true"}), "the trusted CA bundle, by label, in nudgeflow's namespace")
	require.NoError(t, c.List(ctx, &corev1.SecretList{}, ctrlclient.InNamespace(ns),
		ctrlclient.MatchingLabels{credentials.LabelCredentials: credentials.LabelCredentialsSCM}), "SCM credentials, by label")

	for _, list := range []ctrlclient.ObjectList{&corev1.SecretList{}, &corev1.ConfigMapList{}, &tektonv1.PipelineRunList{},
		&appstudiov1alpha1.ChangeGroupList{}, &mirrorv1alpha1.ComponentList{}, &konfluxv1alpha1.NudgeConfigList{}} {
		for _, opts := range [][]ctrlclient.ListOption{{ctrlclient.InNamespace(ns)}, nil} {
			watch, err := wc.Watch(ctx, list, opts...)
			if err == nil {
				watch.Stop()
			}
			forbidden(err, fmt.Sprintf("watching %T %v", list, opts))
		}
	}
	watch, err := wc.Watch(ctx, &mirrorv1alpha1.ReleasePlanAdmissionList{})
	require.NoError(t, err, "the ReleasePlanAdmission informer watches")
	watch.Stop()

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "scm", Namespace: ns}, StringData: map[string]string{"password": "x"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "renovate-config", Namespace: ns}}
	for _, obj := range []ctrlclient.Object{secret, cm} {
		require.NoError(t, w.Kube.Create(ctx, obj))
		changed := obj.DeepCopyObject().(ctrlclient.Object)
		changed.SetLabels(managedByNudgeflow())
		forbidden(c.Update(ctx, changed), fmt.Sprintf("updating a %T", obj))
		forbidden(c.Patch(ctx, changed, ctrlclient.MergeFrom(obj)), fmt.Sprintf("patching a %T", obj))
		forbidden(c.Delete(ctx, obj), fmt.Sprintf("deleting a %T", obj))
	}
}
