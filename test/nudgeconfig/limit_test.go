package nudgeconfig_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// setServedLimit sets spec.nudges' maxItems of the served integration-service
// CRD (v1beta2) on the real API server, and returns the value it had.
func setServedLimit(t *testing.T, w *world.World, max int64) int64 {
	t.Helper()
	ctx := context.Background()
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKey{Name: nudgeconfigs.ShippedCRD}, crd))
	versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
	require.NoError(t, err)
	var old int64
	for i, v := range versions {
		m := v.(map[string]any)
		if m["name"] != mirrorv1beta2.GroupVersion.Version {
			continue
		}
		path := []string{"schema", "openAPIV3Schema", "properties", "spec", "properties", "nudges", "maxItems"}
		old, _, err = unstructured.NestedInt64(m, path...)
		require.NoError(t, err)
		require.NoError(t, unstructured.SetNestedField(m, max, path...))
		versions[i] = m
	}
	require.NoError(t, unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"))
	require.NoError(t, w.Kube.Update(ctx, crd))
	return old
}

// The shipped kind's limit is the served CRD's: integration-service ships 360
// edges (IS 2db9714), so a 360-edge NudgeConfig of its kind is admitted, read and
// migrated, a 361st edge is refused by `nudgeflow migrate` with a message naming the
// served limit, and when the served CRD says another limit, the next run follows it.
func TestShippedLimitIsTheServedCRDs(t *testing.T) {
	ctx := context.Background()
	w := world.Get(t)
	cfg := w.Kubeconfig(t)
	ns := w.Namespace(t)
	require.Equal(t, nudgeconfigs.Limit{Max: 360, From: "maxItems of the served CustomResourceDefinition " + nudgeconfigs.ShippedCRD},
		nudgeconfigs.ShippedLimit(ctx, w.Kube))

	// 28 Components, edges c-i -> c-j for i < j (no cycle): the first 360 in
	// integration-service's kind, the 361st only in build-nudges-ref.
	var names []string
	for i := range 28 {
		names = append(names, fmt.Sprintf("c-%02d", i))
	}
	var edges []mirrorv1beta2.NudgeRelationship
	for i := range names {
		for j := i + 1; j < len(names); j++ {
			edges = append(edges, mirrorv1beta2.NudgeRelationship{From: names[i], To: names[j], Mode: mirrorv1beta2.NudgeModeImmediate})
		}
	}
	extra := edges[360]
	createComponents(t, w, ns, names, map[string][]string{extra.From: {extra.To}})
	require.NoError(t, w.Kube.Create(ctx, shipped(ns, nil, edges[:360]...)), "the served CRD admits 360 edges")
	read, err := nudgeconfigs.Get(ctx, w.Kube, ns)
	require.NoError(t, err)
	require.True(t, nudgeconfigs.IsShipped(read))
	require.Len(t, read.Spec.Nudges, 360)

	// Staying in integration-service's kind, build-nudges-ref's edge is the 361st:
	// refused, by a dry run as by a real one.
	out, err := nudgeflow(t, "migrate", "--kubeconfig", cfg, "-n", ns, "--dry-run")
	require.ErrorContains(t, err, "holds at most 360 (maxItems of the served CustomResourceDefinition nudgeconfigs.appstudio.redhat.com)", out)
	out, err = nudgeflow(t, "migrate", "--kubeconfig", cfg, "-n", ns)
	require.ErrorContains(t, err, "has 361 edges; integration-service's NudgeConfig (appstudio.redhat.com/v1beta2) holds at most 360 (maxItems of the served CustomResourceDefinition nudgeconfigs.appstudio.redhat.com)", out)
	var s mirrorv1beta2.NudgeConfig
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: nudgeconfigs.Name}, &s))
	require.Len(t, s.Spec.Nudges, 360, "nothing written, nothing cut")

	// Migrated to nudgeflow's kind, every one of the 360 edges and the 361st.
	out, err = nudgeflow(t, "migrate", "--kubeconfig", cfg, "-n", ns, "--to", "konflux-ci.dev/v1alpha1")
	require.NoError(t, err, out)
	own, err := getNudgeConfig(t, w, ns)
	require.NoError(t, err)
	require.Len(t, own.Spec.Nudges, 361)

	// The served CRD now says 300 (as an older or a newer integration-service might):
	// the next run reads it. Integration-service's object goes (as the report says),
	// and converting back is refused at the new limit, not at 360.
	old := setServedLimit(t, w, 300)
	require.EqualValues(t, 360, old)
	t.Cleanup(func() { setServedLimit(t, w, old) })
	require.NoError(t, w.Kube.Delete(ctx, &s))
	out, err = nudgeflow(t, "migrate", "--kubeconfig", cfg, "-n", ns, "--to", "appstudio.redhat.com/v1beta2")
	require.ErrorContains(t, err, "has 361 edges; integration-service's NudgeConfig (appstudio.redhat.com/v1beta2) holds at most 300 (maxItems of the served CustomResourceDefinition nudgeconfigs.appstudio.redhat.com)", out)
}
