package tenancy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/test/world"
)

const bridgeUser = "system:serviceaccount:" + systemNamespace + ":nudgeflow-bridge"

// TestBridgeDeletesOnlyISRunObjects takes over the bridge's identity (its
// ServiceAccount, impersonated, with the RBAC and the ValidatingAdmissionPolicy
// nudgeflow-bridge-deletes deploy/base ships) and tries to delete what a tenant
// keeps: every attempt is refused, by RBAC or the policy, and the one delete the
// bridge exists for, integration-service's Secret and ConfigMaps of a nudge run
// (named, typed and keyed as integration-service writes them, owned by nothing),
// goes through. It prints
//
//	bridge-deletes case=<name> refused=true
//	bridge-deletes attempts=N refused=N is_shape_deleted=true
func TestBridgeDeletesOnlyISRunObjects(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	cfg := w.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: bridgeUser,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + systemNamespace, "system:authenticated"}}
	bridgeKube, err := ctrlclient.New(cfg, ctrlclient.Options{Scheme: kube.NewScheme()})
	require.NoError(t, err)
	ns := w.Namespace(t)

	const suffix = "0123456789ab"
	isSecret := func(name, namespace string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Type: corev1.SecretTypeOpaque,
			StringData: map[string]string{"token_0": "scm-token", "image_0": "registry-password"}}
	}
	isConfigMap := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"bundle-0.json": "{}"}}
	}
	create := func(obj ctrlclient.Object) ctrlclient.Object {
		t.Helper()
		require.NoError(t, shared.admin.Create(ctx, obj))
		return obj
	}
	// The policy is enforced a moment after it is applied: wait on a decoy no
	// attack needs, so no attack runs before it (RBAC alone would let a delete through).
	decoy := create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "decoy", Namespace: ns}, Type: corev1.SecretTypeOpaque,
		StringData: map[string]string{"k": "v"}})
	world.Eventually(t, time.Minute, "the API server enforces nudgeflow-bridge-deletes", func() (bool, error) {
		err := bridgeKube.Delete(ctx, decoy)
		if err == nil {
			return false, fmt.Errorf("the decoy Secret was deleted: the policy is not enforced")
		}
		return refusedByPolicy(err), nil
	})

	// A run to own things by.
	run := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "renovate-nudge-owner", Namespace: ns},
		Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "p"}}}
	create(run)
	owned := isSecret("renovate-pipeline-"+strings.Repeat("c", 12), ns)
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "tekton.dev/v1", Kind: "PipelineRun", Name: run.Name, UID: run.UID}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "build-pipeline-operand", Namespace: ns}}
	create(sa)
	attempts := []struct {
		name string
		obj  ctrlclient.Object
	}{
		{"tenant-scm-secret", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "scm-github", Namespace: ns}, Type: corev1.SecretTypeBasicAuth,
			Data: map[string][]byte{corev1.BasicAuthUsernameKey: []byte("bot"), corev1.BasicAuthPasswordKey: []byte("token")}}},
		{"tenant-secret-with-is-name", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "renovate-pipeline-" + strings.Repeat("a", 12), Namespace: ns},
			Type: corev1.SecretTypeOpaque, StringData: map[string]string{"password": "hunter2"}}},
		{"is-shape-but-basic-auth", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "renovate-pipeline-" + strings.Repeat("b", 12), Namespace: ns},
			Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{corev1.BasicAuthUsernameKey: []byte("u"), corev1.BasicAuthPasswordKey: []byte("p")}}},
		{"is-shape-owned-by-a-run", owned},
		{"is-shape-in-kube-system", isSecret("renovate-pipeline-"+suffix, "kube-system")},
		{"build-service-run-secret", isSecret("renovate-pipeline-1787312345-ab1cd", ns)},
		{"tenant-configmap", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "namespace-wide-nudging-renovate-config", Namespace: ns},
			Data: map[string]string{"automerge": "true"}}},
		{"ca-copy-name-other-keys", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "renovate-ca-" + strings.Repeat("d", 12), Namespace: ns},
			Data: map[string]string{"ca-bundle.crt": "x", "extra": "y"}}},
	}
	refused := 0
	for _, a := range attempts {
		create(a.obj)
		err := bridgeKube.Delete(ctx, a.obj)
		require.Truef(t, refusedByPolicy(err), "%s: the bridge's delete is refused by nudgeflow-bridge-deletes, got %v", a.name, err)
		require.NoError(t, shared.admin.Get(ctx, ctrlclient.ObjectKeyFromObject(a.obj), a.obj), "%s: still there", a.name)
		fmt.Printf("bridge-deletes case=%s refused=true\n", a.name)
		refused++
	}
	// What RBAC refuses before any policy: reading a Secret, deleting many at once,
	// deleting a ServiceAccount (what a token Secret is minted for).
	rbacAttempts := map[string]error{
		"read-tenant-secret":           bridgeKube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "scm-github"}, &corev1.Secret{}),
		"deletecollection-secrets":     bridgeKube.DeleteAllOf(ctx, &corev1.Secret{}, ctrlclient.InNamespace(ns)),
		"delete-tenant-serviceaccount": bridgeKube.Delete(ctx, sa),
	}
	for name, err := range rbacAttempts {
		require.Truef(t, apierrors.IsForbidden(err), "%s: refused by RBAC, got %v", name, err)
		fmt.Printf("bridge-deletes case=%s refused=true\n", name)
		refused++
	}

	// The shape integration-service writes is deleted.
	for _, obj := range []ctrlclient.Object{isSecret("renovate-pipeline-"+suffix, ns), isConfigMap("renovate-pipeline-" + suffix),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "renovate-ca-" + suffix, Namespace: ns}, Data: map[string]string{"ca-bundle.crt": "pem"}}} {
		create(obj)
		require.NoError(t, bridgeKube.Delete(ctx, obj), "integration-service's %T %s", obj, obj.GetName())
		require.True(t, apierrors.IsNotFound(shared.admin.Get(ctx, ctrlclient.ObjectKeyFromObject(obj), obj)))
	}
	total := len(attempts) + len(rbacAttempts)
	fmt.Printf("bridge-deletes attempts=%d refused=%d is_shape_deleted=true\n", total, refused)
	require.Equal(t, total, refused)
}

// refusedByPolicy: the delete was refused by the ValidatingAdmissionPolicy
// nudgeflow-bridge-deletes (RBAC let it through).
func refusedByPolicy(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'nudgeflow-bridge-deletes'")
}
