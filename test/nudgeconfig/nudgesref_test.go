package nudgeconfig_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/test/world"
)

func validatedEdge(from, to string) konfluxv1alpha1.NudgeRelationship {
	return konfluxv1alpha1.NudgeRelationship{From: from, To: to, Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "gate"}
}

func immediateEdge(from, to string) konfluxv1alpha1.NudgeRelationship {
	return konfluxv1alpha1.NudgeRelationship{From: from, To: to, Mode: konfluxv1alpha1.ModeImmediate}
}

// refusedBecauseNudgesRef is the message for entry i, from -> to.
func refusedBecauseNudgesRef(i, from, to string) string {
	return `spec.nudges[` + i + `]: Forbidden: validated edge ` + from + ` -> ` + to + `: Component ` + from + ` still lists ` + to +
		` in spec.build-nudges-ref, so build-service nudges ` + to + ` at build time, before the tests gate it; remove "` + to +
		`" from Component ` + from + `'s build-nudges-ref first (or make this edge immediate)`
}

// A validated edge whose source Component still names the target
// in build-nudges-ref would be nudged twice, once ungated by build-service. Admission
// refuses the edges a request adds (created, new pair, or immediate turned
// validated) with the edit that fixes it; an edge stored before (here: the ref was
// added to the Component afterwards, which nothing refuses) keeps its CR updatable.
func TestValidatedEdgeStillInBuildNudgesRef(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	ns := w.Namespace(t)
	createComponents(t, w, ns, []string{"a", "b", "c", "d", "e"}, map[string][]string{"a": {"b", "c", "d"}})

	err := w.Kube.Create(ctx, nudgeConfig(ns, immediateEdge("a", "d"), validatedEdge("a", "b")))
	require.Error(t, err)
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	require.Equal(t, webhookDenied+refusedBecauseNudgesRef("1", "a", "b"), err.Error())

	// An immediate edge beside build-nudges-ref is fine (build-service runs it or
	// nudgeflow does, once); so is a validated edge the ref does not name.
	require.NoError(t, w.Kube.Create(ctx, nudgeConfig(ns, immediateEdge("a", "d"), validatedEdge("a", "e"))))

	// The Component adds the validated edge's target afterwards: nothing refuses it
	// (the Component is build-service's); the stored CR stays updatable.
	var a mirrorv1alpha1.Component
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "a"}, &a))
	a.Spec.BuildNudgesRef = append(a.Spec.BuildNudgesRef, "e")
	require.NoError(t, w.Kube.Update(ctx, &a))
	_, err = patchNudges(t, w.Kube, ns, func(nc *konfluxv1alpha1.NudgeConfig) {
		nc.Spec.Nudges = append(nc.Spec.Nudges, immediateEdge("b", "c"))
		nc.Labels = map[string]string{"team": "frontend"}
	})
	require.NoError(t, err, "an update that keeps the existing validated a -> e is admitted")

	_, err = patchNudges(t, w.Kube, ns, func(nc *konfluxv1alpha1.NudgeConfig) {
		nc.Spec.Nudges = append(nc.Spec.Nudges, validatedEdge("a", "c"))
	})
	require.Error(t, err)
	require.Equal(t, webhookDenied+refusedBecauseNudgesRef("3", "a", "c"), err.Error(), "an update adding one is refused, naming only it")

	_, err = patchNudges(t, w.Kube, ns, func(nc *konfluxv1alpha1.NudgeConfig) {
		nc.Spec.Nudges[0] = validatedEdge("a", "d")
	})
	require.Error(t, err)
	require.Equal(t, webhookDenied+refusedBecauseNudgesRef("0", "a", "d"), err.Error(), "turning an immediate edge validated adds it")

	// The fix the message names: drop d from a's build-nudges-ref, then the edge is admitted.
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "a"}, &a))
	a.Spec.BuildNudgesRef = []string{"b", "c", "e"}
	require.NoError(t, w.Kube.Update(ctx, &a))
	_, err = patchNudges(t, w.Kube, ns, func(nc *konfluxv1alpha1.NudgeConfig) {
		nc.Spec.Nudges[0] = validatedEdge("a", "d")
	})
	require.NoError(t, err)
}
