package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/changegroupcontroller"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// An override written while the previous one was applied is not swallowed when the
// bridge clears the handled one (found by the chaos test: a cancel written during a
// rebase was removed with it, and the group never ended).
func TestClearingAnOverrideKeepsOneWrittenMeanwhile(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	cg := &appstudiov1alpha1.ChangeGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: w.Namespace(t), Annotations: map[string]string{konflux.AnnotationAction: "rebase"}},
		Spec:       appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle"},
	}
	require.NoError(t, w.Kube.Create(ctx, cg))
	handled := cg.DeepCopy() // what the bridge read: "rebase"

	// A person asks to cancel while the rebase is applied.
	latest := cg.DeepCopy()
	latest.Annotations[konflux.AnnotationAction] = "cancel=no longer needed"
	require.NoError(t, w.Kube.Update(ctx, latest))
	replaced, err := changegroupcontroller.ClearOverride(ctx, w.Kube, handled)
	require.NoError(t, err)
	require.True(t, replaced)
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(cg), latest))
	require.Equal(t, "cancel=no longer needed", latest.Annotations[konflux.AnnotationAction], "the newer override is kept")

	// Handled as read: removed.
	replaced, err = changegroupcontroller.ClearOverride(ctx, w.Kube, latest)
	require.NoError(t, err)
	require.False(t, replaced)
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(cg), latest))
	require.NotContains(t, latest.Annotations, konflux.AnnotationAction)
}
