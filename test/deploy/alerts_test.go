package deploy_test

import (
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Every variant with monitoring ships nudgeflow's alerts as written in
// deploy/monitoring/alerts.yaml (test/alerts proves each rule), beside the
// ServiceMonitor whose job labels they select, and the API server accepts the
// PrometheusRule (server-side dry run against the operator's CRD from
// test/deploy/crds).
func TestMonitoringShipsTheAlerts(t *testing.T) {
	raw, err := os.ReadFile(deployDir("monitoring", "alerts.yaml"))
	require.NoError(t, err)
	var written map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &written))
	applied(t) // the namespace exists
	for _, v := range variants(t) {
		rule := v.objs.find("PrometheusRule", "nudgeflow")
		if !slices.Contains(v.features, "monitoring") {
			require.Nil(t, rule, "%s: alerts come with the monitoring component only", v.name)
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			require.NotNil(t, rule, "the monitoring component ships the PrometheusRule")
			spec, _, _ := unstructured.NestedMap(rule.Object, "spec")
			require.Equal(t, written["spec"], spec, "the overlays leave the rules as written")
			require.Equal(t, v.objs.ofKind("ServiceMonitor")[0].GetNamespace(), rule.GetNamespace())
			out, err := kubectl(t, manifests{rule}.yaml(t), "apply", "--server-side", "--dry-run=server", "--field-manager", "deploy-test", "-f", "-")
			require.NoError(t, err, "%s", out)
			require.Contains(t, out, "prometheusrule.monitoring.coreos.com/nudgeflow")
		})
	}
}
