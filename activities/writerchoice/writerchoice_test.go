package writerchoice

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

var req = nudgeapi.WriterChoiceRequest{Namespace: "ns", Nudging: "operand", Nudged: "bundle"}

func nudgeConfig(spec konfluxv1alpha1.ImmediateWriter, edges ...konfluxv1alpha1.NudgeRelationship) *konfluxv1alpha1.NudgeConfig {
	return &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName, Namespace: "ns"},
		Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: edges, ImmediateWriter: spec}}
}

func edge(from, to string, w konfluxv1alpha1.ImmediateWriter) konfluxv1alpha1.NudgeRelationship {
	return konfluxv1alpha1.NudgeRelationship{From: from, To: to, Mode: konfluxv1alpha1.ModeImmediate, ImmediateWriter: w}
}

func group(name string, phase appstudiov1alpha1.ChangeGroupPhase, created time.Time) *appstudiov1alpha1.ChangeGroup {
	return &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(created)},
		Spec:   appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "operand"}}},
		Status: appstudiov1alpha1.ChangeGroupStatus{Phase: phase}}
}

func choose(t *testing.T, def konfluxv1alpha1.ImmediateWriter, r nudgeapi.WriterChoiceRequest, objs ...ctrlclient.Object) nudgeapi.WriterChoice {
	t.Helper()
	k := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(objs...).Build()
	c, err := (&Activities{Kube: k, Default: def}).ChooseNudgeWriter(context.Background(), r)
	require.NoError(t, err)
	return c
}

// The edge's setting beats the namespace's, which beats the worker's default,
// which beats auto; each choice says where it comes from.
func TestPrecedence(t *testing.T) {
	for name, c := range map[string]struct {
		def     konfluxv1alpha1.ImmediateWriter
		nc      *konfluxv1alpha1.NudgeConfig
		writer  string
		setting konfluxv1alpha1.ImmediateWriter
		from    string
	}{
		"nothing set: auto":       {writer: nudgeapi.WriterDirect, setting: konfluxv1alpha1.WriterAuto, from: "the default immediate writer auto"},
		"worker default":          {def: konfluxv1alpha1.WriterRenovate, writer: nudgeapi.WriterRenovate, setting: konfluxv1alpha1.WriterRenovate, from: "--immediate-writer renovate"},
		"namespace over worker":   {def: konfluxv1alpha1.WriterRenovate, nc: nudgeConfig(konfluxv1alpha1.WriterDirect, edge("operand", "bundle", "")), writer: nudgeapi.WriterDirect, setting: konfluxv1alpha1.WriterDirect, from: "spec.immediateWriter"},
		"edge over namespace":     {nc: nudgeConfig(konfluxv1alpha1.WriterDirect, edge("operand", "bundle", konfluxv1alpha1.WriterRenovate)), writer: nudgeapi.WriterRenovate, setting: konfluxv1alpha1.WriterRenovate, from: "edge operand -> bundle"},
		"another edge's override": {def: konfluxv1alpha1.WriterRenovate, nc: nudgeConfig("", edge("operand", "other", konfluxv1alpha1.WriterDirect), edge("operand", "bundle", "")), writer: nudgeapi.WriterRenovate, setting: konfluxv1alpha1.WriterRenovate, from: "--immediate-writer"},
	} {
		t.Run(name, func(t *testing.T) {
			var objs []ctrlclient.Object
			if c.nc != nil {
				objs = append(objs, c.nc)
			}
			got := choose(t, c.def, req, objs...)
			require.Equal(t, c.writer, got.Writer)
			require.Equal(t, string(c.setting), got.Setting)
			require.Contains(t, got.Reason, c.from)
			require.Empty(t, got.HeldBy)
		})
	}
}

// A collecting ChangeGroup that holds the edge sends the nudge to the Renovate
// path whatever the setting; a group that ended, a group of another edge, and
// the group that handed the build back do not.
func TestHoldingGroupKeepsTheRenovatePath(t *testing.T) {
	before := time.Now().Add(-time.Hour)
	nc := nudgeConfig(konfluxv1alpha1.WriterDirect, edge("operand", "bundle", ""))
	held := choose(t, "", req, nc, group("bundle-update", "", before))
	require.Equal(t, nudgeapi.WriterRenovate, held.Writer)
	require.Equal(t, "bundle-update", held.HeldBy)
	require.Contains(t, held.Reason, "ChangeGroup bundle-update holds operand->bundle")
	require.Equal(t, string(konfluxv1alpha1.WriterDirect), held.Setting)

	ended := choose(t, "", req, nc, group("bundle-update", appstudiov1alpha1.PhaseCompleted, before))
	require.Equal(t, nudgeapi.WriterDirect, ended.Writer)

	other := group("other-update", "", before)
	other.Spec.NudgedComponent = "other"
	require.Equal(t, nudgeapi.WriterDirect, choose(t, "", req, nc, other).Writer)

	handBack := req
	handBack.HandedBackBy = "bundle-update"
	require.Equal(t, nudgeapi.WriterDirect, choose(t, "", handBack, nc, group("bundle-update", "", before)).Writer)

	require.Equal(t, nudgeapi.WriterRenovate, choose(t, konfluxv1alpha1.WriterRenovate, req, group("bundle-update", "", before)).Writer,
		"renovate needs no group read")
}

// A request without an edge is a caller's bug: not retried.
func TestInvalidRequest(t *testing.T) {
	k := fake.NewClientBuilder().WithScheme(kube.NewScheme()).Build()
	_, err := (&Activities{Kube: k}).ChooseNudgeWriter(context.Background(), nudgeapi.WriterChoiceRequest{Namespace: "ns"})
	require.ErrorContains(t, err, "needs a namespace and an edge")
}
