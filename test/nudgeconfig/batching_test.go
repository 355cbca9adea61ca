package nudgeconfig_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/test/world"
)

func batched(ns string, policies ...konfluxv1alpha1.BatchingPolicy) *konfluxv1alpha1.NudgeConfig {
	nc := nudgeConfig(ns, edge("a", "bundle"), edge("b", "bundle"), edge("a", "app"))
	nc.Spec.Batching = policies
	return nc
}

func minutes(n int) *metav1.Duration {
	return &metav1.Duration{Duration: time.Duration(n) * time.Minute}
}

// TestBatchingAdmission: spec.batching is optional and backward
// compatible; CEL rejects what one entry shows wrong, the webhook what needs the
// graph, each with a message that says how to fix it.
func TestBatchingAdmission(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	ns := w.Namespace(t)
	createComponents(t, w, ns, []string{"a", "b", "bundle", "app"}, nil)
	quorum := func(n int32) *int32 { return &n }
	invalid := `NudgeConfig.konflux-ci.dev "nudge-config" is invalid: `

	cases := []rejection{
		{
			name: "release quorum without quorum (CEL)",
			nc:   batched(ns, konfluxv1alpha1.BatchingPolicy{Target: "bundle", Release: konfluxv1alpha1.ReleaseQuorum}),
			want: invalid + `spec.batching[0]: Invalid value: "object": batching of bundle has release quorum and needs quorum: the number of members that must be ready when the window passes`,
		},
		{
			name: "quorum without release quorum (CEL)",
			nc:   batched(ns, konfluxv1alpha1.BatchingPolicy{Target: "bundle", Quorum: quorum(1)}),
			want: invalid + `spec.batching[0]: Invalid value: "object": batching of bundle sets quorum, which only release: quorum uses; set release: quorum or remove quorum`,
		},
		{
			name: "window longer than maxWait (CEL)",
			nc:   batched(ns, konfluxv1alpha1.BatchingPolicy{Target: "bundle", Window: minutes(120), MaxWait: minutes(60)}),
			want: invalid + `spec.batching[0]: Invalid value: "object": batching of bundle: window 2h0m0s is longer than maxWait 1h0m0s; the window could never pass before maxWait releases the batch`,
		},
		{
			name: "unknown release (CEL enum)",
			nc:   batched(ns, konfluxv1alpha1.BatchingPolicy{Target: "bundle", Release: "sometimes"}),
			want: invalid + `[spec.batching[0].release: Unsupported value: "sometimes": supported values: "all", "quorum", "window", ` +
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`,
		},
		{
			name: "a target nobody nudges (webhook)",
			nc:   batched(ns, konfluxv1alpha1.BatchingPolicy{Target: "a"}),
			want: webhookDenied + `spec.batching[0].target: Invalid value: "a": no nudge targets a: add an entry with to: a to spec.nudges, or remove this batching policy`,
		},
		{
			name: "quorum above the number of nudgers (webhook)",
			nc:   batched(ns, konfluxv1alpha1.BatchingPolicy{Target: "bundle", Release: konfluxv1alpha1.ReleaseQuorum, Quorum: quorum(3)}),
			want: webhookDenied + `spec.batching[0].quorum: Invalid value: 3: quorum 3 is more than the 2 component(s) nudging bundle (a, b): lower it to at most 2, or use release: all`,
		},
	}
	requireRejections(t, w.Kube, cases)

	t.Run("a config without batching is unchanged, and a valid policy is accepted", func(t *testing.T) {
		require.NoError(t, w.Kube.Create(ctx, nudgeConfig(ns, edge("a", "bundle"))))
		_, err := patchNudges(t, w.Kube, ns, func(nc *konfluxv1alpha1.NudgeConfig) {
			nc.Spec.Nudges = append(nc.Spec.Nudges, edge("b", "bundle"))
			nc.Spec.Batching = []konfluxv1alpha1.BatchingPolicy{{Target: "bundle", Window: minutes(30), MaxWait: minutes(24 * 60),
				Release: konfluxv1alpha1.ReleaseQuorum, Quorum: quorum(2)}}
		})
		require.NoError(t, err)
	})

	t.Run("removing the last nudge of a batched target is refused until the policy goes too", func(t *testing.T) {
		_, err := patchNudges(t, w.Kube, ns, func(nc *konfluxv1alpha1.NudgeConfig) {
			nc.Spec.Nudges = []konfluxv1alpha1.NudgeRelationship{edge("a", "app")}
		})
		require.Error(t, err)
		require.Contains(t, err.Error(), "no nudge targets bundle")
		_, err = patchNudges(t, w.Kube, ns, func(nc *konfluxv1alpha1.NudgeConfig) {
			nc.Spec.Nudges = []konfluxv1alpha1.NudgeRelationship{edge("a", "app")}
			nc.Spec.Batching = nil
		})
		require.NoError(t, err)
	})
}
