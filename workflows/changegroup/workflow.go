package changegroup

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	changegroupcr "github.com/nudgeflow/nudgeflow/contracts/changegroupcrapi"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	handback "github.com/nudgeflow/nudgeflow/contracts/handbackapi"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
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
		var obs changegroupprapi.Observed
		err := workflow.ExecuteActivity(r.forgeCtx("close the pull request of the cancelled group"), changegroupprapi.CloseActivity,
			changegroupprapi.CloseRequest{Repo: s.Repo, Known: s.PR,
				Comment: fmt.Sprintf("ChangeGroup `%s` was cancelled: %s. nudgeflow closed this pull request.", r.in.Name, s.Message)}).Get(r.ctx, &obs)
		if err == nil {
			s.ForgeWrites += obs.Writes
		} else {
			s.Message += "; closing the pull request failed: " + errorMessage(err)
		}
		s.StatusStale = true
	}
}

func errorMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	return err.Error()
}
