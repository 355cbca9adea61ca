package changegroupcontroller

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
	"github.com/nudgeflow/nudgeflow/internal/metrics/metricstest"
)

type failingGates struct{}

func (failingGates) GatedTargets(context.Context, string, string, []string) (map[string]bool, error) {
	return nil, errors.New("NudgeConfig not readable")
}

// A nudge the interceptor lets run because it could not read the ChangeGroups, or
// the validated edges, counts in nudgeflow_admission_fail_open_total by reason; a
// nudge it decided to let run (no group holds it) does not.
func TestInterceptorCountsTheNudgesItLetsRunOnItsOwnError(t *testing.T) {
	count := func(reason string) float64 {
		return metricstest.FailOpens(t, metrics.WebhookNudgePipelineRun, reason)
	}
	groups, gating := count(metrics.FailOpenChangeGroupsUnread), count(metrics.FailOpenGatingUnread)
	nudge := func(i *Interceptor) admission.Response {
		t.Helper()
		raw, err := json.Marshal(map[string]any{"apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
			"metadata": map[string]any{"name": "nudge-x", "namespace": "ns",
				"labels":      map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue},
				"annotations": map[string]string{konflux.AnnotationNudging: "a", konflux.AnnotationNudged: "bundle"}},
			"spec": map[string]any{}})
		require.NoError(t, err)
		resp := i.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, Namespace: "ns", Object: runtime.RawExtension{Raw: raw}}})
		require.True(t, resp.Allowed)
		require.Empty(t, resp.Patches, "the nudge runs")
		return resp
	}

	healthy := fake.NewClientBuilder().WithScheme(kube.NewScheme()).Build()
	nudge(&Interceptor{Index: &grouplookup.Index{Cache: healthy}})
	require.Equal(t, groups, count(metrics.FailOpenChangeGroupsUnread), "no group holds it: a decision, not a fail-open")

	broken := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, ctrlclient.WithWatch, ctrlclient.ObjectList, ...ctrlclient.ListOption) error {
			return errors.New("cache not synced")
		}}).Build()
	nudge(&Interceptor{Index: &grouplookup.Index{Cache: broken}})
	require.Equal(t, groups+1, count(metrics.FailOpenChangeGroupsUnread))

	nudge(&Interceptor{Index: &grouplookup.Index{Cache: healthy}, Gates: failingGates{}})
	require.Equal(t, gating+1, count(metrics.FailOpenGatingUnread))
}
