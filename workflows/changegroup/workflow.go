package changegroup

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	"github.com/nudgeflow/nudgeflow/activities/changegroupcr"
	"github.com/nudgeflow/nudgeflow/activities/handback"
	"github.com/nudgeflow/nudgeflow/activities/pullrequest"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
	"github.com/nudgeflow/nudgeflow/internal/searchattr"
)

// Settings tune a ChangeGroup; the bridge passes the worker's configuration.
type Settings struct {
	// Debounce coalesces a burst of builds into one push: the PR is updated once no
	// build arrived for this long.
	Debounce time.Duration `json:"debounce,omitempty"`
	// PollInterval is how often the PR is read, covering lost webhooks.
	PollInterval time.Duration `json:"pollInterval,omitempty"`
	// BranchPrefix prefixes the PR's head branch.
	BranchPrefix string `json:"branchPrefix,omitempty"`
	// ChangeGroupURLBase links the PR to the group (for example the Konflux UI).
	ChangeGroupURLBase string `json:"changeGroupURLBase,omitempty"`
	// MaxHistoryLength continues as new before the history grows past it (besides
	// the server's own suggestion); zero uses the server's suggestion only.
	MaxHistoryLength int `json:"maxHistoryLength,omitempty"`
	// MaxForgeOutage is how long forge calls may keep failing (a rotated token, a
	// forge outage) before the group fails and hands its builds back.
	MaxForgeOutage time.Duration `json:"maxForgeOutage,omitempty"`
	// CIStartGrace is how long after the release a pipeline may take to report on
	// the released head before the group warns that none started (the CIStarted
	// condition, an Event and one PR comment). A wait for approval that Pipelines as
	// Code reports is warned about at once.
	CIStartGrace time.Duration `json:"ciStartGrace,omitempty"`
}

// Defaults for Settings.
const (
	DefaultDebounce       = 10 * time.Second
	DefaultPollInterval   = 2 * time.Minute
	DefaultBranchPrefix   = "konflux/changegroup/"
	DefaultMaxForgeOutage = 6 * time.Hour
	DefaultCIStartGrace   = 10 * time.Minute
)

// versionNothingLost guards the shape in which a group hands back every build it
// held and did not deliver, keeps overrides that arrive during an activity, uses a
// branch unique per group, bounds forge outages and writes its final status until
// it is written. Runs recorded before it replay with the default version.
const versionNothingLost = "nothing-lost"

// versionAutoRelease guards the batching shape: the workflow releases on its own
// when spec.autoRelease's window or maxWait passes, and an automatic group hands
// back builds that arrive after its release. Only groups with an autoRelease (or
// automatic ones) ask for it, so manual groups keep their command sequence.
const versionAutoRelease = "auto-release"

// versionCIStart guards the shape in which a released group looks for the pipeline
// its release should have started: it reads the released head's check runs and
// commit statuses every poll interval until one appears, and when Pipelines as
// Code waits for approval, or nothing reports within CIStartGrace, it says so (the
// CIStarted condition, an Event, one PR comment). It is asked for once, at the
// release, so groups released before it keep their command sequence.
const versionCIStart = "ci-start"

// versionSpecAfterEnd guards ignoring a spec change that arrives after the group
// ended (while its end is still written): before it, a member removed then was
// dropped and its build handed back even when the merged PR had delivered it, a
// second nudge of a merged digest. Asked only on that path.
const versionSpecAfterEnd = "spec-after-end"

// versionForgeSaysEnd guards the shape in which a merged or closed PR event is a
// hint: the workflow reads the PR on the forge and ends only on what the forge
// says (a forged or misrouted webhook ends nothing). Runs recorded before it end on
// the event itself.
const versionForgeSaysEnd = "forge-says-end"

// versionVerifyBuilds guards the shape in which a build is verified when it enters
// the group (activities/buildcheck: its build run, else its Component's image,
// else a Snapshot): whoever reaches Temporal can signal any digest. The verdict is
// recorded in the state and never asked again; a refused build is written nowhere
// (not collected, not handed back) and leaves a Warning Event on the group. A run
// started (not continued) with a state keeps none of it: its builds are verified
// like signals. Runs recorded before it keep every build they receive.
const versionVerifyBuilds = "verify-builds"

func (s Settings) withDefaults() Settings {
	if s.Debounce <= 0 {
		s.Debounce = DefaultDebounce
	}
	if s.PollInterval <= 0 {
		s.PollInterval = DefaultPollInterval
	}
	if s.BranchPrefix == "" {
		s.BranchPrefix = DefaultBranchPrefix
	}
	if s.MaxForgeOutage <= 0 {
		s.MaxForgeOutage = DefaultMaxForgeOutage
	}
	if s.CIStartGrace <= 0 {
		s.CIStartGrace = DefaultCIStartGrace
	}
	return s
}

// Input starts (or continues) a ChangeGroup workflow. No secrets: it is visible in the UI.
type Input struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// NudgedComponent is the CR's spec.nudgedComponent when the bridge started the
	// workflow: the target of a hand-back even when the group ended before it could
	// read its CR (deleted a moment after creation).
	NudgedComponent string        `json:"nudgedComponent,omitempty"`
	Timeout         time.Duration `json:"timeout,omitempty"`
	// AutoRelease is the CR's spec.autoRelease at start; Automatic marks a group
	// nudgeflow opened for a NudgeConfig batching policy.
	AutoRelease *AutoRelease `json:"autoRelease,omitempty"`
	Automatic   bool         `json:"automatic,omitempty"`
	Settings    Settings     `json:"settings"`
	// State is carried through continue-as-new; nil on the first run.
	State *State `json:"state,omitempty"`
}

// run is one execution: the input, the state and the wake-up flags the handlers set.
type run struct {
	ctx      workflow.Context
	in       Input
	settings Settings
	s        *State
	id       string

	built   workflow.ReceiveChannel
	spec    workflow.ReceiveChannel
	prEvent workflow.ReceiveChannel
	cancel  workflow.ReceiveChannel

	// nothingLost is the versionNothingLost shape of this run.
	nothingLost bool
	// forgeSaysEnd: merged/closed events only ask for a read of the PR (versionForgeSaysEnd).
	forgeSaysEnd bool
	// verifyBuilds: a build is kept only once verified (versionVerifyBuilds);
	// verifyAt holds verifications back after the cluster could not be read.
	verifyBuilds bool
	verifyAt     time.Time
	// urgent skips the debounce: a person asked for something; urgentSeq counts
	// requests so a sync clears only the urgency it served.
	urgent    bool
	urgentSeq int
	// handBackAt holds hand-backs back after a failed attempt.
	handBackAt time.Time
	// cancelReason is set by a cancel signal or update until the main loop acts on it.
	cancelReason string
	// nextPoll is when the PR is read next; retryAt holds syncs back after a forge failure.
	nextPoll time.Time
	retryAt  time.Time
	// ciNext is when the released head's CI reports are read next (zero: at once).
	ciNext time.Time
	// autoChecked/autoOn cache the versionAutoRelease decision of this run.
	autoChecked, autoOn bool
	// specAfterEndChecked/specAfterEndOn cache the versionSpecAfterEnd decision.
	specAfterEndChecked, specAfterEndOn bool
	// verifier is nil: its method value names the verification activity.
	verifier *buildcheck.Activities
	// lastSA avoids upserting unchanged search attributes.
	lastPhase string
	lastReady int
}

// Workflow is the ChangeGroup workflow.
func Workflow(ctx workflow.Context, in Input) (*State, error) {
	r := &run{
		ctx:       ctx,
		in:        in,
		settings:  in.Settings.withDefaults(),
		s:         in.State,
		id:        workflow.GetInfo(ctx).WorkflowExecution.ID,
		built:     workflow.GetSignalChannel(ctx, SignalComponentBuilt),
		spec:      workflow.GetSignalChannel(ctx, SignalSpecChanged),
		prEvent:   workflow.GetSignalChannel(ctx, SignalPREvent),
		cancel:    workflow.GetSignalChannel(ctx, SignalCancel),
		lastReady: -1,
	}
	r.nothingLost = workflow.GetVersion(ctx, versionNothingLost, workflow.DefaultVersion, 1) >= 1
	r.forgeSaysEnd = workflow.GetVersion(ctx, versionForgeSaysEnd, workflow.DefaultVersion, 1) >= 1
	r.verifyBuilds = workflow.GetVersion(ctx, versionVerifyBuilds, workflow.DefaultVersion, 1) >= 1
	var carried []ComponentBuilt
	if r.verifyBuilds && r.s != nil && workflow.GetInfo(ctx).ContinuedExecutionRunID == "" {
		// Only continue-as-new carries a state, and the server says which runs are
		// continued: this one was started with a state someone chose. It is rebuilt
		// from the cluster; its builds count as received, to be verified.
		carried = r.s.carriedBuilds()
		workflow.GetLogger(ctx).Warn("started with a state: ignored, its builds are verified like signals", "builds", len(carried))
		r.s = nil
	}
	if r.s != nil {
		r.s.normalize()
	}
	if err := r.registerHandlers(); err != nil {
		return nil, err
	}
	if r.s == nil {
		if err := r.initialize(); err != nil {
			return nil, err
		}
		for _, b := range carried {
			r.s.queueUnverified(b)
		}
	}
	for {
		r.drainSignals()
		if !r.s.Phase.IsFinal() {
			r.step()
		}
		if r.s.Phase.IsFinal() {
			r.count(metrics.BuildsDelivered, r.s.delivered(r.nothingLost))
			break
		}
		r.publish()
		if r.shouldContinueAsNew() {
			return nil, r.continueAsNew()
		}
		r.wait()
	}
	if r.nothingLost {
		return r.s, r.end()
	}
	r.finalize()
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return r.s, err
	}
	// Late events (the merge webhook after a poll saw the merge) change nothing now,
	// but are consumed so none is left unhandled.
	r.drainSignals()
	return r.s, nil
}

// end is how a group stops holding (the nothing-lost shape): every build it held and
// did not deliver is handed back, its PR is closed if it was cancelled, and its
// final status is written — each retried until done, because a group whose status
// still says it collects would keep intercepting nudges. Builds that arrive
// meanwhile are handed back too; the workflow completes only in a task that found
// no signal left.
func (r *run) end() error {
	s := r.s
	closed := false
	backoff := time.Minute
	for {
		s.handBackUndelivered()
		if len(s.HandBack) > 0 {
			r.handBack()
		}
		if !closed {
			r.closeCancelledPR()
			closed = true
		}
		r.publish()
		if err := workflow.Await(r.ctx, func() bool { return workflow.AllHandlersFinished(r.ctx) }); err != nil {
			return err
		}
		r.drainSignals()
		if len(s.HandBack) == 0 && !s.StatusStale && len(s.Unverified) == 0 {
			return nil
		}
		if len(s.HandBack) > 0 && !r.handBackAt.After(workflow.Now(r.ctx)) && !s.StatusStale {
			continue // builds that arrived after the end: hand them back now
		}
		if len(s.Unverified) > 0 && !r.verifyAt.After(workflow.Now(r.ctx)) && !s.StatusStale {
			continue // verify them now (drainSignals), then hand them back
		}
		// The API server or Temporal is unreachable: try again, backing off.
		_, _ = workflow.AwaitWithOptions(r.ctx, workflow.AwaitOptions{
			Timeout: backoff, TimerOptions: workflow.TimerOptions{Summary: "retry handing back builds and writing the final status"},
		}, func() bool { return false })
		if backoff < 10*time.Minute {
			backoff *= 2
		}
	}
}

// handBack runs the hand-back activity for the queued builds.
func (r *run) handBack() {
	s := r.s
	builds := append([]handback.Build(nil), s.HandBack...)
	err := workflow.ExecuteActivity(r.kubeCtx(fmt.Sprintf("hand %d build(s) back to normal nudging", len(builds))), handback.Activity,
		handback.Request{Namespace: r.in.Namespace, ChangeGroup: r.in.Name, UID: r.in.UID, Target: r.target(), Builds: builds}).Get(r.ctx, nil)
	if err != nil {
		workflow.GetLogger(r.ctx).Warn("builds not handed back yet; retrying", "error", err)
		r.handBackAt = workflow.Now(r.ctx).Add(r.settings.PollInterval)
		return
	}
	r.count(metrics.BuildsHandedBack, len(builds))
	// Builds queued while the activity ran stay queued.
	s.HandBack = s.HandBack[len(builds):]
	if len(s.HandBack) == 0 {
		s.HandBack = nil
	}
	s.StatusStale = true
}

func (r *run) initialize() error {
	var res changegroupcr.Resolved
	err := workflow.ExecuteActivity(r.kubeCtx("resolve the group's components, repository and original builds"),
		changegroupcr.ResolveActivity, changegroupcr.ResolveRequest{Namespace: r.in.Namespace, Name: r.in.Name, UID: r.in.UID}).Get(r.ctx, &res)
	now := workflow.Now(r.ctx)
	if err != nil {
		// The group cannot start (its nudged component is missing, say): a defined
		// end with the reason in status, never silence.
		r.s = &State{Phase: appstudiov1alpha1.PhaseInitialized, StartTime: now, Seen: map[string]bool{}}
		r.s.finish(now, appstudiov1alpha1.PhaseFailed, "ResolveFailed", errorMessage(err))
		return nil
	}
	r.s = newState(now, res, r.in.Timeout)
	r.s.AutoRelease, r.s.Automatic = r.in.AutoRelease, r.in.Automatic
	if r.nothingLost {
		r.s.Branch = uniqueBranch(r.settings.BranchPrefix, r.in.Namespace, r.in.Name, r.in.UID)
	}
	return nil
}

func (r *run) registerHandlers() error {
	if err := workflow.SetQueryHandlerWithOptions(r.ctx, QueryState, func() (*State, error) { return r.s, nil },
		workflow.QueryHandlerOptions{Description: "The ChangeGroup's whole state: components, PR, phase"}); err != nil {
		return err
	}
	updates := []struct {
		name, desc string
		handler    any
		validator  any
	}{
		{UpdateReleaseNow, "Stop waiting: release CI with the components that are ready",
			func(ctx workflow.Context) (string, error) {
				// At creation nothing is ready yet: the request stands, and the first
				// push releases (a ChangeGroup applied with release-now never holds CI).
				if err := r.awaitState(ctx, func() error { return r.checkReleaseNow(false) }); err != nil {
					return "", err
				}
				r.s.ReleaseRequested = true
				r.markUrgent()
				r.s.markDirty(workflow.Now(ctx))
				ready, total := r.s.counts()
				return fmt.Sprintf("releasing with %d of %d components ready", ready, total), nil
			},
			func(ctx workflow.Context) error { return r.validate(func() error { return r.checkReleaseNow(true) }) }},
		{UpdateCancel, "Cancel the group: close its pull request and stop",
			func(ctx workflow.Context, req CancelRequest) (string, error) {
				if err := r.awaitState(ctx, r.notFinal); err != nil {
					return "", err
				}
				r.cancelReason = cancelReason(req.Reason, "cancelled by a person")
				r.markUrgent()
				return "cancelling: " + r.cancelReason, nil
			},
			func(ctx workflow.Context, req CancelRequest) error { return r.validate(r.notFinal) }},
		{UpdateDropComponent, "Stop waiting for one component",
			func(ctx workflow.Context, req DropRequest) (string, error) {
				if err := r.awaitState(ctx, func() error { return r.checkDrop(req) }); err != nil {
					return "", err
				}
				r.s.drop(workflow.Now(ctx), req.Component, r.nothingLost)
				r.markUrgent()
				ready, total := r.s.counts()
				return fmt.Sprintf("dropped %s; %d of %d ready", req.Component, ready, total), nil
			},
			func(ctx workflow.Context, req DropRequest) error {
				return r.validate(func() error { return r.checkDrop(req) })
			}},
		{UpdateRebase, "Discard manual changes on the pull request and let nudgeflow update it again",
			func(ctx workflow.Context) (string, error) {
				if err := r.awaitState(ctx, r.checkRebase); err != nil {
					return "", err
				}
				r.requestOverwrite()
				r.s.markDirty(workflow.Now(ctx))
				return "rebasing: the next push discards manual changes", nil
			},
			func(ctx workflow.Context) error { return r.validate(r.checkRebase) }},
	}
	for _, u := range updates {
		if err := workflow.SetUpdateHandlerWithOptions(r.ctx, u.name, u.handler, workflow.UpdateHandlerOptions{
			Validator: u.validator, Description: u.desc,
		}); err != nil {
			return fmt.Errorf("registering update %s: %w", u.name, err)
		}
	}
	return nil
}

// specAfterEndIgnored reports whether this run ignores spec changes after its end
// (versionSpecAfterEnd), deciding once.
func (r *run) specAfterEndIgnored() bool {
	if !r.specAfterEndChecked {
		r.specAfterEndChecked = true
		r.specAfterEndOn = workflow.GetVersion(r.ctx, versionSpecAfterEnd, workflow.DefaultVersion, 1) >= 1
	}
	return r.specAfterEndOn
}

func (r *run) markUrgent() {
	r.urgent = true
	r.urgentSeq++
}

// requestOverwrite asks the next sync to discard human edits (rebase).
func (r *run) requestOverwrite() {
	r.s.Overwrite = true
	r.s.OverwriteRevision++
	if r.nothingLost {
		// Only the commits there when the rebase was asked for may be discarded.
		r.s.OverwriteHead = r.s.PRHead
	}
	r.markUrgent()
}

// OverrideRejected is the type of the error an override update is refused with
// (by its validator, or by its handler when it arrived before the group was
// initialized): the request itself makes no sense, so the bridge clears the
// annotation. Any other failure (a panic, a timeout) leaves it to be applied again.
const OverrideRejected = "OverrideRejected"

func rejected(format string, args ...any) error {
	return temporal.NewApplicationError(fmt.Sprintf(format, args...), OverrideRejected)
}

// validate runs an override's check, once the state exists: an override that
// arrives while the group resolves its components at creation (a ChangeGroup
// applied with the annotation already set) is accepted and checked by its handler
// once the state is initialized.
func (r *run) validate(check func() error) error {
	if r.s == nil {
		return nil
	}
	return check()
}

// awaitState waits until the state is initialized; when it had to wait (the
// validator could not check), it runs the check the validator skipped.
func (r *run) awaitState(ctx workflow.Context, check func() error) error {
	if r.s != nil {
		return nil
	}
	if err := workflow.Await(ctx, func() bool { return r.s != nil }); err != nil {
		return fmt.Errorf("waiting for the group to be initialized: %w", err)
	}
	return check()
}

func (r *run) notFinal() error {
	if r.s.Phase.IsFinal() {
		return rejected("the group has ended (%s)", r.s.Phase)
	}
	if r.cancelReason != "" {
		return rejected("the group is being cancelled")
	}
	return nil
}

// checkReleaseNow refuses a release of nothing when needReady.
func (r *run) checkReleaseNow(needReady bool) error {
	if err := r.notFinal(); err != nil {
		return err
	}
	if r.s.Released {
		return rejected("already released: CI was triggered for this pull request")
	}
	if ready, _ := r.s.counts(); ready == 0 && needReady {
		return rejected("nothing to release: no component is ready yet")
	}
	return nil
}

func (r *run) checkDrop(req DropRequest) error {
	if err := r.notFinal(); err != nil {
		return err
	}
	c := r.s.component(req.Component)
	if c == nil {
		return rejected("component %q is not a member of this group (members: %s)", req.Component, strings.Join(r.memberNames(), ", "))
	}
	if c.State == appstudiov1alpha1.ComponentDropped {
		return rejected("component %q was already dropped", req.Component)
	}
	return nil
}

func (r *run) checkRebase() error {
	if err := r.notFinal(); err != nil {
		return err
	}
	if r.s.PR.Number == 0 {
		return rejected("no pull request yet: nothing to rebase")
	}
	return nil
}

func (r *run) memberNames() []string {
	names := make([]string, 0, len(r.s.Components))
	for _, c := range r.s.Components {
		names = append(names, c.Name)
	}
	return names
}

func cancelReason(reason, fallback string) string {
	if strings.TrimSpace(reason) == "" {
		return fallback
	}
	return reason
}

// drainSignals applies every signal that has arrived; none is ever left behind.
func (r *run) drainSignals() {
	log := workflow.GetLogger(r.ctx)
	for {
		progressed := false
		var b ComponentBuilt
		for r.built.ReceiveAsync(&b) {
			progressed = true
			if r.verifyBuilds {
				if !r.s.queueUnverified(b) {
					log.Info("build not collected", "component", b.Component, "digest", b.Digest, "reason", "duplicate")
				}
			} else {
				r.applyBuild(b)
			}
			b = ComponentBuilt{}
		}
		if r.verifyQueued() {
			progressed = true
		}
		var sc SpecChanged
		for r.spec.ReceiveAsync(&sc) {
			progressed = true
			if r.s.Phase.IsFinal() && r.specAfterEndIgnored() {
				log.Info("spec change after the end ignored: the group holds nothing any more", "generation", sc.Generation)
			} else {
				r.s.applySpec(workflow.Now(r.ctx), sc, r.nothingLost)
			}
			sc = SpecChanged{}
		}
		var ev PREvent
		for r.prEvent.ReceiveAsync(&ev) {
			progressed = true
			r.applyPREvent(ev)
			ev = PREvent{}
		}
		var cr CancelRequest
		for r.cancel.ReceiveAsync(&cr) {
			progressed = true
			r.cancelReason = cancelReason(cr.Reason, "cancelled")
			cr = CancelRequest{}
		}
		if !progressed {
			return
		}
	}
}

// applyBuild collects (or hands back) a build the group may keep.
func (r *run) applyBuild(b ComponentBuilt) {
	if taken, why := r.s.applyBuild(workflow.Now(r.ctx), b, r.nothingLost); why != "" {
		workflow.GetLogger(r.ctx).Info("build not collected", "component", b.Component, "digest", b.Digest, "reason", why)
	} else if taken {
		r.count(metrics.BuildsHeld, 1)
	}
}

// verifyQueued verifies the queued builds in order, applying each verified one;
// it reports whether it decided any. When the cluster cannot be read the rest
// wait for the next wake-up (verifyAt): a build is never kept unverified, and
// never lost.
func (r *run) verifyQueued() bool {
	s := r.s
	decided := false
	for len(s.Unverified) > 0 && !r.verifyAt.After(workflow.Now(r.ctx)) {
		b := s.Unverified[0]
		var v buildcheck.Verdict
		err := workflow.ExecuteActivity(r.kubeCtx("verify that the cluster built "+b.Component+"@"+shortDigest(b.Digest)), r.verifier.VerifyBuild,
			buildcheck.Request{Namespace: r.in.Namespace, ClaimedNamespace: b.Namespace, Component: b.Component, Build: b.Build, Workflow: r.id,
				Subject: buildcheck.Subject{Kind: buildcheck.KindChangeGroup, Name: r.in.Name, UID: r.in.UID}}).Get(r.ctx, &v)
		if err != nil {
			workflow.GetLogger(r.ctx).Warn("build not verified yet; retrying", "component", b.Component, "digest", b.Digest, "error", err)
			r.verifyAt = workflow.Now(r.ctx).Add(r.settings.PollInterval)
			return decided
		}
		decided = true
		s.Unverified = s.Unverified[1:]
		if len(s.Unverified) == 0 {
			s.Unverified = nil
		}
		s.verdict(b, v)
		if !v.Verified {
			workflow.GetLogger(r.ctx).Warn("build refused", "component", b.Component, "digest", b.Digest, "reason", v.Reason)
			continue
		}
		r.applyBuild(b)
	}
	return decided
}

func (r *run) applyPREvent(ev PREvent) {
	if r.s.seenDelivery(ev.DeliveryID) {
		return
	}
	if r.s.PR.Number != 0 && ev.Number != 0 && ev.Number != r.s.PR.Number {
		return
	}
	if r.nothingLost && r.s.PR.Number == 0 {
		return // the group has no PR yet: the event is about another one
	}
	now := workflow.Now(r.ctx)
	switch {
	case r.forgeSaysEnd:
		// Any event, a merge or a close included, is a hint: the group ends only on
		// the PR's state as the forge says when read (applyObserved). One shared
		// webhook secret lets any tenant sign an event naming any repository.
		r.s.ObserveRequested = r.s.PR.Number != 0
	case ev.Merged:
		r.s.finish(now, appstudiov1alpha1.PhaseCompleted, "PRMerged", "the pull request was merged")
	case ev.Closed:
		r.s.finish(now, appstudiov1alpha1.PhaseCancelled, "PRClosed", "the pull request was closed without merging")
	default:
		// Edits, pushes, draft changes: read the PR to learn what a person did
		// (there is nothing to read before the PR exists; asking would spin).
		r.s.ObserveRequested = r.s.PR.Number != 0
	}
}

func (r *run) pendingSignals() bool {
	return r.built.Len() > 0 || r.spec.Len() > 0 || r.prEvent.Len() > 0 || r.cancel.Len() > 0
}

// step does the one next piece of work the state calls for.
func (r *run) step() {
	now := workflow.Now(r.ctx)
	s := r.s
	switch {
	case r.cancelReason != "":
		s.finish(now, appstudiov1alpha1.PhaseCancelled, "Cancelled", r.cancelReason)
		return
	case !s.Deadline.IsZero() && !now.Before(s.Deadline) && !s.Released:
		s.finish(now, appstudiov1alpha1.PhaseCancelled, "TimedOut",
			fmt.Sprintf("not all components were ready within the timeout; waiting for %s", strings.Join(s.waitingFor(), ", ")))
		return
	}
	if r.autoReleasing() && r.autoReleaseDue(now) {
		return
	}
	if len(s.PendingComponents) > 0 {
		r.resolvePending()
	}
	if r.nothingLost && len(s.HandBack) > 0 && !now.Before(r.handBackAt) {
		r.handBack()
	}
	if r.syncDue(now) {
		seq := r.urgentSeq
		r.sync()
		if !r.nothingLost || r.urgentSeq == seq {
			r.urgent = false
		}
		return
	}
	if r.nothingLost {
		// Urgency only skips the debounce of a push that is due. With none due
		// (nothing ready yet, pushes paused, a forge back-off) it must not stay set:
		// wait() would wake at once, forever, and the workflow would never yield.
		r.urgent = false
	}
	if s.PR.Number != 0 && (s.ObserveRequested || !now.Before(r.nextPoll)) {
		r.observe()
	}
	if r.ciDue(now) {
		r.checkCI()
	}
}

func (r *run) syncDue(now time.Time) bool {
	s := r.s
	if s.HumanEdits && !s.Overwrite && !s.HumanEditsExplained && !now.Before(r.retryAt) {
		// A poll found the edits: one sync posts the explanation (it pushes nothing).
		return true
	}
	if !s.Dirty || (s.HumanEdits && !s.Overwrite) || now.Before(r.retryAt) {
		return false
	}
	if ready, _ := s.counts(); ready == 0 && s.PR.Number == 0 {
		// Nothing to show yet: the PR is opened with the first ready component.
		s.Dirty = false
		return false
	}
	return r.urgent || s.allReady() || !now.Before(s.LastChange.Add(r.settings.Debounce))
}

func (r *run) resolvePending() {
	var res changegroupcr.Resolved
	err := workflow.ExecuteActivity(r.kubeCtx("resolve components added to the spec"), changegroupcr.ResolveActivity,
		changegroupcr.ResolveRequest{Namespace: r.in.Namespace, Name: r.in.Name, UID: r.in.UID, Components: r.s.PendingComponents}).Get(r.ctx, &res)
	if err != nil {
		r.s.Message = "could not resolve added components: " + errorMessage(err)
		r.s.StatusStale = true
		return
	}
	r.s.addComponents(res.Components, r.nothingLost)
	r.s.PendingComponents = nil
	r.s.markDirty(workflow.Now(r.ctx))
}

func (r *run) mode() pullrequest.Mode {
	if r.s.Released || r.s.ReleaseRequested || r.s.allReady() {
		return pullrequest.ModeRelease
	}
	return pullrequest.ModeHold
}

// branch is the PR's head branch.
func (r *run) branch() string {
	if r.s.Branch != "" {
		return r.s.Branch
	}
	return r.settings.BranchPrefix + r.in.Name
}

// uniqueBranch names a group's branch by namespace, name and UID: groups of the same
// name in two namespaces, or a group re-created under the same name, never share one.
func uniqueBranch(prefix, namespace, name, uid string) string {
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return fmt.Sprintf("%s%s/%s-%s", prefix, namespace, name, uid)
}

func (r *run) sync() {
	s := r.s
	mode := r.mode()
	revision, overwriteRevision := s.Revision, s.OverwriteRevision
	req := pullrequest.SyncRequest{
		Repo:            s.Repo,
		Branch:          r.branch(),
		Namespace:       r.in.Namespace,
		ChangeGroup:     r.in.Name,
		NudgedComponent: s.NudgedComponent,
		ChangeGroupURL:  r.changeGroupURL(),
		Rows:            s.rows(),
		FileMatch:       s.FileMatch,
		Mode:            mode,
		Overwrite:       s.Overwrite,
		Known:           s.PR,
	}
	if r.nothingLost && s.Overwrite {
		req.DiscardHead = s.OverwriteHead
	}
	summary := "push ready digests to the draft PR, CI held"
	if mode == pullrequest.ModeRelease {
		summary = "release CI: lift draft and push the final commit"
	}
	var obs pullrequest.Observed
	err := workflow.ExecuteActivity(r.syncCtx(summary), pullrequest.SyncActivity, req).Get(r.ctx, &obs)
	if err != nil {
		r.forgeFailed(err)
		return
	}
	switch {
	case obs.HumanEdits && r.nothingLost:
		s.HumanEditsExplained = true
		if s.OverwriteRevision == overwriteRevision {
			// A rebase that found newer human commits than the ones it was asked to
			// discard is spent: the next one needs a new request.
			s.Overwrite = false
		}
	case obs.HumanEdits:
		s.HumanEditsExplained = true
	case r.nothingLost:
		// Only what this sync pushed is done: a change or a rebase requested while it
		// ran is pushed by the next one.
		if s.Revision == revision {
			s.Dirty = false
		}
		if s.OverwriteRevision == overwriteRevision {
			s.Overwrite = false
		}
		// A PR merged or closed while this sync pushed may have missed the push:
		// only a push seen on an open PR is delivered; the rest is handed back (at
		// worst a redundant nudge, never a lost one).
		for _, row := range req.Rows {
			c := s.component(row.Component)
			switch {
			case c == nil || obs.State != pullrequest.PROpen:
			case row.State == string(appstudiov1alpha1.ComponentReady):
				c.Pushed = row.New
			default:
				c.Pushed = ""
			}
		}
	default:
		s.Dirty, s.Overwrite = false, false
	}
	r.applyObserved(obs, mode)
}

func (r *run) observe() {
	r.s.ObserveRequested = false
	r.nextPoll = workflow.Now(r.ctx).Add(r.settings.PollInterval)
	var obs pullrequest.Observed
	err := workflow.ExecuteActivity(r.observeCtx("read the pull request's state"), pullrequest.ObserveActivity,
		pullrequest.ObserveRequest{Repo: r.s.Repo, Branch: r.branch(), Known: r.s.PR}).Get(r.ctx, &obs)
	if err != nil {
		r.forgeFailed(err)
		return
	}
	r.applyObserved(obs, "")
}

// applyObserved folds what the forge says into the state. synced is the mode of a
// successful sync, or "" for a plain observation.
func (r *run) applyObserved(obs pullrequest.Observed, synced pullrequest.Mode) {
	s := r.s
	now := workflow.Now(r.ctx)
	if r.nothingLost {
		s.ForgeFailingSince = time.Time{}
	}
	if obs.PR.Number != 0 {
		s.PR = obs.PR
	}
	if r.nothingLost && obs.HeadSHA != "" {
		s.PRHead = obs.HeadSHA
	}
	s.ForgeWrites += obs.Writes
	if obs.References != nil {
		s.applyReferences(obs.References)
	}
	switch obs.State {
	case pullrequest.PRMerged:
		s.finish(now, appstudiov1alpha1.PhaseCompleted, "PRMerged", "the pull request was merged")
		return
	case pullrequest.PRClosed:
		s.finish(now, appstudiov1alpha1.PhaseCancelled, "PRClosed", "the pull request was closed without merging")
		return
	}
	if obs.HumanEdits != s.HumanEdits {
		s.HumanEdits = obs.HumanEdits
		s.StatusStale = true
		if obs.HumanEdits {
			s.Message = "automated pushes paused: " + obs.HumanEditReason + " (tick the rebase checkbox to resume)"
		} else {
			s.Message, s.HumanEditsExplained = "", false
		}
	}
	if obs.RebaseRequested && s.HumanEdits {
		r.requestOverwrite()
		s.markDirty(now)
	}
	if (obs.ReleaseRequested || obs.MarkedReadyByHuman) && !s.Released && !s.ReleaseRequested {
		s.ReleaseRequested = true
		r.markUrgent()
		s.markDirty(now)
	}
	if synced == "" || obs.HumanEdits {
		return
	}
	if s.Phase == appstudiov1alpha1.PhaseInitialized {
		s.Phase = appstudiov1alpha1.PhaseWaiting
		s.StatusStale = true
	}
	if synced == pullrequest.ModeRelease && !s.Released {
		ready, _ := s.counts()
		r.count(metrics.CIBuildsSaved, ready-1)
		s.Released = true
		s.Phase, s.ReadyTime = appstudiov1alpha1.PhaseReady, now
		s.StatusStale = true
		r.watchCI(now, obs)
	} else if synced == pullrequest.ModeRelease && s.CI != nil && s.CI.Reason != appstudiov1alpha1.CIReasonStarted &&
		obs.HeadSHA != "" && obs.HeadSHA != s.CI.SHA {
		// A push after the release (a rebuild): its head is the one CI runs for now.
		s.CI.SHA = obs.HeadSHA
		s.StatusStale = true
	}
}

// watchCI starts looking for the pipeline the release should have started (the
// versionCIStart shape; asked once, at the release).
func (r *run) watchCI(now time.Time, obs pullrequest.Observed) {
	if workflow.GetVersion(r.ctx, versionCIStart, workflow.DefaultVersion, 1) < 1 {
		return
	}
	sha := obs.HeadSHA
	if sha == "" {
		sha = obs.PR.LastPushedSHA
	}
	r.s.CI = &CIWatch{SHA: sha, ReleasedAt: now, Deadline: now.Add(r.settings.CIStartGrace), Reason: appstudiov1alpha1.CIReasonWaiting}
	r.ciNext = r.nextCICheck(now)
}

// ciWatching reports whether the released head's CI is still to be looked at.
func (r *run) ciWatching() bool {
	return r.s.CI.pending() && !r.s.Phase.IsFinal() && r.s.PR.Number != 0
}

func (r *run) ciDue(now time.Time) bool { return r.ciWatching() && !now.Before(r.ciNext) }

// nextCICheck is a poll interval away, or the end of the grace period when that
// comes first: nothing reported by then is worth a warning at once.
func (r *run) nextCICheck(now time.Time) time.Time {
	next := now.Add(r.settings.PollInterval)
	if d := r.s.CI.Deadline; now.Before(d) && d.Before(next) {
		next = d
	}
	return next
}

// checkCI reads what CI reported on the released head and warns (once) when
// Pipelines as Code waits for approval or nothing started within the grace period.
// A failed read is tried again at the next check: the watch never fails the group.
func (r *run) checkCI() {
	s, w := r.s, r.s.CI
	now := workflow.Now(r.ctx)
	r.ciNext = r.nextCICheck(now)
	if w.Reason == appstudiov1alpha1.CIReasonStarted {
		r.warnCI() // only the Event saying it started is left
		return
	}
	var obs pullrequest.CIObserved
	err := workflow.ExecuteActivity(r.ciCtx("look for the pipeline the release should have started"), pullrequest.CIActivity,
		pullrequest.CIRequest{Repo: s.Repo, Known: s.PR, SHA: w.SHA}).Get(r.ctx, &obs)
	if err != nil {
		workflow.GetLogger(r.ctx).Warn("CI reports not read; trying again at the next check", "sha", w.SHA, "error", err)
		return
	}
	if obs.State != pullrequest.PROpen {
		// Merged or closed meanwhile: the next observation ends the group.
		s.ObserveRequested = true
		return
	}
	reason := w.Reason
	switch {
	case obs.Started:
		reason = appstudiov1alpha1.CIReasonStarted
	case obs.AwaitingApproval:
		reason = appstudiov1alpha1.CIReasonAwaitingApproval
	case !now.Before(w.Deadline):
		reason = appstudiov1alpha1.CIReasonNoPipelineStarted
	}
	if reason != w.Reason || obs.Author != w.Author || obs.Detail != w.Detail || !slices.Equal(obs.Names, w.Names) {
		workflow.GetLogger(r.ctx).Info("CI of the released head", "sha", w.SHA, "reason", reason, "reports", obs.Names)
		w.Reason, w.Author, w.Detail, w.Names = reason, obs.Author, obs.Detail, obs.Names
		s.StatusStale = true
	}
	r.warnCI()
}

// warnCI says what the condition says where people look: one PR comment naming
// what a maintainer must do (once per group), and an Event per reason; after a
// warning, an Event when the pipeline starts. Each is retried at the next check
// until done; none of them is ever made twice (the comment's key and the Event's
// name are deterministic, and the activities look before they write).
func (r *run) warnCI() {
	s, w := r.s, r.s.CI
	if ciWarning(w.Reason) && !w.Commented && w.CommentRefused == "" {
		var res pullrequest.CommentResult
		err := workflow.ExecuteActivity(r.ciCtx("comment on the PR: CI did not start"), pullrequest.CommentActivity,
			pullrequest.CommentRequest{Repo: s.Repo, Known: s.PR, Key: ciCommentKey, Body: r.ciComment()}).Get(r.ctx, &res)
		var appErr *temporal.ApplicationError
		switch {
		case errors.As(err, &appErr) && appErr.NonRetryable():
			// The forge refuses (the bot may not comment): the condition and the
			// Event still say it; asking again every poll would change nothing.
			w.CommentRefused = errorMessage(err)
			workflow.GetLogger(r.ctx).Warn("CI comment refused by the forge; not asking again", "error", err)
		case err != nil:
			workflow.GetLogger(r.ctx).Warn("CI comment not posted; trying again at the next check", "error", err)
		default:
			w.Commented = true
			s.ForgeWrites += res.Writes
		}
	}
	evType := "Warning"
	switch {
	case ciWarning(w.Reason) && w.Evented != w.Reason:
	case w.Reason == appstudiov1alpha1.CIReasonStarted && w.Evented != "" && w.Evented != w.Reason:
		evType = "Normal"
	default:
		return
	}
	cond := w.condition()
	err := workflow.ExecuteActivity(r.kubeCtx("record an Event: "+w.Reason), changegroupcr.EventActivity,
		changegroupcr.EventRequest{Namespace: r.in.Namespace, Name: r.in.Name, UID: r.in.UID, Type: evType,
			Reason: w.Reason, Message: cond.Message, Key: w.SHA}).Get(r.ctx, nil)
	if err != nil {
		workflow.GetLogger(r.ctx).Warn("CI Event not recorded; trying again at the next check", "reason", w.Reason, "error", err)
		return
	}
	w.Evented = w.Reason
}

// ciCommentKey names the one comment a group posts when its CI did not start.
const ciCommentKey = "ci-not-started"

// ciComment is the PR comment: what happened and what a maintainer must do. It
// names the `/ok-to-test` command only inside a sentence, never alone on a line,
// so Pipelines as Code never reads it as the command.
func (r *run) ciComment() string {
	w := r.s.CI
	var what string
	if w.Reason == appstudiov1alpha1.CIReasonAwaitingApproval {
		what = fmt.Sprintf("Pipelines as Code is waiting for approval to run CI on %s: %s.", shortSHA(w.SHA), strings.TrimSuffix(w.Detail, "."))
	} else {
		what = fmt.Sprintf("no check or commit status appeared on %s within %s of the release: Pipelines as Code ignores a pull request "+
			"by an untrusted bot without a word.", shortSHA(w.SHA), w.Deadline.Sub(w.ReleasedAt))
	}
	who := "the account that opened this pull request"
	if w.Author != "" {
		who = "`" + w.Author + "`"
	}
	return fmt.Sprintf("⚠️ **CI has not started for this pull request.** nudgeflow released CI for ChangeGroup `%s/%s` "+
		"(the pushed head no longer carries `[skip ci]`), but %s\n\n"+
		"The builds are delivered in this pull request. Pipelines as Code runs pipelines only for trusted authors "+
		"(the repository's owner, collaborators, organisation members, people with push rights or listed in the `OWNERS` file). "+
		"To test them, a maintainer must either:\n"+
		"- comment `/ok-to-test` on this pull request (Pipelines as Code then runs its pipelines for the head commit, "+
		"unless a run already succeeded for it), or\n"+
		"- make %s a trusted author, so that later groups start CI on their own.\n",
		r.in.Namespace, r.in.Name, what, who)
}

// ciCtx is for the CI reads and the comment: a blip is retried for seconds, a
// longer outage at the next check.
func (r *run) ciCtx(summary string) workflow.Context {
	return workflow.WithActivityOptions(r.ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute, Summary: summary, RetryPolicy: blipRetries,
	})
}

// forgeFailed keeps every collected digest: a non-retryable refusal ends the group
// as Failed with the forge's answer; anything else is retried at the next wake-up.
func (r *run) forgeFailed(err error) {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.NonRetryable() {
		r.s.finish(workflow.Now(r.ctx), appstudiov1alpha1.PhaseFailed, "ForgeRefused", errorMessage(err))
		return
	}
	now := workflow.Now(r.ctx)
	if r.nothingLost {
		if r.s.ForgeFailingSince.IsZero() {
			r.s.ForgeFailingSince = now
		}
		if now.Sub(r.s.ForgeFailingSince) >= r.settings.MaxForgeOutage {
			r.s.finish(now, appstudiov1alpha1.PhaseFailed, "ForgeUnavailable", fmt.Sprintf(
				"the forge kept failing for %s: %s", r.settings.MaxForgeOutage, errorMessage(err)))
			return
		}
	}
	r.s.Message = "the forge did not answer; retrying: " + errorMessage(err)
	r.s.StatusStale = true
	r.retryAt = workflow.Now(r.ctx).Add(r.settings.PollInterval)
	r.nextPoll = r.retryAt
}

// target is the nudged component builds are handed back to: the one the group
// resolved, else the one the bridge named when it started the workflow.
func (r *run) target() string {
	if r.s.NudgedComponent != "" {
		return r.s.NudgedComponent
	}
	return r.in.NudgedComponent
}

func (r *run) changeGroupURL() string {
	if r.settings.ChangeGroupURLBase == "" {
		return ""
	}
	return fmt.Sprintf("%s/ns/%s/changegroups/%s", strings.TrimRight(r.settings.ChangeGroupURLBase, "/"), r.in.Namespace, r.in.Name)
}

// publish writes the CR status and the search attributes when they are behind.
func (r *run) publish() {
	s := r.s
	ready, _ := s.counts()
	if string(s.Phase) != r.lastPhase || ready != r.lastReady {
		if err := workflow.UpsertTypedSearchAttributes(r.ctx,
			searchattr.Phase.ValueSet(string(s.Phase)), searchattr.ReadyCount.ValueSet(int64(ready))); err != nil {
			workflow.GetLogger(r.ctx).Warn("search attributes not updated", "error", err)
		}
		r.lastPhase, r.lastReady = string(s.Phase), ready
		workflow.SetCurrentDetails(r.ctx, s.details())
	}
	if !s.StatusStale {
		return
	}
	err := workflow.ExecuteActivity(r.kubeCtx("write the ChangeGroup's status"), changegroupcr.WriteStatusActivity,
		changegroupcr.StatusRequest{Namespace: r.in.Namespace, Name: r.in.Name, UID: r.in.UID, Status: s.status(r.id)}).Get(r.ctx, nil)
	if err != nil {
		workflow.GetLogger(r.ctx).Warn("status not written; retrying at the next wake-up", "error", err)
		return
	}
	s.StatusStale = false
}

// wait sleeps until a signal, an update, the debounce, the deadline or the next poll.
func (r *run) wait() {
	now := workflow.Now(r.ctx)
	s := r.s
	var wake time.Time
	var why string
	consider := func(t time.Time, reason string) {
		if !t.IsZero() && (wake.IsZero() || t.Before(wake)) {
			wake, why = t, reason
		}
	}
	if s.HumanEdits && !s.Overwrite && !s.HumanEditsExplained {
		due := now
		if r.retryAt.After(due) {
			due = r.retryAt
		}
		consider(due, "explain the paused pushes on the PR")
	}
	if s.Dirty && !(s.HumanEdits && !s.Overwrite) {
		due := s.LastChange.Add(r.settings.Debounce)
		if r.retryAt.After(due) {
			due = r.retryAt
		}
		consider(due, "debounce: push once builds stop arriving")
	}
	if !s.Released {
		consider(s.Deadline, "the ChangeGroup's timeout")
	}
	if r.autoReleasing() {
		for _, t := range r.autoReleaseTimes(now) {
			consider(t.at, t.why)
		}
	}
	if s.PR.Number != 0 {
		if r.nextPoll.IsZero() {
			r.nextPoll = now.Add(r.settings.PollInterval)
		}
		consider(r.nextPoll, "poll the pull request (covers lost webhooks)")
	}
	if r.ciWatching() {
		consider(r.ciNext, "look for the pipeline the release should have started")
	}
	if s.StatusStale {
		consider(now.Add(r.settings.PollInterval), "retry the status write")
	}
	if len(s.HandBack) > 0 {
		due := now
		if r.handBackAt.After(due) {
			due = r.handBackAt
		}
		consider(due, "hand builds back to normal nudging")
	}
	if len(s.Unverified) > 0 {
		consider(r.verifyAt, "verify the builds received")
	}
	woken := func() bool {
		return r.pendingSignals() || r.urgent || r.cancelReason != "" || s.ObserveRequested
	}
	if wake.IsZero() {
		_ = workflow.Await(r.ctx, woken)
		return
	}
	d := wake.Sub(now)
	if d <= 0 {
		return
	}
	_, _ = workflow.AwaitWithOptions(r.ctx, workflow.AwaitOptions{
		Timeout: d, TimerOptions: workflow.TimerOptions{Summary: why},
	}, woken)
}

func (r *run) shouldContinueAsNew() bool {
	info := workflow.GetInfo(r.ctx)
	if info.GetContinueAsNewSuggested() {
		return true
	}
	return r.settings.MaxHistoryLength > 0 && info.GetCurrentHistoryLength() >= r.settings.MaxHistoryLength
}

func (r *run) continueAsNew() error {
	// Every signal that arrived is applied and every update answered before the
	// state moves to the next run: nothing is lost at the boundary.
	_ = workflow.Await(r.ctx, func() bool { return workflow.AllHandlersFinished(r.ctx) })
	r.drainSignals()
	r.s.pruneSeen()
	next := r.in
	next.State = r.s
	if r.cancelReason != "" {
		r.s.finish(workflow.Now(r.ctx), appstudiov1alpha1.PhaseCancelled, "Cancelled", r.cancelReason)
	}
	return workflow.NewContinueAsNewError(r.ctx, WorkflowName, next)
}

// finalize closes the PR of a cancelled group and writes the last status (the shape
// before versionNothingLost).
func (r *run) finalize() {
	r.closeCancelledPR()
	r.publish()
}

// closeCancelledPR closes the PR of a group that was cancelled (not by closing it).
func (r *run) closeCancelledPR() {
	s := r.s
	if s.Phase == appstudiov1alpha1.PhaseCancelled && s.Reason != "PRClosed" && s.PR.Number != 0 {
		var obs pullrequest.Observed
		err := workflow.ExecuteActivity(r.forgeCtx("close the pull request of the cancelled group"), pullrequest.CloseActivity,
			pullrequest.CloseRequest{Repo: s.Repo, Known: s.PR,
				Comment: fmt.Sprintf("ChangeGroup `%s` was cancelled: %s. nudgeflow closed this pull request.", r.in.Name, s.Message)}).Get(r.ctx, &obs)
		if err == nil {
			s.ForgeWrites += obs.Writes
		} else {
			s.Message += "; closing the pull request failed: " + errorMessage(err)
		}
		s.StatusStale = true
	}
}

func (r *run) kubeCtx(summary string) workflow.Context {
	return workflow.WithActivityOptions(r.ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 10,
		},
	})
}

func (r *run) forgeCtx(summary string) workflow.Context {
	return workflow.WithActivityOptions(r.ctx, workflow.ActivityOptions{
		// A worker that dies mid-call delays the group by this much, at most.
		StartToCloseTimeout: time.Minute,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 12,
		},
	})
}

// blipRetries retry a forge call for a few seconds only: a longer outage comes
// back to the main loop (see syncCtx).
var blipRetries = &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 4 * time.Second, MaximumAttempts: 4}

// observeCtx is forgeCtx for the poll of the PR; in the nothing-lost shape a failed
// poll comes back to the main loop quickly, like a failed sync.
func (r *run) observeCtx(summary string) workflow.Context {
	if !r.nothingLost {
		return r.forgeCtx(summary)
	}
	return workflow.WithActivityOptions(r.ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute, Summary: summary, RetryPolicy: blipRetries,
	})
}

// syncCtx is forgeCtx for the sync, which reads a whole tree: in the nothing-lost
// shape it may run long on a big repository while it heartbeats, and a dead worker
// is still noticed within the heartbeat timeout. Its retries cover a blip only (a
// few seconds): a longer outage comes back to the main loop, which retries at its
// next wake-up (bounded by MaxForgeOutage) and meanwhile acts on a cancel, a drop or
// a timeout instead of waiting minutes behind one activity.
func (r *run) syncCtx(summary string) workflow.Context {
	if !r.nothingLost {
		return r.forgeCtx(summary)
	}
	return workflow.WithActivityOptions(r.ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		Summary:             summary,
		RetryPolicy:         blipRetries,
	})
}

func errorMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	return err.Error()
}

// details is the markdown the Web UI shows as the workflow's current details.
func (s *State) details() string {
	var b strings.Builder
	ready, total := s.counts()
	b.WriteString(fmt.Sprintf("**%s** — %d/%d ready", s.Phase, ready, total))
	if s.PR.URL != "" {
		b.WriteString(fmt.Sprintf(" — [PR #%d](%s)", s.PR.Number, s.PR.URL))
	}
	b.WriteString("\n\n| component | new build | state |\n|---|---|---|\n")
	for _, c := range s.Components {
		b.WriteString(fmt.Sprintf("| %s | %s | %s |\n", c.Name, shortDigest(c.New), c.State))
	}
	return b.String()
}

func shortDigest(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}

// autoReleasing reports whether this run enforces spec.autoRelease: the group has
// one (or is automatic) and the run is of the versionAutoRelease shape. The version
// is asked once per run, the first time a group with autoRelease needs it.
func (r *run) autoReleasing() bool {
	if r.s == nil || (r.s.AutoRelease == nil && !r.s.Automatic) {
		return false
	}
	if !r.autoChecked {
		r.autoOn = workflow.GetVersion(r.ctx, versionAutoRelease, workflow.DefaultVersion, 1) >= 1
		r.autoChecked = true
	}
	return r.autoOn
}

// autoReleaseDue releases the group when its window or maxWait has passed (it
// reports whether the group ended instead: maxWait with nothing ready).
func (r *run) autoReleaseDue(now time.Time) bool {
	s := r.s
	a := s.AutoRelease
	if a == nil || s.Released || s.ReleaseRequested || s.allReady() {
		return false
	}
	ready, total := s.counts()
	var why string
	switch {
	case a.MaxWait > 0 && !now.Before(s.StartTime.Add(a.MaxWait)):
		if ready == 0 {
			s.finish(now, appstudiov1alpha1.PhaseCancelled, "MaxWaitNothingReady",
				fmt.Sprintf("maxWait %s passed and no member had a new build", a.MaxWait))
			return true
		}
		why = fmt.Sprintf("maxWait %s passed: released with %d of %d ready; waiting for %s", a.MaxWait, ready, total, strings.Join(s.waitingFor(), ", "))
	case a.windowPassed(s, now) && a.windowReleases(ready, total):
		why = fmt.Sprintf("no new build for %s (window, policy %s): released with %d of %d ready; waiting for %s",
			a.Window, a.policy(), ready, total, strings.Join(s.waitingFor(), ", "))
	default:
		return false
	}
	s.ReleaseRequested = true
	s.AutoReleased = why
	s.Message = why
	r.markUrgent()
	s.markDirty(now)
	workflow.GetLogger(r.ctx).Info("releasing on its own", "why", why)
	return false
}

type wakeUp struct {
	at  time.Time
	why string
}

// autoReleaseTimes are the future moments autoReleaseDue may act.
func (r *run) autoReleaseTimes(now time.Time) []wakeUp {
	s := r.s
	a := s.AutoRelease
	if a == nil || s.Released || s.ReleaseRequested || s.Phase.IsFinal() {
		return nil
	}
	var out []wakeUp
	if a.MaxWait > 0 {
		out = append(out, wakeUp{s.StartTime.Add(a.MaxWait), "batch maxWait: release what is ready"})
	}
	if end := s.LastBuildAt.Add(a.Window); a.Window > 0 && !s.LastBuildAt.IsZero() && now.Before(end) && a.policy() != AutoReleaseAll {
		out = append(out, wakeUp{end, "batch window: release if no new build arrives"})
	}
	return out
}

func (a *AutoRelease) policy() string {
	if a.Policy == "" {
		return AutoReleaseWindow
	}
	return a.Policy
}

func (a *AutoRelease) windowPassed(s *State, now time.Time) bool {
	return a.Window > 0 && !s.LastBuildAt.IsZero() && !now.Before(s.LastBuildAt.Add(a.Window))
}

// windowReleases says whether a quiet window releases with ready of total.
func (a *AutoRelease) windowReleases(ready, total int) bool {
	switch a.policy() {
	case AutoReleaseAll:
		return false
	case AutoReleaseQuorum:
		q := a.Quorum
		if q <= 0 || q > total {
			q = total
		}
		return ready >= q && ready > 0
	}
	return ready > 0
}
