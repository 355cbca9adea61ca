package builds

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
	"github.com/nudgeflow/nudgeflow/internal/metrics/metricstest"
)

// A build admitted unheld because the hook could not read its edges or decode
// it counts in nudgeflow_admission_fail_open_total; builds the hook decided on
// (held, or with nothing to hold) do not.
func TestHolderCountsTheBuildsItAdmitsOnItsOwnError(t *testing.T) {
	count := func(reason string) float64 {
		return metricstest.FailOpens(t, metrics.WebhookBuildRouting, reason)
	}
	edges, undecodable := count(metrics.FailOpenEdgesUnread), count(metrics.FailOpenUndecodable)

	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"},
			Spec: mirrorv1alpha1.ComponentSpec{BuildNudgesRef: []string{"b"}}},
	).Build()
	require.Len(t, admit(t, &Holder{Reader: c}, pushBuild("a")).Patches, 1, "held")
	require.Empty(t, admit(t, &Holder{Reader: c}, pushBuild("no-edges")).Patches, "nothing to hold")
	require.Equal(t, edges, count(metrics.FailOpenEdgesUnread), "decisions are not fail-opens")

	resp := admit(t, &Holder{Reader: failingReader{}}, pushBuild("a"))
	require.True(t, resp.Allowed)
	require.Empty(t, resp.Patches)
	require.Equal(t, edges+1, count(metrics.FailOpenEdgesUnread), "edges unread: admitted unheld, counted")

	resp = (&Holder{Reader: c}).Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Namespace: "ns", Object: runtime.RawExtension{Raw: []byte(`{"metadata": 7}`)}}})
	require.True(t, resp.Allowed)
	require.Equal(t, undecodable+1, count(metrics.FailOpenUndecodable))
}
