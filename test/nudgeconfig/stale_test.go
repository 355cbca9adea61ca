package nudgeconfig_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/test/world"
)

func componentRef(ns, name string) *mirrorv1alpha1.Component {
	return &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
}

// waitValid waits until the NudgeConfig's Valid condition has the reason and message.
func waitValid(t *testing.T, w *world.World, ns, reason, message string) konfluxv1alpha1.NudgeConfig {
	t.Helper()
	var nc konfluxv1alpha1.NudgeConfig
	world.Eventually(t, 15*time.Second, "Valid condition "+reason+": "+message, func() (bool, error) {
		if err := w.Kube.Get(context.Background(), ctrlclient.ObjectKey{Namespace: ns, Name: konfluxv1alpha1.NudgeConfigName}, &nc); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(nc.Status.Conditions, konfluxv1alpha1.ConditionValid)
		return c != nil && c.Reason == reason && c.Message == message, nil
	})
	return nc
}

// TestStaleReferences: deleting a Component turns Valid to StaleReferences naming it,
// without touching the entries; re-creating it turns Valid back.
func TestStaleReferences(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	ns := w.Namespace(t)
	createComponents(t, w, ns, []string{"component-a", "component-b", "component-x", "unrelated"}, nil)
	require.NoError(t, w.Kube.Create(ctx, nudgeConfig(ns,
		edge("component-a", "component-b"), edge("component-a", "component-x"), edge("component-x", "component-b"))))

	nc := waitValid(t, w, ns, konfluxv1alpha1.ReasonAllComponentsExist, "All referenced components exist in namespace")
	c := meta.FindStatusCondition(nc.Status.Conditions, konfluxv1alpha1.ConditionValid)
	require.Equal(t, metav1.ConditionTrue, c.Status)
	require.Equal(t, nc.Generation, c.ObservedGeneration)
	require.NotNil(t, nc.Status.LastValidationTime)
	firstValidation := nc.Status.LastValidationTime

	require.NoError(t, w.Kube.Delete(ctx, componentRef(ns, "component-x")))
	nc = waitValid(t, w, ns, konfluxv1alpha1.ReasonStaleReferences, "Components [component-x] referenced in nudges no longer exist")
	require.Equal(t, metav1.ConditionFalse, meta.FindStatusCondition(nc.Status.Conditions, konfluxv1alpha1.ConditionValid).Status)
	require.Len(t, nc.Spec.Nudges, 3, "stale entries are reported, never deleted")
	require.False(t, nc.Status.LastValidationTime.Before(firstValidation))

	require.NoError(t, w.Kube.Delete(ctx, componentRef(ns, "component-b")))
	waitValid(t, w, ns, konfluxv1alpha1.ReasonStaleReferences, "Components [component-b, component-x] referenced in nudges no longer exist")

	createComponents(t, w, ns, []string{"component-x", "component-b"}, nil)
	nc = waitValid(t, w, ns, konfluxv1alpha1.ReasonAllComponentsExist, "All referenced components exist in namespace")
	require.Equal(t, metav1.ConditionTrue, meta.FindStatusCondition(nc.Status.Conditions, konfluxv1alpha1.ConditionValid).Status)
}
