package bench

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

func snapshot(t *testing.T, h prometheus.Histogram) nativeHist {
	t.Helper()
	var m dto.Metric
	require.NoError(t, h.Write(&m))
	return fromDTO(m.GetHistogram())
}

// TestNativeQuantiles: quantiles read from a native histogram are the upper bound
// of the right bucket (never low, at most one bucket high), and a difference of two
// snapshots holds what was observed between them.
func TestNativeQuantiles(t *testing.T) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x", NativeHistogramBucketFactor: 1.05,
		NativeHistogramMaxBucketNumber: 300, NativeHistogramMinResetDuration: time.Hour})
	for i := 0; i < 1000; i++ {
		h.Observe(0.010) // 10 ms, before
	}
	before := snapshot(t, h)
	require.EqualValues(t, 1000, before.total())
	for i := 1; i <= 100; i++ {
		h.Observe(float64(i) / 1e5) // 10 µs … 1 ms
	}
	d := snapshot(t, h).minus(before)
	require.EqualValues(t, 100, d.total())
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.99, 990 * time.Microsecond}, {1, time.Millisecond}} {
		got := d.quantile(c.q)
		require.GreaterOrEqual(t, got, c.want, "q%.2f", c.q)
		require.LessOrEqual(t, float64(got), float64(c.want)*1.05, "q%.2f", c.q)
	}
	require.Zero(t, nativeHist{counts: map[int]uint64{}}.quantile(0.99))

	// Halving the resolution keeps every count and the bounds.
	coarse := d.coarsen(d.schema - 2)
	require.EqualValues(t, 100, coarse.total())
	require.GreaterOrEqual(t, coarse.quantile(0.99), 990*time.Microsecond)
}

func TestSampleQuantiles(t *testing.T) {
	var s samples
	for i := 100; i >= 1; i-- {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	require.Equal(t, 50*time.Millisecond, s.quantile(0.5))
	require.Equal(t, 99*time.Millisecond, s.quantile(0.99))
	require.Equal(t, 100*time.Millisecond, s.quantile(1))
	require.Zero(t, samples(nil).quantile(0.5))
}
