package changegroup

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
)

// releases counts release syncs and returns the first one's digests.
func releases(f *fakeWorld) (int, map[string]string) {
	n := 0
	var first map[string]string
	for _, req := range f.syncs {
		if req.Mode == changegroupprapi.ModeRelease {
			if n == 0 {
				first = digestsOf(req)
			}
			n++
		}
	}
	return n, first
}

// The window policy: no new build for the window releases what is ready, once.
func TestAutoReleaseWindowReleasesWhatIsReady(t *testing.T) {
	f := newFakeWorld("a", "b", "c")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.build(20*time.Minute, "b", "sha256:b1", 2*time.Hour) // restarts the window
	h.prEvent(3*time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true})
	s := h.run(Input{AutoRelease: &AutoRelease{Window: 30 * time.Minute, MaxWait: 24 * time.Hour}, Automatic: true})
	n, first := releases(f)
	require.Equal(t, 1, n, "CI is released once")
	require.Equal(t, map[string]string{"a": "sha256:a1", "b": "sha256:b1"}, first)
	require.Contains(t, s.AutoReleased, "no new build for 30m0s")
	require.Contains(t, s.AutoReleased, "waiting for c")
	require.Equal(t, appstudiov1alpha1.PhaseCompleted, s.Phase)
}

// The quorum policy: a quiet window below the quorum releases nothing; the build
// that reaches it restarts the window, which then releases.
func TestAutoReleaseQuorumWaitsForQuorum(t *testing.T) {
	f := newFakeWorld("a", "b", "c")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.build(2*time.Hour, "b", "sha256:b1", 2*time.Hour) // the first window passed with 1 < 2
	h.prEvent(5*time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true})
	s := h.run(Input{AutoRelease: &AutoRelease{Window: 30 * time.Minute, MaxWait: 24 * time.Hour, Policy: autoReleaseQuorum, Quorum: 2}, Automatic: true})
	n, first := releases(f)
	require.Equal(t, 1, n)
	require.Equal(t, map[string]string{"a": "sha256:a1", "b": "sha256:b1"}, first, "released only once the quorum was ready")
	require.True(t, s.ReadyTime.Sub(s.StartTime) >= 2*time.Hour, "not before the second build")
}

// The all policy ignores the window; maxWait releases what is ready.
func TestAutoReleaseAllWaitsUntilMaxWait(t *testing.T) {
	f := newFakeWorld("a", "b")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.prEvent(30*time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true})
	s := h.run(Input{AutoRelease: &AutoRelease{Window: time.Minute, MaxWait: 24 * time.Hour, Policy: autoReleaseAll}, Automatic: true})
	n, first := releases(f)
	require.Equal(t, 1, n)
	require.Equal(t, map[string]string{"a": "sha256:a1"}, first)
	require.Contains(t, s.AutoReleased, "maxWait 24h0m0s passed")
	require.True(t, s.ReadyTime.Sub(s.StartTime) >= 24*time.Hour)
}

// A build after an automatic group released is not pushed (no second CI run): it
// is handed back, marked for the target's next batch.
func TestAutomaticGroupHandsLateBuildsToTheNextBatch(t *testing.T) {
	f := newFakeWorld("a", "b")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.build(2*time.Minute, "b", "sha256:b1", 2*time.Hour) // all ready: released
	h.build(10*time.Minute, "a", "sha256:a2", 3*time.Hour)
	h.prEvent(time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true})
	s := h.run(Input{AutoRelease: &AutoRelease{Window: time.Hour}, Automatic: true})
	n, _ := releases(f)
	require.Equal(t, 1, n)
	for _, req := range f.syncs {
		require.NotEqual(t, "sha256:a2", digestsOf(req)["a"], "the late build is not pushed to the released PR")
	}
	require.Len(t, f.handedBack, 1)
	require.Equal(t, "sha256:a2", f.handedBack[0].Digest)
	require.True(t, f.handedBack[0].Next, "it belongs to the next batch")
	require.Equal(t, appstudiov1alpha1.PhaseCompleted, s.Phase)
}

// maxWait with nothing ready ends the group (nothing to release, nothing held).
func TestAutoReleaseMaxWaitWithNothingReadyEnds(t *testing.T) {
	f := newFakeWorld("a")
	h := newHarness(t, f)
	s := h.run(Input{AutoRelease: &AutoRelease{MaxWait: time.Hour}})
	require.Equal(t, appstudiov1alpha1.PhaseCancelled, s.Phase)
	require.Equal(t, "MaxWaitNothingReady", s.Reason)
	require.Empty(t, f.syncs)
}
