package metricstest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/internal/metrics"
)

// FailOpens is the value of metrics.AdmissionFailOpen for webhook and reason in
// the process's registry (-1: no such series). The counter is process-global, so
// tests compare it before and after what they do.
func FailOpens(t testing.TB, webhook, reason string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != metrics.AdmissionFailOpen {
			continue
		}
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if got["webhook"] == webhook && got["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}
