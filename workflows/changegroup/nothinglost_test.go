package changegroup

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
)

// Nothing lost: a build the group held is in its merged PR or handed back to normal
// nudging; these tests prove each path that used to lose one.

func TestDropHandsBackAndLaterBuildsToo(t *testing.T) {
	f := newFakeWorld("a", "b")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.update(5*time.Minute, changegroupapi.UpdateDropComponent, false, changegroupapi.DropRequest{Component: "a"})
	h.build(10*time.Minute, "a", "sha256:a2", 2*time.Hour) // rebuilt after the drop
	h.build(11*time.Minute, "b", "sha256:b1", time.Hour)
	h.prEvent(time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true})
	s := h.run(Input{})
	require.Equal(t, appstudiov1alpha1.PhaseCompleted, s.Phase)
	require.Equal(t, map[string][]string{"a": {"sha256:a1", "sha256:a2"}}, f.handedBackDigests(),
		"the dropped member's collected build and its rebuild are nudged normally; b is in the merged PR")
	require.Equal(t, map[string]string{"b": "sha256:b1"}, digestsOf(f.lastSync()))
}

func TestOverridesDuringASyncTakeEffectAfterIt(t *testing.T) {
	f := newFakeWorld("a", "b", "c")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.build(time.Minute, "b", "sha256:b1", time.Hour)
	// While the first (held) push is in flight, a person drops c and asks to release.
	f.duringSync = func() {
		h.env.UpdateWorkflow(changegroupapi.UpdateDropComponent, "drop-c", noopCallback(t), changegroupapi.DropRequest{Component: "c"})
		h.env.UpdateWorkflow(changegroupapi.UpdateReleaseNow, "release", noopCallback(t))
	}
	h.prEvent(time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true})
	s := h.run(Input{})
	require.GreaterOrEqual(t, len(f.syncs), 2)
	require.Equal(t, changegroupprapi.ModeHold, f.syncs[0].Mode)
	last := f.lastSync()
	require.Equal(t, changegroupprapi.ModeRelease, last.Mode, "the release requested during the first push is pushed after it")
	require.Equal(t, string(appstudiov1alpha1.ComponentDropped), rowOf(last, "c").State, "the drop requested during the push is in the next one")
	require.True(t, s.Released)
}

func TestRebaseDuringASyncIsNotCleared(t *testing.T) {
	f := newFakeWorld("a", "b")
	f.humanEdits = true
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.build(30*time.Minute, "b", "sha256:b1", time.Hour)
	h.update(20*time.Minute, changegroupapi.UpdateRebase, false)
	// The overwriting sync is in flight when the person ticks rebase again.
	h.at(25*time.Minute, func() {
		f.mu.Lock()
		f.duringSync = func() { h.env.UpdateWorkflow(changegroupapi.UpdateRebase, "rebase-again", noopCallback(t)) }
		f.mu.Unlock()
	})
	h.prEvent(2*time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true})
	h.run(Input{})
	var overwrites int
	for _, req := range f.syncs {
		if req.Overwrite {
			overwrites++
		}
	}
	require.GreaterOrEqual(t, overwrites, 2, "the second rebase request is served by a later sync, not swallowed")
}

func TestBuildsAtTheEndAreHandedBack(t *testing.T) {
	f := newFakeWorld("a", "b", "c")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	// b arrives in the same moment as the merge (not pushed); c after the group ended.
	h.build(10*time.Minute, "b", "sha256:b1", time.Hour)
	h.prEvent(10*time.Minute, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true})
	// c's build arrives while the ended group is handing b back.
	f.duringHandBack = func() {
		h.env.SignalWorkflow(changegroupapi.SignalComponentBuilt, changegroupapi.ComponentBuilt{Component: "c", Build: imagebuild.Build{Digest: "sha256:c1", BuiltAt: time.Unix(0, 0).Add(time.Hour)}})
	}
	s := h.run(Input{})
	require.Equal(t, appstudiov1alpha1.PhaseCompleted, s.Phase)
	require.Equal(t, map[string][]string{"b": {"sha256:b1"}, "c": {"sha256:c1"}}, f.handedBackDigests(),
		"a is in the merged PR; b and c are nudged normally")
}

func TestCancelledGroupHandsBackEverything(t *testing.T) {
	f := newFakeWorld("a", "b")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.build(2*time.Minute, "b", "sha256:b1", time.Hour)
	h.update(10*time.Minute, changegroupapi.UpdateCancel, false, changegroupapi.CancelRequest{Reason: "not needed"})
	h.run(Input{})
	require.Equal(t, map[string][]string{"a": {"sha256:a1"}, "b": {"sha256:b1"}}, f.handedBackDigests())
	st := f.lastStatus()
	require.Contains(t, st.Conditions[0].Message, "2 build(s) handed back")
}

func TestFinalStatusIsRetriedUntilWritten(t *testing.T) {
	f := newFakeWorld("a")
	f.statusFailures = 3
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.prEvent(10*time.Minute, changegroupapi.PREvent{Action: "closed", Number: 7, Closed: true})
	s := h.run(Input{})
	require.Equal(t, appstudiov1alpha1.PhaseCancelled, s.Phase)
	require.Equal(t, appstudiov1alpha1.PhaseCancelled, f.lastStatus().Phase, "written after the API server came back")
	require.Zero(t, f.statusFailures)
	require.Equal(t, map[string][]string{"a": {"sha256:a1"}}, f.handedBackDigests())
}

func TestForgeOutageIsBoundedAndHandsBack(t *testing.T) {
	f := newFakeWorld("a", "b")
	f.syncErr = temporal.NewApplicationError("credentials rejected (401)", "Unauthorized")
	h := newHarness(t, f)
	h.env.SetTestTimeout(2 * time.Minute)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	s := h.run(Input{Namespace: "tenant", Name: "g", UID: "u",
		Settings: Settings{Debounce: time.Second, PollInterval: 10 * time.Minute, MaxForgeOutage: time.Hour}})
	require.Equal(t, appstudiov1alpha1.PhaseFailed, s.Phase)
	require.Equal(t, "ForgeUnavailable", s.Reason)
	require.Contains(t, s.Message, "credentials rejected")
	require.Equal(t, map[string][]string{"a": {"sha256:a1"}}, f.handedBackDigests())
}

func TestReaddedMemberStartsWaiting(t *testing.T) {
	f := newFakeWorld("a", "b")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.at(5*time.Minute, func() {
		h.env.SignalWorkflow(changegroupapi.SignalSpecChanged, SpecChanged{Generation: 2, NudgingComponents: []string{"b"}})
	})
	h.at(10*time.Minute, func() {
		h.env.SignalWorkflow(changegroupapi.SignalSpecChanged, SpecChanged{Generation: 3, NudgingComponents: []string{"a", "b"}})
	})
	var afterReadd *State
	h.at(20*time.Minute, func() {
		v, err := h.env.QueryWorkflow(changegroupapi.QueryState)
		require.NoError(t, err)
		require.NoError(t, v.Get(&afterReadd))
	})
	h.prEvent(time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Closed: true})
	h.run(Input{})
	require.NotNil(t, afterReadd)
	a := afterReadd.component("a")
	require.Equal(t, appstudiov1alpha1.ComponentWaiting, a.State, "a re-added member waits for its next build")
	require.Empty(t, a.New, "its build from before it left is not reused")
	require.Equal(t, []string{"sha256:a1"}, f.handedBackDigests()["a"], "that build was handed back when it left")
}

// TestContinueAsNewAfterEveryEvent runs a whole group as a chain of runs that each
// continue as new right after handling one event (the first before any build), and
// checks the chain ends exactly as one run would.
func TestContinueAsNewAfterEveryEvent(t *testing.T) {
	f := newFakeWorld("a", "b", "c")
	type event struct {
		gap  time.Duration
		send func(h *harness)
	}
	signal := func(name string, arg any) func(h *harness) {
		return func(h *harness) { h.env.SignalWorkflow(name, arg) }
	}
	built := func(c, d string, at time.Duration) func(h *harness) {
		return signal(changegroupapi.SignalComponentBuilt, changegroupapi.ComponentBuilt{Component: c, Build: imagebuild.Build{Digest: d, PullSpec: "quay.io/org/" + c + "@" + d, BuiltAt: time.Unix(0, 0).Add(at)}})
	}
	events := []event{
		{time.Minute, signal(changegroupapi.SignalPREvent, changegroupapi.PREvent{Action: "edited", Number: 99})}, // before any build
		{time.Minute, built("a", "sha256:a1", time.Hour)},
		{time.Minute, built("a", "sha256:a1", time.Hour)}, // redelivered
		{time.Minute, built("b", "sha256:b1", time.Hour)},
		{time.Minute, built("b", "sha256:b0", time.Minute)}, // older, late
		{time.Minute, func(h *harness) {
			h.env.UpdateWorkflow(changegroupapi.UpdateDropComponent, "drop-c", noopCallback(t), changegroupapi.DropRequest{Component: "c"})
		}},
		{time.Minute, signal(changegroupapi.SignalPREvent, changegroupapi.PREvent{Action: "synchronize", Number: 7})},
		{time.Minute, func(h *harness) { // the PR is merged on the forge, and the event says so
			f.mu.Lock()
			f.prState = changegroupprapi.PRMerged
			f.mu.Unlock()
			signal(changegroupapi.SignalPREvent, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true})(h)
		}},
	}
	in := Input{Namespace: "tenant", Name: "g", UID: "u", Settings: Settings{Debounce: time.Second, PollInterval: time.Hour}}
	clock := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	var final State
	// The merge (the last event) may be taken while the run already continues as
	// new (it drains every signal first, and the activity mocks finish on their own
	// goroutines): then one more run, with no event, ends the group.
	events = append(events, event{0, nil})
	for i, ev := range events {
		h := newHarness(t, f)
		h.env.SetStartTime(clock)
		if in.State != nil {
			h.env.SetContinuedExecutionRunID(fmt.Sprintf("run-%d", i-1)) // as the server says of a continued run
		}
		if send := ev.send; send != nil {
			h.at(time.Millisecond, func() {
				send(h)
				h.env.SetContinueAsNewSuggested(true)
			})
		}
		h.env.ExecuteWorkflow(changegroupapi.WorkflowName, in)
		require.True(t, h.env.IsWorkflowCompleted(), "run %d", i)
		err := h.env.GetWorkflowError()
		if err == nil && i >= len(events)-2 {
			require.NoError(t, h.env.GetWorkflowResult(&final))
			break
		}
		require.Less(t, i, len(events)-1, "the run after the merge completes: %v", err)
		var can *workflow.ContinueAsNewError
		require.True(t, errors.As(err, &can), "run %d continued as new, got %v", i, err)
		var next Input
		require.NoError(t, converterFor().FromPayloads(can.Input, &next))
		require.NotNil(t, next.State)
		in = next
		clock = clock.Add(ev.gap)
	}
	require.Equal(t, appstudiov1alpha1.PhaseCompleted, final.Phase)
	require.Equal(t, map[string]string{"a": "sha256:a1", "b": "sha256:b1"}, digestsOf(f.lastSync()))
	require.Equal(t, changegroupprapi.ModeRelease, f.lastSync().Mode, "with c dropped, a and b are all there is")
	require.Empty(t, f.handedBackDigests(), "every build is in the merged PR")
}

func noopCallback(t *testing.T) *updateCallback {
	return &updateCallback{t: t}
}

type updateCallback struct{ t *testing.T }

func (c *updateCallback) Accept()             {}
func (c *updateCallback) Reject(err error)    { c.t.Errorf("update rejected: %v", err) }
func (c *updateCallback) Complete(any, error) {}

func rowOf(req changegroupprapi.SyncRequest, component string) changegroupprapi.Row {
	for _, r := range req.Rows {
		if r.Component == component {
			return r
		}
	}
	return changegroupprapi.Row{}
}

// A drop before anything is ready asks for urgency when no push can be due: the
// workflow must go on waiting, not spin (the SDK's deadlock detector fails it).
func TestDropBeforeAnythingIsReadyDoesNotSpin(t *testing.T) {
	f := newFakeWorld("a", "b")
	h := newHarness(t, f)
	h.update(time.Minute, changegroupapi.UpdateDropComponent, false, changegroupapi.DropRequest{Component: "a"})
	h.build(10*time.Minute, "b", "sha256:b1", time.Hour)
	h.prEvent(time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true})
	s := h.run(Input{})
	require.Equal(t, appstudiov1alpha1.PhaseCompleted, s.Phase)
	require.Equal(t, map[string]string{"b": "sha256:b1"}, digestsOf(f.lastSync()))
}

// A merge that lands while a sync is pushing may not carry that push: the digests
// it pushed are handed back, not counted as delivered.
func TestPushRacingAMergeIsHandedBack(t *testing.T) {
	f := newFakeWorld("a", "b")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.build(5*time.Minute, "b", "sha256:b1", time.Hour)
	h.at(4*time.Minute, func() {
		f.mu.Lock()
		f.prState = changegroupprapi.PRMerged // merged (no webhook yet): the sync for b finds it so
		f.mu.Unlock()
	})
	s := h.run(Input{})
	require.Equal(t, appstudiov1alpha1.PhaseCompleted, s.Phase)
	require.Equal(t, map[string][]string{"b": {"sha256:b1"}}, f.handedBackDigests(),
		"a was pushed while the PR was open; b's push raced the merge")
}

// A group whose CR is gone before it could read it (deleted a moment after its
// creation) still knows where its held builds go: the nudged component the bridge
// named when it started the workflow (found by the chaos test: a hand-back with no
// target nudged nothing).
func TestGroupThatNeverResolvedHandsBackToTheNudgedComponent(t *testing.T) {
	f := newFakeWorld("a")
	f.resolveErr = temporal.NewNonRetryableApplicationError("ChangeGroup tenant/cg no longer exists", "ChangeGroupGone", nil)
	h := newHarness(t, f)
	h.build(0, "a", "sha256:a1", time.Hour)
	s := h.run(Input{NudgedComponent: "bundle-x"})
	require.True(t, s.Phase.IsFinal(), "phase %s", s.Phase)
	require.Equal(t, map[string][]string{"a": {"sha256:a1"}}, f.handedBackDigests())
	require.Equal(t, []string{"bundle-x"}, f.targets)
}
