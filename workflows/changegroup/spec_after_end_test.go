package changegroup

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
)

// A spec edit that arrives after the group ended (its final status still being
// written) must not hand back a build the merged PR delivered: that would nudge a
// digest already merged a second time.
func TestSpecEditAfterEndHandsBackNothingDelivered(t *testing.T) {
	f := newFakeWorld("a", "b")
	// The final status write fails twice: the workflow is still ending (backing off)
	// when the spec edit arrives.
	f.statusFailures = 2
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.build(time.Minute, "b", "sha256:b1", time.Hour)
	h.prEvent(time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true, Closed: true})
	h.at(time.Hour+30*time.Second, func() {
		h.env.SignalWorkflow(changegroupapi.SignalSpecChanged, SpecChanged{Generation: 2, NudgingComponents: []string{"b"}})
	})
	s := h.run(Input{})
	require.Equal(t, appstudiov1alpha1.PhaseCompleted, s.Phase)
	require.Equal(t, map[string]string{"a": "sha256:a1", "b": "sha256:b1"}, digestsOf(f.lastSync()), "both were in the merged PR")
	require.Empty(t, f.handedBackDigests(), "a delivered build is never handed back, whatever the spec says after the end")
	require.Zero(t, f.statusFailures, "the spec edit arrived while the end was still being written")
}
