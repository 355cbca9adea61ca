package changegroup

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
)

// overrideDuringResolve sends an update while the group resolves its components at
// creation (the state is not initialized yet), as the bridge does for a ChangeGroup
// applied with an override annotation already set.
func overrideDuringResolve(t *testing.T, h *harness, name string, args ...any) *[]error {
	var errs []error
	h.f.duringResolve = func() {
		h.env.UpdateWorkflow(name, "at-creation", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { errs = append(errs, err) },
			OnAccept:   func() {},
			OnComplete: func(_ any, err error) { errs = append(errs, err) },
		}, args...)
	}
	return &errs
}

// An override present when the group is created is applied, not rejected by a
// validator that read the state before it existed.
func TestOverrideAtCreationIsApplied(t *testing.T) {
	t.Run("cancel", func(t *testing.T) {
		f := newFakeWorld("a", "b")
		h := newHarness(t, f)
		errs := overrideDuringResolve(t, h, changegroupapi.UpdateCancel, changegroupapi.CancelRequest{Reason: "applied from GitOps cancelled"})
		// Without the cancel the group would wait for b until its PR is closed.
		h.prEvent(10*time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Closed: true})
		s := h.run(Input{})
		require.Equal(t, []error{nil}, *errs, "accepted and completed")
		require.Equal(t, appstudiov1alpha1.PhaseCancelled, s.Phase)
		require.Contains(t, s.Message, "applied from GitOps cancelled")
		require.Empty(t, f.syncs, "cancelled before it opened a pull request")
	})
	t.Run("release-now", func(t *testing.T) {
		f := newFakeWorld("a", "b", "c")
		h := newHarness(t, f)
		errs := overrideDuringResolve(t, h, changegroupapi.UpdateReleaseNow)
		h.build(time.Minute, "a", "sha256:a1", time.Hour)
		h.prEvent(time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true, Closed: true})
		s := h.run(Input{})
		require.Equal(t, []error{nil}, *errs, "accepted and completed")
		require.True(t, s.Released, "released with what was ready")
		require.Equal(t, changegroupprapi.ModeRelease, f.syncs[0].Mode, "the first push releases: nobody waits for b and c")
	})
	t.Run("drop of a non-member is still refused", func(t *testing.T) {
		f := newFakeWorld("a", "b")
		h := newHarness(t, f)
		errs := overrideDuringResolve(t, h, changegroupapi.UpdateDropComponent, changegroupapi.DropRequest{Component: "zz"})
		h.prEvent(time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Closed: true})
		h.build(time.Minute, "a", "sha256:a1", time.Hour)
		h.run(Input{})
		require.Len(t, *errs, 1)
		require.ErrorContains(t, (*errs)[0], `component "zz" is not a member`)
	})
}
