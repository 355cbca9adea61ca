package deploy_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// aggregateClusterRoles aggregates the shipped user roles into admin, edit and
// view, as the cluster's controller would (world.AggregateClusterRoles).
func aggregateClusterRoles(t *testing.T) {
	t.Helper()
	require.NoError(t, world.AggregateClusterRoles(context.Background(), world.Get(t).Kube))
}

// asUser is a client of the real API server impersonating a person: exactly the
// permissions RBAC gives that user name.
func asUser(t *testing.T, name string) ctrlclient.Client {
	t.Helper()
	cfg := world.Get(t).Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: name, Groups: []string{"system:authenticated"}}
	c, err := ctrlclient.New(cfg, ctrlclient.Options{Scheme: kube.NewScheme()})
	require.NoError(t, err)
	return c
}

// bindUser gives user the bootstrap ClusterRole role in namespace ns, as a
// platform binds a tenant's people to their namespace.
func bindUser(t *testing.T, ns, role, user string) {
	t.Helper()
	require.NoError(t, world.Get(t).Kube.Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}))
}

// Tenants' roles for nudgeflow's kinds on the real API server, with the shipped manifests applied and
// the bridge started from them answering admission: a namespace admin (a
// RoleBinding to the bootstrap admin ClusterRole, which the shipped nudgeflow-view
// and nudgeflow-edit aggregate into) creates, reads and deletes ChangeGroups and
// NudgeConfigs in its namespace; it cannot write their status (neither through the
// status subresource nor by an update of the object, which the API server strips
// of status), and cannot read or write another namespace's. A viewer reads and
// writes nothing.
func TestNamespaceRolesForNudgeflowKinds(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	v := findVariant(t, variants(t), "cert-manager")
	prepared(t, v)
	aggregateClusterRoles(t)
	_, webhookPort, _ := w.WebhookServer()
	bridge := startPod(t, v.objs, deploymentPod(v.objs.deployment(t, "nudgeflow-bridge")),
		podOptions{temporalAddress: w.Temporal.Address, webhookPort: webhookPort})
	bridge.waitReady(startupTimeout)

	mine, theirs := w.Namespace(t), w.Namespace(t)
	for _, ns := range []string{mine, theirs} {
		create := creator(t, ns)
		create(newComponent("bundle", "https://github.com/org/bundle"))
		create(newComponent("operand", "", "bundle"))
	}
	bindUser(t, mine, "admin", "tenant-admin")
	bindUser(t, mine, "view", "tenant-viewer")
	admin, viewer := asUser(t, "tenant-admin"), asUser(t, "tenant-viewer")
	group := func(ns string) *appstudiov1alpha1.ChangeGroup {
		return &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "bundle-update", Namespace: ns},
			Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "operand"}}}}
	}
	config := func(ns string) *konfluxv1alpha1.NudgeConfig {
		return &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName, Namespace: ns},
			Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: []konfluxv1alpha1.NudgeRelationship{{From: "operand", To: "bundle", Mode: konfluxv1alpha1.ModeImmediate}}}}
	}

	// What the namespace admin may do in its namespace.
	cg, nc := group(mine), config(mine)
	require.NoError(t, admin.Create(ctx, cg), "a namespace admin creates a ChangeGroup")
	require.NoError(t, admin.Create(ctx, nc), "a namespace admin creates a NudgeConfig")
	require.NoError(t, admin.List(ctx, &appstudiov1alpha1.ChangeGroupList{}, ctrlclient.InNamespace(mine)))
	require.NoError(t, viewer.Get(ctx, ctrlclient.ObjectKeyFromObject(cg), &appstudiov1alpha1.ChangeGroup{}), "a viewer reads it")

	// The status nudgeflow trusts (the phase that ends holding, the PR the forge
	// events of a group are routed by, the workflow's ID): never the tenant's.
	refused := 0
	attack := func(name string, err error) {
		t.Helper()
		require.True(t, apierrors.IsForbidden(err), "%s is refused: %v", name, err)
		refused++
		fmt.Printf("tenant-roles case=%s refused=true\n", name)
	}
	forged := cg.DeepCopy()
	forged.Status.Phase = appstudiov1alpha1.PhaseCompleted
	forged.Status.PullRequestURL = "https://github.com/another-tenant/repo/pull/1"
	attack("changegroup-status-patch", admin.Status().Patch(ctx, forged, ctrlclient.MergeFrom(cg)))
	attack("changegroup-status-update", admin.Status().Update(ctx, forged))
	ncForged := nc.DeepCopy()
	ncForged.Status.Conditions = []metav1.Condition{{Type: "Valid", Status: metav1.ConditionTrue, Reason: "Forged", LastTransitionTime: metav1.Now()}}
	attack("nudgeconfig-status-patch", admin.Status().Patch(ctx, ncForged, ctrlclient.MergeFrom(nc)))
	// An update of the object itself is allowed, and its status is dropped (the
	// bridge writes the group's finalizer meanwhile: retried on a conflict).
	var now appstudiov1alpha1.ChangeGroup
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := admin.Get(ctx, ctrlclient.ObjectKeyFromObject(cg), &now); err != nil {
			return err
		}
		now.Status.PullRequestURL = forged.Status.PullRequestURL
		now.Status.Phase = forged.Status.Phase
		return admin.Update(ctx, &now)
	}), "an update of the object is the admin's")
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(cg), &now))
	require.NotEqual(t, forged.Status.PullRequestURL, now.Status.PullRequestURL, "the update did not write status")
	require.NotEqual(t, forged.Status.Phase, now.Status.Phase, "the update did not write status")

	// Another namespace's groups and configs, and the viewer's writes.
	require.NoError(t, w.Kube.Create(ctx, group(theirs)), "another tenant's group")
	attack("changegroup-read-other-namespace", admin.Get(ctx, ctrlclient.ObjectKeyFromObject(group(theirs)), &appstudiov1alpha1.ChangeGroup{}))
	attack("changegroup-list-other-namespace", admin.List(ctx, &appstudiov1alpha1.ChangeGroupList{}, ctrlclient.InNamespace(theirs)))
	attack("changegroup-list-all-namespaces", admin.List(ctx, &appstudiov1alpha1.ChangeGroupList{}))
	attack("changegroup-delete-other-namespace", admin.Delete(ctx, group(theirs)))
	attack("nudgeconfig-create-other-namespace", admin.Create(ctx, config(theirs)))
	attack("changegroup-create-as-viewer", viewer.Create(ctx, &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "viewer", Namespace: mine},
		Spec: group(mine).Spec}))
	attack("nudgeconfig-delete-as-viewer", viewer.Delete(ctx, nc))
	fmt.Printf("tenant-roles attacks=%d refused=%d\n", refused, refused)

	require.NoError(t, admin.Delete(ctx, nc), "a namespace admin deletes its NudgeConfig")
	require.NoError(t, admin.Delete(ctx, cg), "and its ChangeGroup")
}
