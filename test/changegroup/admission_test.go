package changegroup_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
)

// A group naming components that do not exist is rejected at
// admission with their names, instead of waiting for builds that never come.
func TestAdmissionRejectsUnknownComponents(t *testing.T) {
	s := newScenario(t, "operand-a", "operand-b")
	ctx := context.Background()
	ghost := &appstudiov1alpha1.ChangeGroup{}
	ghost.Name, ghost.Namespace = "ghosts", s.ns
	ghost.Spec.NudgedComponent = "bundle"
	ghost.Spec.NudgingComponents = []appstudiov1alpha1.NudgingComponentRef{{Name: "operand-a"}, {Name: "ghost"}, {Name: "ghost-2"}}
	err := s.w.Kube.Create(ctx, ghost)
	require.Error(t, err)
	require.Contains(t, err.Error(), "nudgingComponents names components that do not exist in namespace "+s.ns+": ghost, ghost-2")

	noBundle := &appstudiov1alpha1.ChangeGroup{}
	noBundle.Name, noBundle.Namespace = "no-bundle", s.ns
	noBundle.Spec.NudgedComponent = "bundle-typo"
	err = s.w.Kube.Create(ctx, noBundle)
	require.Error(t, err)
	require.Contains(t, err.Error(), `nudgedComponent "bundle-typo" does not exist`)

	// An update that adds a ghost is rejected; one that only touches metadata passes
	// even when a member was deleted after the group was created.
	cg := s.createGroup("g", []string{"operand-a", "operand-b"}, 0)
	patch := ctrlclient.MergeFrom(cg.DeepCopy())
	cg.Spec.NudgingComponents = append(cg.Spec.NudgingComponents, appstudiov1alpha1.NudgingComponentRef{Name: "ghost"})
	err = s.w.Kube.Patch(ctx, cg, patch)
	require.Error(t, err)
	require.Contains(t, err.Error(), ": ghost;")

	gone := &mirrorv1alpha1.Component{}
	gone.Name, gone.Namespace = "operand-b", s.ns
	require.NoError(t, s.w.Kube.Delete(ctx, gone))
	cg = s.group("g")
	patch = ctrlclient.MergeFrom(cg.DeepCopy())
	if cg.Labels == nil {
		cg.Labels = map[string]string{}
	}
	cg.Labels["team"] = "bundle-owners"
	require.NoError(t, s.w.Kube.Patch(ctx, cg, patch), "a metadata-only write is not re-validated")
}
