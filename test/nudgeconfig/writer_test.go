package nudgeconfig_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// The writer switch (spec.immediateWriter and an edge's override): the API server
// refuses a value that is not auto, direct or renovate, and an override on a
// validated edge, each with a message that says what to write; the corrected
// NudgeConfig is stored with both settings.
func TestImmediateWriterAdmission(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	ns := w.Namespace(t)
	createComponents(t, w, ns, []string{"a", "b", "c"}, nil)

	for name, c := range map[string]struct {
		nc   *konfluxv1alpha1.NudgeConfig
		want []string
	}{
		"namespace value": {nc: func() *konfluxv1alpha1.NudgeConfig {
			nc := nudgeConfig(ns, edge("a", "b"))
			nc.Spec.ImmediateWriter = "Mintmaker"
			return nc
		}(), want: []string{`spec.immediateWriter: Unsupported value: "Mintmaker": supported values: "auto", "direct", "renovate"`}},
		"edge value": {nc: func() *konfluxv1alpha1.NudgeConfig {
			e := edge("a", "b")
			e.ImmediateWriter = "fast"
			return nudgeConfig(ns, e)
		}(), want: []string{`spec.nudges[0].immediateWriter: Unsupported value: "fast": supported values: "auto", "direct", "renovate"`}},
		"validated edge": {nc: func() *konfluxv1alpha1.NudgeConfig {
			e := edge("a", "c")
			e.Mode, e.GatingGroup, e.ImmediateWriter = konfluxv1alpha1.ModeValidated, "gate", konfluxv1alpha1.WriterDirect
			return nudgeConfig(ns, e)
		}(), want: []string{"spec.nudges[0]", "edge a -> c sets immediateWriter, which only immediate edges use", "remove immediateWriter or set mode: immediate"}},
	} {
		t.Run(name, func(t *testing.T) {
			err := w.Kube.Create(ctx, c.nc)
			require.Error(t, err, "must be rejected")
			require.True(t, apierrors.IsInvalid(err), "rejected as invalid (422), got %v", err)
			for _, part := range c.want {
				require.Contains(t, err.Error(), part)
			}
		})
	}

	override := edge("a", "b")
	override.ImmediateWriter = konfluxv1alpha1.WriterRenovate
	nc := nudgeConfig(ns, override, edge("a", "c"))
	nc.Spec.ImmediateWriter = konfluxv1alpha1.WriterDirect
	require.NoError(t, w.Kube.Create(ctx, nc))
	got, from := nc.Spec.WriterOf("a", "b")
	require.Equal(t, konfluxv1alpha1.WriterRenovate, got, from)
	got, _ = nc.Spec.WriterOf("a", "c")
	require.Equal(t, konfluxv1alpha1.WriterDirect, got)
}
