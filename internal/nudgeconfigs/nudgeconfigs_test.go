package nudgeconfigs

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
)

func own() *konfluxv1alpha1.NudgeConfig {
	return &konfluxv1alpha1.NudgeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: "tenant", Labels: map[string]string{"team": "x"}, Annotations: map[string]string{"note": "kept"}},
		Spec: konfluxv1alpha1.NudgeConfigSpec{
			Nudges: []konfluxv1alpha1.NudgeRelationship{
				{From: "a", To: "bundle", Mode: konfluxv1alpha1.ModeImmediate},
				{From: "b", To: "bundle"},
				{From: "a", To: "gated", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "group"},
				{From: "b", To: "ungated", Mode: konfluxv1alpha1.ModeValidated},
			},
			Batching: []konfluxv1alpha1.BatchingPolicy{{
				Target: "bundle", Window: &metav1.Duration{Duration: 10 * time.Minute}, MaxWait: &metav1.Duration{Duration: 2 * time.Hour},
				Release: konfluxv1alpha1.ReleaseQuorum, Quorum: ptr.To[int32](2),
			}},
		},
	}
}

// Both directions lose nothing: edges in order with their modes (the empty mode
// stays empty, as the API server's default fills it), gating groups (an ungated
// validated edge too), batching, labels and annotations.
func TestRoundTrip(t *testing.T) {
	in := own()
	shipped, err := ToShipped(in)
	require.NoError(t, err)
	require.Equal(t, Shipped, shipped.GroupVersionKind())
	require.Len(t, shipped.Spec.Nudges, 4)
	require.Equal(t, mirrorv1beta2.NudgeRelationship{From: "b", To: "ungated", Mode: mirrorv1beta2.NudgeModeValidated}, shipped.Spec.Nudges[3])
	require.JSONEq(t, `[{"target":"bundle","window":"10m0s","maxWait":"2h0m0s","release":"quorum","quorum":2}]`, shipped.Annotations[AnnotationBatching])
	require.Equal(t, "kept", shipped.Annotations["note"])

	back, err := toOwn(shipped)
	require.NoError(t, err)
	require.Equal(t, in.Spec, back.Spec)
	require.Equal(t, in.Labels, back.Labels)
	require.Equal(t, in.Annotations, back.Annotations, "the batching annotation becomes the field again")
	require.Equal(t, Own, back.GroupVersionKind())

	again, err := ToShipped(back)
	require.NoError(t, err)
	require.Equal(t, shipped.Spec, again.Spec)
	require.Equal(t, shipped.Annotations, again.Annotations)
}

// Read as the bridge reads it, a shipped NudgeConfig keeps its identity (the owner
// reference of an automatic ChangeGroup points at it) and says where it came from.
func TestFromShipped(t *testing.T) {
	s, err := ToShipped(own())
	require.NoError(t, err)
	s.UID, s.Generation = "uid-1", 3
	s.Status.Conditions = []metav1.Condition{{Type: mirrorv1beta2.ConditionStaleReferences, Status: metav1.ConditionFalse}}
	nc, err := FromShipped(s)
	require.NoError(t, err)
	require.True(t, IsShipped(nc))
	require.Equal(t, "appstudio.redhat.com/v1beta2", APIOf(nc))
	require.Equal(t, s.UID, nc.UID)
	require.Equal(t, own().Spec.Batching, nc.Spec.Batching)
	require.Equal(t, s.Status.Conditions, nc.Status.Conditions)
	require.False(t, IsShipped(own()))
	require.Equal(t, "konflux-ci.dev/v1alpha1", APIOf(own()))
}

// A batching annotation that cannot be read turns batching off with an error that
// says what to write; the edges are all there.
func TestBadBatchingAnnotation(t *testing.T) {
	for raw, want := range map[string]string{
		`{"target":"bundle"}`:                           "want a JSON list",
		`[{"target":"bundle","windw":"1m"}]`:            `unknown field "windw"`,
		`[{"target":""}]`:                               "target is required",
		`[{"target":"b","release":"quorum"}]`:           "needs quorum",
		`[{"target":"b","quorum":1}]`:                   "quorum needs release: quorum",
		`[{"target":"b","release":"sometimes"}]`:        `release "sometimes"`,
		`[{"target":"b","window":"2h","maxWait":"1h"}]`: "longer than maxWait",
		`[{"target":"b"},{"target":"b"}]`:               "two policies",
	} {
		s := &mirrorv1beta2.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: "ns", Annotations: map[string]string{AnnotationBatching: raw}},
			Spec: mirrorv1beta2.NudgeConfigSpec{Nudges: []mirrorv1beta2.NudgeRelationship{{From: "a", To: "b"}}}}
		nc, err := FromShipped(s)
		var berr *BatchingError
		require.True(t, errors.As(err, &berr), raw)
		require.ErrorContains(t, err, want, raw)
		require.ErrorContains(t, err, "annotation nudgeflow.konflux-ci.dev/batching ignored", raw)
		require.NoError(t, IgnoreBatchingError(err))
		require.Len(t, nc.Spec.Nudges, 1, raw)
		require.Empty(t, nc.Spec.Batching, raw)
		_, err = toOwn(s)
		require.Error(t, err, "a conversion never drops what it cannot read")
	}
}

// integration-service's kind holds at most 360 edges (IS 2db9714, without a
// served CRD to say otherwise): a larger config is refused, naming where the limit
// came from; a served CRD's other limit is the one applied.
func TestToShippedRefusesMoreThanItHolds(t *testing.T) {
	nc := &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: "big"}}
	for i := 0; i <= mirrorv1beta2.MaxNudges; i++ {
		nc.Spec.Nudges = append(nc.Spec.Nudges, konfluxv1alpha1.NudgeRelationship{From: fmt.Sprintf("c%d", i), To: "bundle"})
	}
	_, err := ToShipped(nc)
	require.ErrorContains(t, err, "has 361 edges; integration-service's NudgeConfig (appstudio.redhat.com/v1beta2) holds at most 360 (nudgeflow's copy of nudgeconfigs.appstudio.redhat.com's maxItems)")
	_, err = ToShippedWithin(nc, Limit{Max: 400, From: "served"})
	require.NoError(t, err, "the served limit, not the copy")
	nc.Spec.Nudges = nc.Spec.Nudges[:mirrorv1beta2.MaxNudges]
	s, err := ToShipped(nc)
	require.NoError(t, err)
	raw, err := json.Marshal(s)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"apiVersion":"appstudio.redhat.com/v1beta2"`)
	_, err = ToShippedWithin(nc, Limit{Max: 300, From: "maxItems of the served CRD"})
	require.ErrorContains(t, err, "has 360 edges; integration-service's NudgeConfig (appstudio.redhat.com/v1beta2) holds at most 300 (maxItems of the served CRD)")
}
