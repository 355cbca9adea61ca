package deploy_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/nudgeflow/nudgeflow/internal/metrics"
)

// checkAlertMetrics: every nudgeflow, Temporal SDK, controller-runtime and leader
// election metric an alert of deploy/monitoring/alerts.yaml queries is one the
// processes reported in this scenario (scraped), one nudgeflow declares, or an SDK
// failure counter. test/alerts proves each rule on synthetic series; this proves the
// series' names are those the processes export (an SDK or controller-runtime
// upgrade that renames one fails here, not silently in production).
func checkAlertMetrics(t *testing.T, scraped string) {
	raw, err := os.ReadFile(deployDir("monitoring", "alerts.yaml"))
	require.NoError(t, err)
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert string `json:"alert"`
					Expr  string `json:"expr"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &rule))
	name := regexp.MustCompile(`\b(?:nudgeflow|temporal|controller_runtime|workqueue|rest_client|leader_election)_[a-z0-9_]+`)
	seen := 0
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			for _, n := range name.FindAllString(r.Expr, -1) {
				seen++
				// A histogram's series are reported under _bucket, _sum, _count.
				reported := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(n) + `[{ ]`).MatchString(scraped)
				known := reported || slices.Contains(sdkMetricsOnEvents, n) ||
					strings.HasPrefix(n, "nudgeflow_") && slices.Contains(metrics.Declared(), n)
				require.True(t, known, "%s queries %s, which no process reports", r.Alert, n)
			}
		}
	}
	require.NotZero(t, seen)
}
