package changegroup

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
	"github.com/nudgeflow/nudgeflow/internal/metrics/metricstest"
)

// The group's counters tell the ADR's story in numbers: builds held, one CI build
// where there would have been one per member, builds delivered by the merge.
func TestMetricsOfAReleasedAndMergedGroup(t *testing.T) {
	f := newFakeWorld("operand-a", "operand-b", "operator-img")
	m := metricstest.New()
	h := newHarnessWithMetrics(t, f, m)
	h.build(time.Minute, "operator-img", "sha256:img1", 1*time.Hour)
	h.build(2*time.Minute, "operand-a", "sha256:opa1", 2*time.Hour)
	h.build(3*time.Minute, "operator-img", "sha256:img2", 3*time.Hour)
	h.build(3*time.Minute+time.Second, "operator-img", "sha256:img2", 3*time.Hour) // redelivered
	h.build(4*time.Minute, "operator-img", "sha256:img0-late", 30*time.Minute)     // older
	h.build(5*time.Minute, "operand-b", "sha256:opb1", 4*time.Hour)
	h.prEvent(10*time.Minute, changegroupapi.PREvent{DeliveryID: "d1", Action: "closed", Number: 7, Merged: true, Closed: true})
	h.run(Input{})

	require.EqualValues(t, 4, m.Total(metrics.BuildsHeld), "img1, opa1, img2, opb1: a redelivered or older build is not held")
	require.EqualValues(t, 2, m.Total(metrics.CIBuildsSaved), "three members, one CI build")
	require.EqualValues(t, 3, m.Total(metrics.BuildsDelivered))
	require.EqualValues(t, 0, m.Total(metrics.BuildsHandedBack))
}

func TestMetricsOfACancelledGroup(t *testing.T) {
	f := newFakeWorld("a", "b")
	m := metricstest.New()
	h := newHarnessWithMetrics(t, f, m)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.update(5*time.Minute, changegroupapi.UpdateDropComponent, false, changegroupapi.DropRequest{Component: "a"})
	h.build(10*time.Minute, "a", "sha256:a2", 2*time.Hour) // rebuilt after the drop: handed back, not held
	h.build(11*time.Minute, "b", "sha256:b1", time.Hour)
	h.prEvent(time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Closed: true})
	h.run(Input{})

	require.EqualValues(t, 2, m.Total(metrics.BuildsHeld), "a1 and b1")
	require.EqualValues(t, 3, m.Total(metrics.BuildsHandedBack), "a1 and a2 at the drop, b1 when the PR closed")
	require.EqualValues(t, 0, m.Total(metrics.BuildsDelivered))
	require.EqualValues(t, 0, m.Total(metrics.CIBuildsSaved), "never released")
}
