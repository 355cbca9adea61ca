package nudgeconfig_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// webhookDenied is how the API server words a rejection by our webhook.
const webhookDenied = `admission webhook "vnudgeconfig.konflux-ci.dev" denied the request: NudgeConfig.konflux-ci.dev "nudge-config" is invalid: `

func nudgeConfig(ns string, nudges ...konfluxv1alpha1.NudgeRelationship) *konfluxv1alpha1.NudgeConfig {
	return &konfluxv1alpha1.NudgeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName, Namespace: ns},
		Spec:       konfluxv1alpha1.NudgeConfigSpec{Nudges: nudges},
	}
}

// patchNudges changes a stored NudgeConfig with a merge patch: no resourceVersion
// precondition, so the controller's concurrent status writes cannot make it conflict.
func patchNudges(t *testing.T, c ctrlclient.Client, ns string, change func(*konfluxv1alpha1.NudgeConfig)) (*konfluxv1alpha1.NudgeConfig, error) {
	t.Helper()
	var nc konfluxv1alpha1.NudgeConfig
	require.NoError(t, c.Get(context.Background(), ctrlclient.ObjectKey{Namespace: ns, Name: konfluxv1alpha1.NudgeConfigName}, &nc))
	base := nc.DeepCopy()
	change(&nc)
	return &nc, c.Patch(context.Background(), &nc, ctrlclient.MergeFrom(base))
}

func edge(from, to string) konfluxv1alpha1.NudgeRelationship {
	return konfluxv1alpha1.NudgeRelationship{From: from, To: to}
}

// rejection is a NudgeConfig admission must refuse, with the exact message.
type rejection struct {
	name string
	nc   *konfluxv1alpha1.NudgeConfig
	want string
}

// requireRejections creates each case's NudgeConfig and checks it is refused as
// invalid (422) with its message.
func requireRejections(t *testing.T, c ctrlclient.Client, cases []rejection) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Create(context.Background(), tc.nc)
			require.Error(t, err, "must be rejected")
			require.True(t, apierrors.IsInvalid(err), "rejected as invalid (422), got %v", err)
			require.Equal(t, tc.want, err.Error())
		})
	}
}

// TestAdmissionOnCreate shows each rule rejecting exactly what breaks it, with the
// message a person reads, and the same namespace accepting the corrected config.
func TestAdmissionOnCreate(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	ns := w.Namespace(t)
	createComponents(t, w, ns, []string{"a", "b", "c", "d"}, nil)

	cases := []rejection{
		{
			name: "wrong name (CEL)",
			nc: func() *konfluxv1alpha1.NudgeConfig {
				nc := nudgeConfig(ns, edge("a", "b"))
				nc.Name = "my-nudges"
				return nc
			}(),
			want: `NudgeConfig.konflux-ci.dev "my-nudges" is invalid: <nil>: Invalid value: "object": NudgeConfig must be named 'nudge-config': there is one per namespace (singleton)`,
		},
		{
			name: "self-nudge (CEL)",
			nc:   nudgeConfig(ns, edge("a", "b"), edge("c", "c")),
			want: `NudgeConfig.konflux-ci.dev "nudge-config" is invalid: spec.nudges[1]: Invalid value: "object": component c cannot nudge itself (from and to are equal)`,
		},
		{
			name: "duplicate pair (webhook)",
			nc:   nudgeConfig(ns, edge("a", "b"), edge("a", "c"), konfluxv1alpha1.NudgeRelationship{From: "a", To: "b", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "g"}),
			want: webhookDenied + `spec.nudges[2]: Forbidden: duplicate nudge a -> b at entries 0 and 2`,
		},
		{
			name: "three-cycle (webhook)",
			nc:   nudgeConfig(ns, edge("a", "b"), edge("b", "c"), edge("c", "a"), edge("a", "d")),
			want: webhookDenied + `spec.nudges: Forbidden: cycle detected: a -> b -> c -> a`,
		},
		{
			name: "unknown components (webhook)",
			nc:   nudgeConfig(ns, edge("a", "ghost"), edge("b", "ghost"), edge("phantom", "a")),
			want: webhookDenied + `[spec.nudges[0]: Not found: "component ghost does not exist in namespace ` + ns +
				` (referenced by entry 0 (a -> ghost), entry 1 (b -> ghost))", spec.nudges[2]: Not found: "component phantom does not exist in namespace ` + ns +
				` (referenced by entry 2 (phantom -> a))"]`,
		},
		{
			name: "every webhook problem at once",
			nc:   nudgeConfig(ns, edge("a", "b"), edge("b", "a"), edge("a", "b"), edge("d", "nope")),
			want: webhookDenied + `[spec.nudges[2]: Forbidden: duplicate nudge a -> b at entries 0 and 2, spec.nudges: Forbidden: cycle detected: a -> b -> a, ` +
				`spec.nudges[3]: Not found: "component nope does not exist in namespace ` + ns + ` (referenced by entry 3 (d -> nope))"]`,
		},
	}
	requireRejections(t, w.Kube, cases)

	t.Run("the corrected config is accepted", func(t *testing.T) {
		require.NoError(t, w.Kube.Create(ctx, nudgeConfig(ns, edge("a", "b"), edge("b", "c"), edge("a", "d"), edge("c", "d"))))
	})
}

// TestAdmissionOnUpdate: only the edges an update adds must name existing components;
// an edge that went stale after it was stored never blocks an unrelated edit.
func TestAdmissionOnUpdate(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	ns := w.Namespace(t)
	createComponents(t, w, ns, []string{"a", "b", "c", "d"}, nil)
	nc := nudgeConfig(ns, edge("a", "b"), edge("b", "c"))
	require.NoError(t, w.Kube.Create(ctx, nc))
	waitValid(t, w, ns, konfluxv1alpha1.ReasonAllComponentsExist, "All referenced components exist in namespace")

	// b -> c goes stale.
	require.NoError(t, w.Kube.Delete(ctx, componentRef(ns, "c")))
	waitValid(t, w, ns, konfluxv1alpha1.ReasonStaleReferences, "Components [c] referenced in nudges no longer exist")

	t.Run("an update adding an unknown component is rejected", func(t *testing.T) {
		_, err := patchNudges(t, w.Kube, ns, func(nc *konfluxv1alpha1.NudgeConfig) {
			nc.Spec.Nudges = append(nc.Spec.Nudges, edge("a", "zed"))
		})
		require.Error(t, err)
		require.Equal(t, webhookDenied+`spec.nudges[2]: Not found: "component zed does not exist in namespace `+ns+
			` (referenced by entry 2 (a -> zed))"`, err.Error(),
			"names only the added edge, not the stale b -> c")
	})

	t.Run("an update closing a cycle is rejected", func(t *testing.T) {
		_, err := patchNudges(t, w.Kube, ns, func(nc *konfluxv1alpha1.NudgeConfig) {
			nc.Spec.Nudges = append(nc.Spec.Nudges, edge("b", "a"))
		})
		require.Error(t, err)
		require.Equal(t, webhookDenied+`spec.nudges: Forbidden: cycle detected: a -> b -> a`, err.Error())
	})

	t.Run("unrelated edits while b -> c is stale are accepted", func(t *testing.T) {
		// A new edge between existing components, and a mode change of an old one.
		_, err := patchNudges(t, w.Kube, ns, func(nc *konfluxv1alpha1.NudgeConfig) {
			nc.Spec.Nudges[0] = konfluxv1alpha1.NudgeRelationship{From: "a", To: "b", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "g"}
			nc.Spec.Nudges = append(nc.Spec.Nudges, edge("a", "d"))
		})
		require.NoError(t, err)
		// A metadata-only edit goes through the webhook too (UPDATE) and is accepted.
		_, err = patchNudges(t, w.Kube, ns, func(nc *konfluxv1alpha1.NudgeConfig) {
			nc.Labels = map[string]string{"team": "frontend"}
		})
		require.NoError(t, err)
		var stored konfluxv1alpha1.NudgeConfig
		require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(nc), &stored))
		require.Len(t, stored.Spec.Nudges, 3, "the stale edge is kept")
		require.Equal(t, "frontend", stored.Labels["team"])
	})
}

// TestGatingGroupWarning: a validated edge through a ComponentGroup that does not exist
// yet is admitted with a warning; once the group exists, no warning.
func TestGatingGroupWarning(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	ns := w.Namespace(t)
	createComponents(t, w, ns, []string{"a", "b", "c"}, nil)
	c, got := clientWithWarnings(t, w)

	nc := nudgeConfig(ns, konfluxv1alpha1.NudgeRelationship{From: "a", To: "b", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "frontend-group"})
	require.NoError(t, c.Create(ctx, nc), "a missing gating group is no reason to reject")
	require.Equal(t, []string{"gatingGroup frontend-group does not exist yet in namespace " + ns +
		": validated nudges entry 0 (a -> b) wait until it exists"}, got.all())

	group := world.Manifest(t, `
apiVersion: appstudio.redhat.com/v1beta2
kind: ComponentGroup
metadata: {name: backend-group}
spec:
  components: [{name: b}, {name: c}]`)
	group.SetNamespace(ns)
	require.NoError(t, w.Kube.Create(ctx, group))
	before := len(got.all())
	_, err := patchNudges(t, c, ns, func(nc *konfluxv1alpha1.NudgeConfig) {
		nc.Spec.Nudges = append(nc.Spec.Nudges, konfluxv1alpha1.NudgeRelationship{From: "b", To: "c", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "backend-group"})
	})
	require.NoError(t, err)
	require.Len(t, got.all(), before, "no warning for an existing group, none repeated for the old edge")
}

// TestMaxItems: 5000 edges between real Components are admitted (the webhook lists
// Components once, whatever the edge count); 5001 are rejected by the schema.
func TestMaxItems(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	ns := w.Namespace(t)
	// 50 sources x 100 targets = 5000 edges over 150 components.
	var names []string
	var nudges []konfluxv1alpha1.NudgeRelationship
	for s := range 50 {
		names = append(names, fmt.Sprintf("src-%02d", s))
	}
	for d := range 100 {
		names = append(names, fmt.Sprintf("dst-%03d", d))
	}
	for s := range 50 {
		for d := range 100 {
			nudges = append(nudges, edge(fmt.Sprintf("src-%02d", s), fmt.Sprintf("dst-%03d", d)))
		}
	}
	createComponents(t, w, ns, names, nil)

	tooMany := nudgeConfig(ns, append(nudges, edge("dst-000", "dst-001"))...)
	err := w.Kube.Create(ctx, tooMany)
	require.Error(t, err)
	require.True(t, apierrors.IsInvalid(err))
	require.Equal(t, `NudgeConfig.konflux-ci.dev "nudge-config" is invalid: [spec.nudges: Too many: 5001: must have at most 5000 items, `+
		`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`, err.Error())

	nc := nudgeConfig(ns, nudges...)
	require.NoError(t, w.Kube.Create(ctx, nc), "5000 edges fit")
	var stored konfluxv1alpha1.NudgeConfig
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(nc), &stored))
	require.Len(t, stored.Spec.Nudges, 5000)

	// A duplicate among 5000 is still found and named.
	_, err = patchNudges(t, w.Kube, ns, func(nc *konfluxv1alpha1.NudgeConfig) {
		nc.Spec.Nudges[4999] = edge("src-00", "dst-000")
	})
	require.Error(t, err)
	require.True(t, strings.HasSuffix(err.Error(), "spec.nudges[4999]: Forbidden: duplicate nudge src-00 -> dst-000 at entries 0 and 4999"), err.Error())
}

// TestWebhookSkipsSystemNamespaces: the namespaceSelector keeps kube-system out of the
// webhook's reach (the bridge must never be needed to write there); CEL still applies.
func TestWebhookSkipsSystemNamespaces(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	nc := nudgeConfig("kube-system", edge("a", "b"), edge("b", "a"))
	require.NoError(t, w.Kube.Create(ctx, nc), "a cycle between unknown components is not checked in kube-system")
	t.Cleanup(func() { require.NoError(t, w.Kube.Delete(ctx, nc)) })

	err := w.Kube.Create(ctx, nudgeConfig(w.Namespace(t), edge("a", "b"), edge("b", "a")))
	require.Error(t, err, "elsewhere the webhook rejects it")
	require.True(t, strings.HasPrefix(err.Error(), webhookDenied), err.Error())
}
