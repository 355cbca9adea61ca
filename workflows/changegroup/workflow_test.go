package changegroup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck/buildchecktest"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupcrapi"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/contracts/handbackapi"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
)

// fakeWorld stands in for the cluster and the forge: it records every request and
// answers like the real activities would.
type fakeWorld struct {
	mu         sync.Mutex
	resolved   changegroupcrapi.Resolved
	syncs      []changegroupprapi.SyncRequest
	observes   int
	closes     []changegroupprapi.CloseRequest
	statuses   []appstudiov1alpha1.ChangeGroupStatus
	prState    changegroupprapi.PRState
	humanEdits bool
	syncErr    error
	// duringSync runs inside the next sync activity (once), as an event that
	// arrives while a sync is in flight.
	duringSync func()
	// duringHandBack runs inside the next hand-back activity (once).
	duringHandBack func()
	handedBack     []handbackapi.Build
	targets        []string
	// resolveErr fails every resolve (the CR is gone).
	resolveErr error
	// statusFailures fails that many status writes of a final phase.
	statusFailures int
	// ci answers the CI reads (nil: a pipeline reported); ciReads are the reads.
	ci      func() changegroupprapi.CIObserved
	ciReads []changegroupprapi.CIRequest
	// comments are the comment requests (commentFailures fail first), posted the
	// ones that posted; events the Events recorded.
	comments        []changegroupprapi.CommentRequest
	commentFailures int
	commentRefused  bool
	posted          []changegroupprapi.CommentRequest
	events          []changegroupcrapi.EventRequest
	// duringResolve runs inside the next resolve activity (once).
	duringResolve func()
	// verifier stands in for the build verification: the cluster built everything
	// but what a test refuses.
	verifier *buildchecktest.Fake
}

func newFakeWorld(components ...string) *fakeWorld {
	f := &fakeWorld{verifier: buildchecktest.New(), resolved: changegroupcrapi.Resolved{
		NudgedComponent: "bundle-x",
		Repo:            changegroupprapi.Repo{Provider: "github", URL: "https://github.com/org/bundle", Namespace: "tenant"},
		FileMatch:       []string{".*Dockerfile.*", ".*.yaml"},
	}}
	for _, c := range components {
		f.resolved.Components = append(f.resolved.Components, changegroupcrapi.ResolvedComponent{Name: c, Image: "quay.io/org/" + c, Original: "sha256:old-" + c})
	}
	return f
}

func (f *fakeWorld) resolve(_ context.Context, req changegroupcrapi.ResolveRequest) (changegroupcrapi.Resolved, error) {
	f.runOnce(&f.duringResolve)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.resolveErr != nil {
		return changegroupcrapi.Resolved{}, f.resolveErr
	}
	if len(req.Components) == 0 {
		return f.resolved, nil
	}
	out := f.resolved
	out.Components = nil
	for _, c := range req.Components {
		out.Components = append(out.Components, changegroupcrapi.ResolvedComponent{Name: c, Image: "quay.io/org/" + c})
	}
	return out, nil
}

func (f *fakeWorld) writeStatus(_ context.Context, req changegroupcrapi.StatusRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.Status.Phase.IsFinal() && f.statusFailures > 0 {
		f.statusFailures--
		return temporal.NewNonRetryableApplicationError("the API server is unreachable", "Unavailable", nil)
	}
	f.statuses = append(f.statuses, req.Status)
	return nil
}

// runOnce runs and clears a hook set by a test (outside the lock: the hook may
// signal the workflow).
func (f *fakeWorld) runOnce(hook *func()) {
	f.mu.Lock()
	fn := *hook
	*hook = nil
	f.mu.Unlock()
	if fn != nil {
		fn()
	}
}

func (f *fakeWorld) handBack(_ context.Context, req handbackapi.Request) (handbackapi.Result, error) {
	f.runOnce(&f.duringHandBack)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handedBack = append(f.handedBack, req.Builds...)
	f.targets = append(f.targets, req.Target)
	return handbackapi.Result{}, nil
}

// handedBackDigests is component -> digests handed back, in order.
func (f *fakeWorld) handedBackDigests() map[string][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string][]string{}
	for _, b := range f.handedBack {
		out[b.Component] = append(out[b.Component], b.Digest)
	}
	return out
}

func (f *fakeWorld) observed(mode changegroupprapi.Mode) changegroupprapi.Observed {
	return changegroupprapi.Observed{
		PR:    changegroupprapi.PRRef{Number: 7, URL: "https://github.com/org/bundle/pull/7", NodeID: "PR_7"},
		State: orOpen(f.prState), Draft: mode != changegroupprapi.ModeRelease, HumanEdits: f.humanEdits,
		HumanEditReason: "commit abc by alice is not nudgeflow's", Writes: 2, HeadSHA: f.head(),
	}
}

// head is the PR's head: one commit per sync.
func (f *fakeWorld) head() string { return fmt.Sprintf("%040d", len(f.syncs)) }

func (f *fakeWorld) readCI(_ context.Context, req changegroupprapi.CIRequest) (changegroupprapi.CIObserved, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ciReads = append(f.ciReads, req)
	o := changegroupprapi.CIObserved{Started: true, Names: []string{"Pipelines as Code CI / bundle-on-pull-request"}}
	if f.ci != nil {
		o = f.ci()
	}
	o.SHA, o.State = req.SHA, orOpen(f.prState)
	if o.Author == "" {
		o.Author = "nudgeflow-bot"
	}
	return o, nil
}

func (f *fakeWorld) comment(_ context.Context, req changegroupprapi.CommentRequest) (changegroupprapi.CommentResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.comments = append(f.comments, req)
	if f.commentFailures > 0 {
		f.commentFailures--
		return changegroupprapi.CommentResult{}, temporal.NewApplicationError("GitHub answered 502", "GitHub502")
	}
	if f.commentRefused {
		return changegroupprapi.CommentResult{}, temporal.NewNonRetryableApplicationError("GitHub answered 403: Resource not accessible by integration", "GitHub403", nil)
	}
	for _, p := range f.posted {
		if p.Key == req.Key {
			return changegroupprapi.CommentResult{}, nil // the activity looks before it writes
		}
	}
	f.posted = append(f.posted, req)
	return changegroupprapi.CommentResult{Posted: true, Writes: 1}, nil
}

func (f *fakeWorld) recordEvent(_ context.Context, req changegroupcrapi.EventRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, req)
	return nil
}

func orOpen(s changegroupprapi.PRState) changegroupprapi.PRState {
	if s == "" {
		return changegroupprapi.PROpen
	}
	return s
}

func (f *fakeWorld) sync(_ context.Context, req changegroupprapi.SyncRequest) (changegroupprapi.Observed, error) {
	f.runOnce(&f.duringSync)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.syncErr != nil {
		return changegroupprapi.Observed{}, f.syncErr
	}
	f.syncs = append(f.syncs, req)
	if req.Overwrite {
		f.humanEdits = false
	}
	return f.observed(req.Mode), nil
}

func (f *fakeWorld) observe(_ context.Context, _ changegroupprapi.ObserveRequest) (changegroupprapi.Observed, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.observes++
	o := f.observed(changegroupprapi.ModeHold)
	o.Writes = 0
	return o, nil
}

func (f *fakeWorld) close(_ context.Context, req changegroupprapi.CloseRequest) (changegroupprapi.Observed, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closes = append(f.closes, req)
	f.prState = changegroupprapi.PRClosed
	return f.observed(changegroupprapi.ModeHold), nil
}

func (f *fakeWorld) lastSync() changegroupprapi.SyncRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncs[len(f.syncs)-1]
}

func (f *fakeWorld) lastStatus() appstudiov1alpha1.ChangeGroupStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.statuses[len(f.statuses)-1]
}

type harness struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment
	f   *fakeWorld
}

func newHarness(t *testing.T, f *fakeWorld) *harness { return newHarnessWithMetrics(t, f, nil) }

// newHarnessWithMetrics records the workflow's metrics on m (nil: none).
func newHarnessWithMetrics(t *testing.T, f *fakeWorld, m client.MetricsHandler) *harness {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	if m != nil {
		suite.SetMetricsHandler(m)
	}
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: changegroupapi.WorkflowName})
	env.RegisterActivityWithOptions(f.resolve, activity.RegisterOptions{Name: changegroupcrapi.ResolveActivity})
	env.RegisterActivityWithOptions(f.writeStatus, activity.RegisterOptions{Name: changegroupcrapi.WriteStatusActivity})
	env.RegisterActivityWithOptions(f.sync, activity.RegisterOptions{Name: changegroupprapi.SyncActivity})
	env.RegisterActivityWithOptions(f.observe, activity.RegisterOptions{Name: changegroupprapi.ObserveActivity})
	env.RegisterActivityWithOptions(f.close, activity.RegisterOptions{Name: changegroupprapi.CloseActivity})
	env.RegisterActivityWithOptions(f.handBack, activity.RegisterOptions{Name: handbackapi.Activity})
	env.RegisterActivityWithOptions(f.readCI, activity.RegisterOptions{Name: changegroupprapi.CIActivity})
	env.RegisterActivityWithOptions(f.comment, activity.RegisterOptions{Name: changegroupprapi.CommentActivity})
	env.RegisterActivityWithOptions(f.recordEvent, activity.RegisterOptions{Name: changegroupcrapi.EventActivity})
	f.verifier.Register(env)
	env.SetTestTimeout(30 * time.Second)
	return &harness{t: t, env: env, f: f}
}

func (h *harness) at(d time.Duration, fn func()) { h.env.RegisterDelayedCallback(fn, d) }

func (h *harness) build(d time.Duration, component, digest string, builtAt time.Duration) {
	h.at(d, func() {
		h.env.SignalWorkflow(changegroupapi.SignalComponentBuilt, changegroupapi.ComponentBuilt{
			Component: component, PipelineRun: "nudge-" + component, Build: imagebuild.Build{Digest: digest, PullSpec: "quay.io/org/" + component + "@" + digest, BuiltAt: time.Unix(0, 0).Add(builtAt)},
		})
	})
}

// prEvent delivers a forge event that tells the truth: a merged or closed event
// comes with the PR merged or closed on the (fake) forge.
func (h *harness) prEvent(d time.Duration, ev changegroupapi.PREvent) {
	h.at(d, func() {
		h.f.mu.Lock()
		switch {
		case ev.Merged:
			h.f.prState = changegroupprapi.PRMerged
		case ev.Closed:
			h.f.prState = changegroupprapi.PRClosed
		}
		h.f.mu.Unlock()
		h.env.SignalWorkflow(changegroupapi.SignalPREvent, ev)
	})
}

// forgedPREvent delivers an event the forge does not back: the PR stays as it is.
func (h *harness) forgedPREvent(d time.Duration, ev changegroupapi.PREvent) {
	h.at(d, func() { h.env.SignalWorkflow(changegroupapi.SignalPREvent, ev) })
}

func (h *harness) update(d time.Duration, name string, wantErr bool, args ...any) {
	h.at(d, func() {
		h.env.UpdateWorkflow(name, name+d.String(), &testsuite.TestUpdateCallback{
			OnReject: func(err error) {
				if !wantErr {
					h.t.Errorf("update %s rejected: %v", name, err)
				}
			},
			OnAccept: func() {
				if wantErr {
					h.t.Errorf("update %s accepted, want rejection", name)
				}
			},
			OnComplete: func(any, error) {},
		}, args...)
	})
}

func (h *harness) run(in Input) *State {
	if in.Name == "" {
		in = Input{Namespace: "tenant", Name: "bundle-x-update", UID: "uid-1", NudgedComponent: in.NudgedComponent,
			AutoRelease: in.AutoRelease, Automatic: in.Automatic,
			Settings: Settings{Debounce: 5 * time.Second, PollInterval: time.Hour}}
	}
	h.env.ExecuteWorkflow(changegroupapi.WorkflowName, in)
	require.True(h.t, h.env.IsWorkflowCompleted())
	require.NoError(h.t, h.env.GetWorkflowError())
	var s State
	require.NoError(h.t, h.env.GetWorkflowResult(&s))
	return &s
}

func digestsOf(req changegroupprapi.SyncRequest) map[string]string {
	out := map[string]string{}
	for _, r := range req.Rows {
		if r.State == string(appstudiov1alpha1.ComponentReady) {
			out[r.Component] = r.New
		}
	}
	return out
}

// The ADR's example: img0 -> img1 -> img2 while others build; all ready releases once.
func TestCollectsLatestBuildsAndReleasesOnce(t *testing.T) {
	f := newFakeWorld("operand-a", "operand-b", "operator-img")
	h := newHarness(t, f)
	h.build(time.Minute, "operator-img", "sha256:img1", 1*time.Hour)
	h.build(2*time.Minute, "operand-a", "sha256:opa1", 2*time.Hour)
	h.build(3*time.Minute, "operator-img", "sha256:img2", 3*time.Hour)
	h.build(3*time.Minute+time.Second, "operator-img", "sha256:img2", 3*time.Hour) // redelivered
	h.build(4*time.Minute, "operator-img", "sha256:img0-late", 30*time.Minute)     // older build arrives late
	h.build(5*time.Minute, "operand-b", "sha256:opb1", 4*time.Hour)
	h.prEvent(10*time.Minute, changegroupapi.PREvent{DeliveryID: "d1", Action: "closed", Number: 7, Merged: true, Closed: true})
	s := h.run(Input{})

	require.Equal(t, appstudiov1alpha1.PhaseCompleted, s.Phase)
	var holds, releases int
	for _, req := range f.syncs {
		if req.Mode == changegroupprapi.ModeRelease {
			releases++
		} else {
			holds++
		}
	}
	require.Equal(t, 1, releases, "CI is released exactly once")
	require.Equal(t, 3, holds, "one held push per debounced change: img1, opa1, img2 (duplicates and older builds change nothing)")
	last := f.lastSync()
	require.Equal(t, changegroupprapi.ModeRelease, last.Mode)
	require.Equal(t, map[string]string{"operator-img": "sha256:img2", "operand-a": "sha256:opa1", "operand-b": "sha256:opb1"}, digestsOf(last))
	require.Equal(t, "konflux/changegroup/tenant/bundle-x-update-uid-1", last.Branch, "the branch is unique per namespace and UID")
	require.Empty(t, f.handedBack, "every build is in the merged PR: nothing handed back")
	st := f.lastStatus()
	require.Equal(t, appstudiov1alpha1.PhaseCompleted, st.Phase)
	require.Equal(t, "3/3", st.Ready)
	require.NotNil(t, st.ReadyTime)
	require.NotNil(t, st.CompletionTime)
	require.Equal(t, "https://github.com/org/bundle/pull/7", st.PullRequestURL)
	require.Equal(t, "True", string(st.Conditions[0].Status))
}

func TestBurstIsDebouncedIntoOnePush(t *testing.T) {
	f := newFakeWorld("a", "b", "c")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.build(time.Minute+time.Second, "b", "sha256:b1", time.Hour)
	h.prEvent(time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true})
	h.run(Input{})
	require.Len(t, f.syncs, 1, "two builds a second apart make one push")
	require.Equal(t, map[string]string{"a": "sha256:a1", "b": "sha256:b1"}, digestsOf(f.syncs[0]))
	require.Equal(t, changegroupprapi.ModeHold, f.syncs[0].Mode)
}

func TestPRClosedCancels(t *testing.T) {
	f := newFakeWorld("a", "b")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.prEvent(10*time.Minute, changegroupapi.PREvent{DeliveryID: "d", Action: "closed", Number: 7, Closed: true})
	s := h.run(Input{})
	require.Equal(t, appstudiov1alpha1.PhaseCancelled, s.Phase)
	require.Equal(t, "PRClosed", s.Reason)
	require.Empty(t, f.closes, "a PR a person closed is not closed again")
}

func TestMergedBeforeAllReadyCompletes(t *testing.T) {
	f := newFakeWorld("a", "b", "c")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.prEvent(10*time.Minute, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true, Closed: true})
	s := h.run(Input{})
	require.Equal(t, appstudiov1alpha1.PhaseCompleted, s.Phase)
	require.Equal(t, "1/3", f.lastStatus().Ready)
}

func TestReleaseNowWithTwoOfThree(t *testing.T) {
	f := newFakeWorld("a", "b", "c")
	h := newHarness(t, f)
	h.update(30*time.Second, changegroupapi.UpdateReleaseNow, true) // nothing ready yet: rejected
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.build(2*time.Minute, "b", "sha256:b1", 2*time.Hour)
	h.update(5*time.Minute, changegroupapi.UpdateReleaseNow, false)
	h.prEvent(time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true})
	s := h.run(Input{})
	last := f.lastSync()
	require.Equal(t, changegroupprapi.ModeRelease, last.Mode)
	require.Equal(t, map[string]string{"a": "sha256:a1", "b": "sha256:b1"}, digestsOf(last))
	require.True(t, s.Released)
	require.Equal(t, appstudiov1alpha1.PhaseCompleted, s.Phase)
}

func TestDroppedComponentReleasesWhenRestReady(t *testing.T) {
	f := newFakeWorld("a", "b", "c")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.build(2*time.Minute, "b", "sha256:b1", time.Hour)
	h.at(5*time.Minute, func() {
		h.env.SignalWorkflow(changegroupapi.SignalSpecChanged, SpecChanged{Generation: 2, NudgingComponents: []string{"a", "b"}})
	})
	h.update(6*time.Minute, changegroupapi.UpdateDropComponent, true, changegroupapi.DropRequest{Component: "zzz"})
	h.prEvent(time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true})
	s := h.run(Input{})
	last := f.lastSync()
	require.Equal(t, changegroupprapi.ModeRelease, last.Mode, "with c dropped, a and b are all there is")
	require.Equal(t, appstudiov1alpha1.ComponentDropped, s.component("c").State)
	require.Equal(t, "2/2", f.lastStatus().Ready)
}

func TestTimeoutCancelsAndClosesPR(t *testing.T) {
	f := newFakeWorld("a", "b")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	s := h.run(Input{Namespace: "tenant", Name: "g", UID: "u", Timeout: 2 * time.Hour, Settings: Settings{Debounce: time.Second}})
	require.Equal(t, appstudiov1alpha1.PhaseCancelled, s.Phase)
	require.Equal(t, "TimedOut", s.Reason)
	require.Contains(t, s.Message, "waiting for b")
	require.Len(t, f.closes, 1)
	require.Contains(t, f.closes[0].Comment, "was cancelled")
	require.Equal(t, "Cancelled", string(f.lastStatus().Phase))
	require.Equal(t, map[string][]string{"a": {"sha256:a1"}}, f.handedBackDigests(), "the timed-out group hands its build back")
	require.Equal(t, "sha256:a1", f.lastStatus().Components[0].HandedBackBuild)
}

func TestHumanEditsPauseUntilRebase(t *testing.T) {
	f := newFakeWorld("a", "b", "c")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.at(2*time.Minute, func() { f.mu.Lock(); f.humanEdits = true; f.mu.Unlock() })
	h.build(3*time.Minute, "b", "sha256:b1", time.Hour)
	h.build(10*time.Minute, "c", "sha256:c1", time.Hour)
	var syncsBeforeRebase int
	h.at(20*time.Minute, func() { f.mu.Lock(); syncsBeforeRebase = len(f.syncs); f.mu.Unlock() })
	h.update(21*time.Minute, changegroupapi.UpdateRebase, false)
	h.prEvent(time.Hour, changegroupapi.PREvent{Action: "closed", Number: 7, Merged: true})
	h.run(Input{})
	require.Equal(t, 2, syncsBeforeRebase, "after the sync that found the edits, no further push happens")
	last := f.lastSync()
	require.True(t, last.Overwrite)
	require.Equal(t, changegroupprapi.ModeRelease, last.Mode)
}

func TestCancelUpdateClosesPR(t *testing.T) {
	f := newFakeWorld("a", "b")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.update(10*time.Minute, changegroupapi.UpdateCancel, false, changegroupapi.CancelRequest{Reason: "not needed"})
	s := h.run(Input{})
	require.Equal(t, appstudiov1alpha1.PhaseCancelled, s.Phase)
	require.Equal(t, "not needed", s.Message)
	require.Len(t, f.closes, 1)
}

func TestForgeRefusalFailsWithReason(t *testing.T) {
	f := newFakeWorld("a")
	f.syncErr = temporal.NewNonRetryableApplicationError("GitHub 404: repository org/bundle not found", "GitHub404", errors.New("404"))
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	s := h.run(Input{})
	require.Equal(t, appstudiov1alpha1.PhaseFailed, s.Phase)
	require.Contains(t, s.Message, "repository org/bundle not found")
	require.Equal(t, "sha256:a1", s.component("a").New, "the collected digest is kept")
	require.Equal(t, map[string][]string{"a": {"sha256:a1"}}, f.handedBackDigests(), "and handed back to normal nudging")
}

func TestContinueAsNewCarriesState(t *testing.T) {
	f := newFakeWorld("a", "b")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.at(5*time.Minute, func() { h.env.SetContinueAsNewSuggested(true) })
	h.env.ExecuteWorkflow(changegroupapi.WorkflowName, Input{Namespace: "tenant", Name: "g", UID: "u",
		Settings: Settings{Debounce: time.Second, PollInterval: time.Hour}})
	err := h.env.GetWorkflowError()
	require.Error(t, err)
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(err, &can), "continued as new, got %v", err)
	// The next run's input carries the collected build.
	var next Input
	require.NoError(t, converterFor().FromPayloads(can.Input, &next))
	require.NotNil(t, next.State)
	require.Equal(t, "sha256:a1", next.State.component("a").New)
	require.True(t, next.State.Seen["a@sha256:a1"], "the dedupe set is carried")
}

// TestForgedMergedEventEndsNothing: a "merged" webhook (validly signed under the
// shared secret by another tenant, say) while the PR is open on the forge ends
// nothing and marks nothing delivered; the group ends when the forge says so.
func TestForgedMergedEventEndsNothing(t *testing.T) {
	f := newFakeWorld("a", "b")
	h := newHarness(t, f)
	h.build(time.Minute, "a", "sha256:a1", time.Hour)
	h.forgedPREvent(10*time.Minute, changegroupapi.PREvent{DeliveryID: "forged-1", Action: "closed", Number: 7, Merged: true, Closed: true})
	h.forgedPREvent(11*time.Minute, changegroupapi.PREvent{DeliveryID: "forged-2", Action: "closed", Number: 7, Closed: true})
	var during appstudiov1alpha1.ChangeGroupPhase
	checked := false
	h.at(30*time.Minute, func() {
		checked = true
		during = f.lastStatus().Phase
		require.Empty(t, f.handedBack, "a forged ending hands nothing back")
	})
	h.prEvent(time.Hour, changegroupapi.PREvent{DeliveryID: "real", Action: "closed", Number: 7, Merged: true, Closed: true})
	s := h.run(Input{})
	require.True(t, checked, "the group was still running half an hour in, after both forged events")
	require.NotEqual(t, appstudiov1alpha1.PhaseCompleted, during, "the forged merged event did not complete the group")
	require.NotEqual(t, appstudiov1alpha1.PhaseCancelled, during, "the forged closed event did not cancel the group")
	require.Equal(t, appstudiov1alpha1.PhaseCompleted, s.Phase, "the real merge, read from the forge, completes it")
	require.GreaterOrEqual(t, f.observes, 2, "each ending event was checked against the forge")
}
