package nudgeconfig_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
	"github.com/nudgeflow/nudgeflow/bridge/nudgeconfig"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
	"github.com/nudgeflow/nudgeflow/test/world"
)

func shipped(ns string, annotations map[string]string, nudges ...mirrorv1beta2.NudgeRelationship) *mirrorv1beta2.NudgeConfig {
	return &mirrorv1beta2.NudgeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: nudgeconfigs.Name, Namespace: ns, Annotations: annotations},
		Spec:       mirrorv1beta2.NudgeConfigSpec{Nudges: nudges},
	}
}

// eventsOn lists the Events nudgeflow recorded on the NudgeConfig with reason.
func eventsOn(t *testing.T, w *world.World, ns, reason string) []corev1.Event {
	t.Helper()
	var list corev1.EventList
	require.NoError(t, w.Kube.List(context.Background(), &list, ctrlclient.InNamespace(ns)))
	var out []corev1.Event
	for _, e := range list.Items {
		if e.Reason == reason && e.InvolvedObject.Name == nudgeconfigs.Name {
			out = append(out, e)
		}
	}
	return out
}

// The NudgeConfig integration-service ships is read as nudgeflow reads its own:
// the API server (integration-service's CRD and CEL) admits it, nudgeflow's webhook
// is not asked (integration-service owns its admission), its stale references are
// reported with integration-service's own condition, and an Event says who nudges
// each edge.
func TestShippedNudgeConfig(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	ns := w.Namespace(t)
	createComponents(t, w, ns, []string{"operand", "bundle", "tests"}, nil)
	nc := shipped(ns, nil,
		mirrorv1beta2.NudgeRelationship{From: "operand", To: "bundle"},
		mirrorv1beta2.NudgeRelationship{From: "operand", To: "tests", Mode: mirrorv1beta2.NudgeModeValidated},
		mirrorv1beta2.NudgeRelationship{From: "operand", To: "gone"},
	)
	require.NoError(t, w.Kube.Create(ctx, nc), "nudgeflow adds no admission to integration-service's kind (gone is unknown, yet admitted)")
	require.Equal(t, mirrorv1beta2.NudgeModeImmediate, nc.Spec.Nudges[0].Mode, "integration-service's CRD defaults the mode")

	err := w.Kube.Create(ctx, &mirrorv1beta2.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns}})
	require.ErrorContains(t, err, "NudgeConfig must be named 'nudge-config' (singleton per namespace)", "integration-service's CEL, verbatim")

	var stored mirrorv1beta2.NudgeConfig
	world.Eventually(t, 15*time.Second, "StaleReferences names gone", func() (bool, error) {
		if err := w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(nc), &stored); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(stored.Status.Conditions, mirrorv1beta2.ConditionStaleReferences)
		return c != nil && c.Status == metav1.ConditionTrue, nil
	})
	c := meta.FindStatusCondition(stored.Status.Conditions, mirrorv1beta2.ConditionStaleReferences)
	require.Equal(t, mirrorv1beta2.ReasonStaleReferencesDetected, c.Reason)
	require.Equal(t, `NudgeConfig references non-existent Component(s) in namespace "`+ns+`"; missing 'to' component(s): gone`, c.Message,
		"integration-service's message, byte for byte")

	createComponents(t, w, ns, []string{"gone"}, nil)
	world.Eventually(t, 15*time.Second, "StaleReferences turns False", func() (bool, error) {
		if err := w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(nc), &stored); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(stored.Status.Conditions, mirrorv1beta2.ConditionStaleReferences)
		return c != nil && c.Reason == mirrorv1beta2.ReasonNoStaleReferences, nil
	})
	require.Len(t, stored.Spec.Nudges, 3, "entries are never deleted")

	// This suite's bridge runs without peers: every edge is nudgeflow's.
	var told []corev1.Event
	world.Eventually(t, 15*time.Second, "the NudgedBy Event", func() (bool, error) {
		told = eventsOn(t, w, ns, nudgeconfig.ReasonNudgedBy)
		return len(told) > 0, nil
	})
	require.Equal(t, "edges nudged by (peers: none): nudgeflow: operand -> bundle, operand -> tests (validated), operand -> gone", told[0].Message)
	require.Equal(t, "appstudio.redhat.com/v1beta2", told[0].InvolvedObject.APIVersion)

	read, err := nudgeconfigs.Get(ctx, w.Kube, ns)
	require.NoError(t, err)
	require.True(t, nudgeconfigs.IsShipped(read))
	require.Equal(t, []konfluxv1alpha1.NudgeRelationship{
		{From: "operand", To: "bundle", Mode: konfluxv1alpha1.ModeImmediate},
		{From: "operand", To: "tests", Mode: konfluxv1alpha1.ModeValidated},
		{From: "operand", To: "gone", Mode: konfluxv1alpha1.ModeImmediate},
	}, read.Spec.Nudges)

	// Where a namespace holds both kinds, integration-service's is read: it is the
	// one build-service and integration-service act on.
	require.NoError(t, w.Kube.Create(ctx, nudgeConfig(ns, edge("bundle", "tests"))))
	read, err = nudgeconfigs.Get(ctx, w.Kube, ns)
	require.NoError(t, err)
	require.True(t, nudgeconfigs.IsShipped(read))
}

// nudgeflow's batching policies ride on integration-service's kind as an
// annotation; one that cannot be read is reported on the object, and its edges are
// still read.
func TestShippedBatchingAnnotation(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	ns := w.Namespace(t)
	createComponents(t, w, ns, []string{"a", "b", "bundle"}, nil)
	edges := []mirrorv1beta2.NudgeRelationship{{From: "a", To: "bundle"}, {From: "b", To: "bundle"}}
	require.NoError(t, w.Kube.Create(ctx, shipped(ns, map[string]string{nudgeconfigs.AnnotationBatching: `[{"target":"bundle","window":"20m"}]`}, edges...)))
	read, err := nudgeconfigs.Get(ctx, w.Kube, ns)
	require.NoError(t, err)
	require.Equal(t, "bundle", read.Spec.BatchingFor("bundle").Target)
	require.Equal(t, 20*time.Minute, read.Spec.BatchingFor("bundle").Window.Duration)

	bad := w.Namespace(t)
	createComponents(t, w, bad, []string{"a", "b", "bundle"}, nil)
	require.NoError(t, w.Kube.Create(ctx, shipped(bad, map[string]string{nudgeconfigs.AnnotationBatching: `[{"target":"bundle","release":"quorum"}]`}, edges...)))
	var warned []corev1.Event
	world.Eventually(t, 15*time.Second, "the BatchingIgnored Event", func() (bool, error) {
		warned = eventsOn(t, w, bad, nudgeconfig.ReasonBatchingIgnored)
		return len(warned) > 0, nil
	})
	require.Equal(t, corev1.EventTypeWarning, warned[0].Type)
	require.True(t, strings.Contains(warned[0].Message, "has release quorum and needs quorum"), warned[0].Message)
	read, err = nudgeconfigs.Get(ctx, w.Kube, bad)
	require.ErrorContains(t, err, "annotation nudgeflow.konflux-ci.dev/batching ignored")
	require.Len(t, read.Spec.Nudges, 2)
	require.Nil(t, read.Spec.BatchingFor("bundle"))
}

// nudgeflow migrate writes integration-service's kind from build-nudges-ref and
// converts between the kinds on the real API server, losing nothing.
func TestMigrateToShippedAndBack(t *testing.T) {
	ctx := context.Background()
	w, cfg, ns, _, _ := tenantNamespace(t)
	out, err := nudgeflow(t, "migrate", "--kubeconfig", cfg, "-n", ns, "--to", "appstudio.redhat.com/v1beta2")
	require.NoError(t, err, out)
	require.Contains(t, out, "applied NudgeConfig "+ns+"/nudge-config (appstudio.redhat.com/v1beta2) with 9 nudge(s)")
	var s mirrorv1beta2.NudgeConfig
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: nudgeconfigs.Name}, &s))
	fromRefs, err := nudgeconfigs.Get(ctx, w.Kube, ns)
	require.NoError(t, err)
	require.Len(t, fromRefs.Spec.Nudges, 9)

	// A team adds a gated and an ungated validated edge and batching, then moves to
	// nudgeflow's kind and back.
	base := s.DeepCopy()
	s.Spec.Nudges = append(s.Spec.Nudges,
		mirrorv1beta2.NudgeRelationship{From: "svc-02", To: "svc-03", Mode: mirrorv1beta2.NudgeModeValidated, GatingGroup: "ui"},
		mirrorv1beta2.NudgeRelationship{From: "svc-04", To: "svc-05", Mode: mirrorv1beta2.NudgeModeValidated})
	s.Annotations = map[string]string{nudgeconfigs.AnnotationBatching: `[{"target":"bottom","release":"all"}]`}
	require.NoError(t, w.Kube.Patch(ctx, &s, ctrlclient.MergeFrom(base)))
	want, err := nudgeconfigs.Get(ctx, w.Kube, ns)
	require.NoError(t, err)

	// nudgeflow's kind requires a gatingGroup on a validated edge (ADR 67): with no
	// ComponentGroup listing svc-04 the conversion names the edge and writes nothing.
	out, err = nudgeflow(t, "migrate", "--kubeconfig", cfg, "-n", ns, "--to", "konflux-ci.dev/v1alpha1")
	require.Error(t, err, out)
	require.Contains(t, out, "  x validated svc-04 -> svc-05 has no gatingGroup, which konflux-ci.dev/v1alpha1 requires (ADR 67), and no ComponentGroup lists svc-04: add gatingGroup: <a ComponentGroup> to this edge in the appstudio.redhat.com/v1beta2 NudgeConfig, then run again")
	_, err = getNudgeConfig(t, w, ns)
	require.True(t, apierrors.IsNotFound(err), "nothing written: %v", err)
	// With exactly one ComponentGroup listing svc-04, that group gates the edge.
	require.NoError(t, w.Kube.Create(ctx, &mirrorv1beta2.ComponentGroup{ObjectMeta: metav1.ObjectMeta{Name: "backend", Namespace: ns},
		Spec: mirrorv1beta2.ComponentGroupSpec{Components: []mirrorv1beta2.ComponentGroupMember{{Name: "svc-04"}, {Name: "svc-06"}}}}))
	out, err = nudgeflow(t, "migrate", "--kubeconfig", cfg, "-n", ns, "--to", "konflux-ci.dev/v1alpha1")
	require.NoError(t, err, out)
	require.Contains(t, out, "converting the NudgeConfig from appstudio.redhat.com/v1beta2 to konflux-ci.dev/v1alpha1: 11 nudge(s), 1 batching polic(ies)")
	require.Contains(t, out, "  ~ validated svc-04 -> svc-05 had no gatingGroup: gated by backend, the only ComponentGroup listing svc-04")
	own, err := getNudgeConfig(t, w, ns)
	require.NoError(t, err)
	want.Spec.Nudges[len(want.Spec.Nudges)-1].GatingGroup = "backend"
	require.Equal(t, want.Spec, own.Spec, "every edge, mode, gating group (the one filled) and the batching policy")

	// Back: delete integration-service's object (as the report says), convert again.
	require.NoError(t, w.Kube.Delete(ctx, &s))
	out, err = nudgeflow(t, "migrate", "--kubeconfig", cfg, "-n", ns, "--to", "appstudio.redhat.com/v1beta2")
	require.NoError(t, err, out)
	again, err := nudgeconfigs.Get(ctx, w.Kube, ns)
	require.NoError(t, err)
	require.True(t, nudgeconfigs.IsShipped(again))
	require.Equal(t, want.Spec, again.Spec)
}
