package nudgeconfig_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/cmd/nudgeflow/cli"
	"github.com/nudgeflow/nudgeflow/internal/nudgegraph"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// kubeconfig writes a kubeconfig for the world's API server, as a user would have.

// nudgeflow runs the CLI in this process and returns its output.
func nudgeflow(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := cli.NewRoot()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func getNudgeConfig(t *testing.T, w *world.World, ns string) (*konfluxv1alpha1.NudgeConfig, error) {
	t.Helper()
	var nc konfluxv1alpha1.NudgeConfig
	err := w.Kube.Get(context.Background(), ctrlclient.ObjectKey{Namespace: ns, Name: konfluxv1alpha1.NudgeConfigName}, &nc)
	return &nc, err
}

// tenant is 20 Components: a diamond, a chain, ten standalone services, one of which
// names a component that does not exist.
func tenant() (names []string, refs map[string][]string) {
	refs = map[string][]string{
		"top": {"left", "right"}, "left": {"bottom"}, "right": {"bottom"},
		"svc-01": {"ghost"},
	}
	names = []string{"top", "left", "right", "bottom"}
	for i := 1; i <= 6; i++ {
		names = append(names, fmt.Sprintf("chain-%d", i))
		if i < 6 {
			refs[fmt.Sprintf("chain-%d", i)] = []string{fmt.Sprintf("chain-%d", i+1)}
		}
	}
	for i := 1; i <= 10; i++ {
		names = append(names, fmt.Sprintf("svc-%02d", i))
	}
	return names, refs
}

// tenantNamespace creates the 20-Component tenant in a fresh namespace; it returns
// the world, a kubeconfig for the CLI and the namespace.
func tenantNamespace(t *testing.T) (w *world.World, cfg, ns string, names []string, refs map[string][]string) {
	t.Helper()
	w = world.Get(t)
	cfg = w.Kubeconfig(t)
	ns = w.Namespace(t)
	names, refs = tenant()
	createComponents(t, w, ns, names, refs)
	return w, cfg, ns, names, refs
}

func edgeKeys(nudges []konfluxv1alpha1.NudgeRelationship) []string {
	var out []string
	for _, e := range nudges {
		out = append(out, fmt.Sprintf("%s->%s:%s:%s", e.From, e.To, e.EffectiveMode(), e.GatingGroup))
	}
	slices.Sort(out)
	return out
}

// TestMigrate migrates a 20-Component namespace with a diamond and a chain, merged
// into an existing NudgeConfig, proves a second run is a no-op, and that --dry-run
// writes nothing.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	w, cfg, ns, _, _ := tenantNamespace(t)
	// The team already switched top -> left to validated: the migration must keep it.
	// Doing so, they took left out of top's build-nudges-ref, as admission requires
	// (else build-service nudges left ungated too: TestValidatedEdgeStillInBuildNudgesRef).
	var top mirrorv1alpha1.Component
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "top"}, &top))
	top.Spec.BuildNudgesRef = []string{"right"}
	require.NoError(t, w.Kube.Update(ctx, &top))
	require.NoError(t, w.Kube.Create(ctx, nudgeConfig(ns,
		konfluxv1alpha1.NudgeRelationship{From: "top", To: "left", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "ui-group"})))

	dry, err := nudgeflow(t, "migrate", "--kubeconfig", cfg, "-n", ns, "--dry-run")
	require.NoError(t, err, dry)
	require.Contains(t, dry, "dry run: would apply NudgeConfig "+ns+"/nudge-config (konflux-ci.dev/v1alpha1) with 9 nudge(s)")
	stored, err := getNudgeConfig(t, w, ns)
	require.NoError(t, err)
	require.Len(t, stored.Spec.Nudges, 1, "--dry-run writes nothing")

	out, err := nudgeflow(t, "migrate", "--kubeconfig", cfg, "-n", ns)
	require.NoError(t, err, out)
	require.Equal(t, "namespace "+ns+`: 8 nudge(s) from build-nudges-ref to add (mode immediate), 1 kept from the existing NudgeConfig
  + chain-1 -> chain-2
  + chain-2 -> chain-3
  + chain-3 -> chain-4
  + chain-4 -> chain-5
  + chain-5 -> chain-6
  + left -> bottom
  + right -> bottom
  + top -> right
  ! dangling: svc-01 -> ghost: component ghost does not exist in namespace `+ns+`; not migrated
  applied NudgeConfig `+ns+`/nudge-config (konflux-ci.dev/v1alpha1) with 9 nudge(s) (server-side apply, field manager nudgeflow-migrate)
`, out)

	stored, err = getNudgeConfig(t, w, ns)
	require.NoError(t, err)
	require.NoError(t, nudgegraph.Validate(stored.Spec.Nudges))
	require.Equal(t, []string{
		"chain-1->chain-2:immediate:", "chain-2->chain-3:immediate:", "chain-3->chain-4:immediate:",
		"chain-4->chain-5:immediate:", "chain-5->chain-6:immediate:", "left->bottom:immediate:",
		"right->bottom:immediate:", "top->left:validated:ui-group", "top->right:immediate:",
	}, edgeKeys(stored.Spec.Nudges))
	require.Equal(t, konfluxv1alpha1.NudgeRelationship{From: "top", To: "left", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "ui-group"},
		stored.Spec.Nudges[0], "the existing entry is first and unchanged")
	var managers []string
	for _, m := range stored.ManagedFields {
		managers = append(managers, m.Manager)
	}
	require.Contains(t, managers, "nudgeflow-migrate")

	// The stale-reference controller writes status once per generation; let it settle
	// so the resourceVersion below changes only if the migration writes.
	world.Eventually(t, 15*time.Second, "status observed the migrated generation", func() (bool, error) {
		nc, err := getNudgeConfig(t, w, ns)
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(nc.Status.Conditions, konfluxv1alpha1.ConditionValid)
		stored = nc
		return c != nil && c.ObservedGeneration == nc.Generation, nil
	})

	again, err := nudgeflow(t, "migrate", "--kubeconfig", cfg, "-n", ns)
	require.NoError(t, err, again)
	require.Contains(t, again, "unchanged: every build-nudges-ref edge is already in the NudgeConfig")
	after, err := getNudgeConfig(t, w, ns)
	require.NoError(t, err)
	require.Equal(t, stored.ResourceVersion, after.ResourceVersion, "a second run writes nothing")
	require.Equal(t, stored.Generation, after.Generation)
}

// TestMigrateReportsCycles: a cycle in build-nudges-ref is reported with its path and
// that namespace is not migrated; other namespaces (-A) still are.
func TestMigrateReportsCycles(t *testing.T) {
	w := world.Get(t)
	cfg := w.Kubeconfig(t)
	loop := w.Namespace(t)
	createComponents(t, w, loop, []string{"x", "y", "z", "fine"}, map[string][]string{"x": {"y"}, "y": {"z"}, "z": {"x"}, "fine": {"x"}})
	ok := w.Namespace(t)
	createComponents(t, w, ok, []string{"p", "q"}, map[string][]string{"p": {"q"}})

	out, err := nudgeflow(t, "migrate", "--kubeconfig", cfg, "-A")
	require.Error(t, err)
	require.Contains(t, err.Error(), "namespace(s) not migrated because their nudge graph is invalid")
	require.Contains(t, err.Error(), loop)
	require.Contains(t, out, "namespace "+loop+": 4 nudge(s) from build-nudges-ref to add (mode immediate), 0 kept from the existing NudgeConfig\n"+
		"  + fine -> x\n  + x -> y\n  + y -> z\n  + z -> x\n"+
		"  x cycle detected: x -> y -> z -> x\n"+
		"  namespace "+loop+" NOT migrated: fix build-nudges-ref (or the NudgeConfig) and run again\n")
	_, err = getNudgeConfig(t, w, loop)
	require.True(t, apierrors.IsNotFound(err), "the cycle is not applied: %v", err)

	stored, err := getNudgeConfig(t, w, ok)
	require.NoError(t, err, "-A migrates the sound namespace")
	require.Equal(t, []string{"p->q:immediate:"}, edgeKeys(stored.Spec.Nudges))
}

// TestMigrateGitOps: --output-dir writes the NudgeConfig and patched Component
// manifests from a GitOps folder; kubectl applies the folder as is to a fresh
// namespace, through the webhook, and the result matches the cluster migration.
func TestMigrateGitOps(t *testing.T) {
	ctx := context.Background()
	w, cfg, ns, names, refs := tenantNamespace(t)

	// The GitOps repository: one file per component, namespace left to the sync.
	gitops := t.TempDir()
	for _, n := range names {
		manifest := fmt.Sprintf("# component %s\napiVersion: appstudio.redhat.com/v1alpha1\nkind: Component\nmetadata:\n  name: %s\nspec:\n  componentName: %s\n  containerImage: quay.io/tenant/%s\n", n, n, n, n)
		if len(refs[n]) > 0 {
			manifest += "  build-nudges-ref: [" + strings.Join(refs[n], ", ") + "]\n"
		}
		require.NoError(t, os.MkdirAll(filepath.Join(gitops, "components", n), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(gitops, "components", n, "component.yaml"), []byte(manifest), 0o644))
	}
	outDir := t.TempDir()
	out, err := nudgeflow(t, "migrate", "--kubeconfig", cfg, "-n", ns, "--output-dir", outDir, "--gitops-dir", gitops)
	require.NoError(t, err, out)
	_, err = getNudgeConfig(t, w, ns)
	require.True(t, apierrors.IsNotFound(err), "--output-dir does not touch the cluster")

	files, err := filepath.Glob(filepath.Join(outDir, ns, "*"))
	require.NoError(t, err)
	var base []string
	for _, f := range files {
		base = append(base, filepath.Base(f))
	}
	require.Equal(t, []string{
		"MIGRATION.txt",
		"component-components_chain-1_component.yaml", "component-components_chain-2_component.yaml",
		"component-components_chain-3_component.yaml", "component-components_chain-4_component.yaml",
		"component-components_chain-5_component.yaml", "component-components_left_component.yaml",
		"component-components_right_component.yaml", "component-components_svc-01_component.yaml",
		"component-components_top_component.yaml", "nudgeconfig.yaml",
	}, base, "a patched copy of each Component that had build-nudges-ref")
	patched, err := os.ReadFile(filepath.Join(outDir, ns, "component-components_top_component.yaml"))
	require.NoError(t, err)
	require.Equal(t, "# component top\napiVersion: appstudio.redhat.com/v1alpha1\nkind: Component\nmetadata:\n  name: top\nspec:\n  componentName: top\n  containerImage: quay.io/tenant/top\n", string(patched))

	// A fresh namespace where the GitOps sync would land: only the patched components
	// (those without build-nudges-ref are unchanged in git, so are created as they are).
	fresh := w.Namespace(t)
	var plain []string
	for _, n := range names {
		if len(refs[n]) == 0 {
			plain = append(plain, n)
		}
	}
	createComponents(t, w, fresh, plain, nil)
	assets, err := localenv.KubeAssets()
	require.NoError(t, err)
	kubectl := exec.Command(filepath.Join(assets, "kubectl"), "apply", "--kubeconfig", cfg, "-n", fresh, "-f", filepath.Join(outDir, ns))
	applied, err := kubectl.CombinedOutput()
	require.NoError(t, err, "kubectl apply: %s", applied)

	var comps mirrorv1alpha1.ComponentList
	require.NoError(t, w.Kube.List(ctx, &comps, ctrlclient.InNamespace(fresh)))
	require.Len(t, comps.Items, 20)
	for _, c := range comps.Items {
		require.Empty(t, c.Spec.BuildNudgesRef, "component %s still has build-nudges-ref", c.Name)
	}
	stored, err := getNudgeConfig(t, w, fresh)
	require.NoError(t, err)
	require.Equal(t, []string{
		"chain-1->chain-2:immediate:", "chain-2->chain-3:immediate:", "chain-3->chain-4:immediate:",
		"chain-4->chain-5:immediate:", "chain-5->chain-6:immediate:", "left->bottom:immediate:",
		"right->bottom:immediate:", "top->left:immediate:", "top->right:immediate:",
	}, edgeKeys(stored.Spec.Nudges))
	require.NoError(t, nudgegraph.Validate(stored.Spec.Nudges))
}
