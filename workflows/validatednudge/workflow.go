// Package validatednudge is the ValidatedNudge workflow (ADR 67 `mode: validated`),
// one per edge (namespace, from, to). It holds the newest pending build of the
// source, waits for a Snapshot of the gating ComponentGroup containing exactly that
// image (repo@digest) to finish testing, and then nudges that digest through a Nudge
// child workflow. A failed Snapshot drops the build only a grace period after the
// build's first failed verdict (versionFailedSnapshotGrace): another Snapshot holding
// it may not exist yet, and the first that passes decides. A pass arriving after the
// grace still delivers the build while nothing newer came. A newer build supersedes a
// pending one. A digest that has not passed is never nudged, and digests are nudged
// in build order: never an older build after a newer one.
//
// It lives long: it continues as new with its state (and the dedupe sets) after
// draining its signals, and never while a nudge is running.
package validatednudge

import (
	"errors"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	"github.com/nudgeflow/nudgeflow/activities/grouproute"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/searchattr"
	"github.com/nudgeflow/nudgeflow/workflows/nudge"
)

// WorkflowName is the registered name; never change it.
const WorkflowName = "ValidatedNudge"

// Signals and the query.
const (
	// SignalBuild carries a Build of the source component.
	SignalBuild = "build"
	// SignalSnapshotTested carries a SnapshotResult of the gating group.
	SignalSnapshotTested = "snapshot-tested"
	QueryState           = "state"
)

// Phases.
const (
	PhaseIdle     = "Idle"
	phaseWaiting  = "WaitingForTests"
	phaseNudging  = "Nudging"
	dedupeBound   = 200
	historyBound  = 20
	verdictsBound = 50
)

// WorkflowID is the edge's workflow.
func WorkflowID(namespace, from, to string) string {
	return fmt.Sprintf("validated-nudge/%s/%s/%s", namespace, from, to)
}

// Build is a succeeded push build of the source.
type Build = nudgeapi.Build

// SnapshotResult says a Snapshot of the gating group finished testing. Images are
// the containerImages of the snapshot's entries for the source component.
type SnapshotResult struct {
	Snapshot       string   `json:"snapshot"`
	ComponentGroup string   `json:"componentGroup"`
	Images         []string `json:"images"`
	Passed         bool     `json:"passed"`
}

// Tuning is passed through to the Nudge children.
type Tuning = nudgeapi.Tuning

// Input starts (or continues) the edge's workflow.
type Input struct {
	Namespace   string `json:"namespace"`
	From        string `json:"from"`
	To          string `json:"to"`
	GatingGroup string `json:"gatingGroup,omitempty"`
	Tuning      Tuning `json:"tuning,omitempty"`
	// FailedSnapshotGrace is how long after a build's first failed verdict the edge
	// waits for a passing one before the build counts as failed (0:
	// DefaultFailedSnapshotGrace).
	FailedSnapshotGrace time.Duration `json:"failedSnapshotGrace,omitempty"`
	// ContinueAsNewAfter continues as new at this history length (0: when the
	// server suggests it). Tests set it low.
	ContinueAsNewAfter int   `json:"continueAsNewAfter,omitempty"`
	State              State `json:"state"`
}

// DefaultFailedSnapshotGrace is the wait after a build's first failed verdict. A
// build is in several Snapshots (its gating group's next ones, through the group's
// Global Candidate List, or for an edge without a gatingGroup, its application's
// and every ComponentGroup's), which integration-service creates as the builds of
// the other components land, not all at once: a failure is final only when no
// passing sibling followed it within this time. Ten minutes covers the creation of
// the siblings; tests that outlast it still deliver (a later pass while the build
// is the newest nudges it).
const DefaultFailedSnapshotGrace = 10 * time.Minute

// Failure is the first failed verdict on the pending build.
type Failure struct {
	Snapshot string    `json:"snapshot"`
	At       time.Time `json:"at"`
}

// Verdict is a Snapshot result for an image whose build has not arrived yet.
type Verdict struct {
	PullSpec string `json:"pullSpec"`
	Passed   bool   `json:"passed"`
	Snapshot string `json:"snapshot"`
}

// NudgeRecord is one nudge this edge ran.
type NudgeRecord struct {
	Digest     string    `json:"digest"`
	BuiltAt    time.Time `json:"builtAt"`
	WorkflowID string    `json:"workflowID"`
	Phase      string    `json:"phase"`
}

// State is the edge's truth, carried across continue-as-new.
type State struct {
	// Pending waits for its Snapshot; Ready passed and waits for the running nudge.
	Pending *Build `json:"pending,omitempty"`
	Ready   *Build `json:"ready,omitempty"`
	Running *Build `json:"running,omitempty"`
	// LastNudged is the newest build a nudge was started for: nothing older follows.
	LastNudged    *Build        `json:"lastNudged,omitempty"`
	SeenBuilds    []string      `json:"seenBuilds,omitempty"`
	SeenSnapshots []string      `json:"seenSnapshots,omitempty"`
	Verdicts      []Verdict     `json:"verdicts,omitempty"`
	Nudges        []NudgeRecord `json:"nudges,omitempty"`
	Dropped       []string      `json:"dropped,omitempty"`
	// Failing is the pending build's first failed verdict: the build counts as
	// failed a grace after it, unless a Snapshot holding it passes first.
	Failing *Failure `json:"failing,omitempty"`
	// Failed is the newest build that counted as failed: a pass arriving later
	// still delivers it, as long as no newer build arrived.
	Failed *Build `json:"failed,omitempty"`
	// BuildVerdicts are the verdicts on the latest builds received
	// (versionVerifyBuilds): a build is verified when it enters, never again; a
	// refused one is held nowhere.
	BuildVerdicts []BuildVerdict `json:"buildVerdicts,omitempty"`

	// grace is the run's wait after a failed verdict (versionFailedSnapshotGrace);
	// 0 in runs recorded before it: a failed verdict drops the build at once.
	grace time.Duration
}

// BuildVerdict is what the cluster said of one build the edge received.
type BuildVerdict struct {
	Digest           string `json:"digest"`
	BuildPipelineRun string `json:"buildPipelineRun,omitempty"`
	buildcheck.Verdict
}

// buildKey is a build's key in SeenBuilds.
func buildKey(b Build) string { return b.BuildUID + "/" + b.Digest }

// refuse records a build the cluster did not build: seen (a redelivery is not
// verified again) and never held.
func (s *State) refuse(b Build, v buildcheck.Verdict) {
	s.SeenBuilds = pushBounded(s.SeenBuilds, buildKey(b), dedupeBound)
	s.BuildVerdicts = pushBounded(s.BuildVerdicts, BuildVerdict{Digest: b.Digest, BuildPipelineRun: b.BuildPipelineRun, Verdict: v}, verdictsBound)
}

func newer(b *Build, than *Build) bool { return than == nil || b.BuiltAt.After(than.BuiltAt) }

func pushBounded[T any](s []T, v T, bound int) []T {
	s = append(s, v)
	if len(s) > bound {
		s = s[len(s)-bound:]
	}
	return s
}

// onBuild takes a build signal at now; it returns why it was ignored, or "".
func (s *State) onBuild(b Build, now time.Time) string {
	key := buildKey(b)
	if slices.Contains(s.SeenBuilds, key) {
		return "duplicate"
	}
	s.SeenBuilds = pushBounded(s.SeenBuilds, key, dedupeBound)
	for _, cur := range []*Build{s.LastNudged, s.Running, s.Ready, s.Pending} {
		if !newer(&b, cur) {
			return "older than a build already held or nudged"
		}
	}
	if s.Pending != nil {
		s.Dropped = pushBounded(s.Dropped, s.Pending.Digest+" (superseded)", historyBound)
	}
	// A newer build: the failed one is superseded, a late pass no longer revives it.
	s.Pending, s.Failing, s.Failed = &b, nil, nil
	if s.grace > 0 {
		// Every verdict that came first counts: a pass among them delivers.
		held := func(v Verdict) bool { return v.PullSpec == b.PullSpec }
		passed, failedIn := false, ""
		for _, v := range s.Verdicts {
			if held(v) {
				passed = passed || v.Passed
				if !v.Passed && failedIn == "" {
					failedIn = v.Snapshot
				}
			}
		}
		s.Verdicts = slices.DeleteFunc(s.Verdicts, held)
		if passed || failedIn != "" {
			s.apply(passed, failedIn, now)
		}
		return ""
	}
	if i := slices.IndexFunc(s.Verdicts, func(v Verdict) bool { return v.PullSpec == b.PullSpec }); i >= 0 {
		v := s.Verdicts[i]
		s.Verdicts = slices.Delete(s.Verdicts, i, i+1)
		s.apply(v.Passed, v.Snapshot, now)
	}
	return ""
}

// onSnapshot takes a Snapshot result at now; it returns why it was ignored, or "".
func (s *State) onSnapshot(r SnapshotResult, now time.Time) string {
	key := fmt.Sprintf("%s/%t", r.Snapshot, r.Passed)
	if slices.Contains(s.SeenSnapshots, key) {
		return "duplicate"
	}
	s.SeenSnapshots = pushBounded(s.SeenSnapshots, key, dedupeBound)
	if s.Pending != nil && slices.Contains(r.Images, s.Pending.PullSpec) {
		s.apply(r.Passed, r.Snapshot, now)
		return ""
	}
	if s.grace > 0 && r.Passed && s.Failed != nil && slices.Contains(r.Images, s.Failed.PullSpec) {
		// It counted as failed, but a Snapshot holding it passed after the grace and
		// nothing newer came: deliverable after all.
		s.Dropped = pushBounded(s.Dropped, s.Failed.Digest+" (revived: passed in "+r.Snapshot+")", historyBound)
		s.Ready, s.Failed = s.Failed, nil
		return ""
	}
	// The build may not have arrived yet: keep the verdict for a while.
	for _, img := range r.Images {
		s.Verdicts = pushBounded(s.Verdicts, Verdict{PullSpec: img, Passed: r.Passed, Snapshot: r.Snapshot}, verdictsBound)
	}
	return "no pending build in it"
}

// apply is a verdict on the pending build. A pass makes it ready; a failure drops
// it at once in runs without the grace, else starts the grace (the first failure).
func (s *State) apply(passed bool, snapshot string, now time.Time) {
	if passed {
		s.Ready, s.Pending, s.Failing = s.Pending, nil, nil
		return
	}
	if s.grace > 0 {
		if s.Failing == nil {
			s.Failing = &Failure{Snapshot: snapshot, At: now}
		}
		return
	}
	s.Dropped = pushBounded(s.Dropped, s.Pending.Digest+" (failed in "+snapshot+")", historyBound)
	s.Pending = nil
}

// failingUntil is when the failing pending build counts as failed (zero: none is failing).
func (s *State) failingUntil() time.Time {
	if s.Failing == nil || s.Pending == nil {
		return time.Time{}
	}
	return s.Failing.At.Add(s.grace)
}

// expire: the grace after the pending build's first failure passed with no pass.
// The build counts as failed; it is kept as Failed, which a later pass revives.
func (s *State) expire() {
	if s.Failing == nil || s.Pending == nil {
		return
	}
	s.Dropped = pushBounded(s.Dropped, fmt.Sprintf("%s (failed in %s; none passed within %s)", s.Pending.Digest, s.Failing.Snapshot, s.grace), historyBound)
	s.Failed, s.Pending, s.Failing = s.Pending, nil, nil
}

func (s *State) phase() string {
	switch {
	case s.Running != nil || s.Ready != nil:
		return phaseNudging
	case s.Pending != nil:
		return phaseWaiting
	}
	return PhaseIdle
}

// Workflow runs the edge.
func Workflow(ctx workflow.Context, in Input) error {
	log := workflow.GetLogger(ctx)
	st := &in.State
	lastPhase := ""
	syncPhase := func() {
		p := st.phase()
		if p == lastPhase {
			return
		}
		lastPhase = p
		if err := workflow.UpsertTypedSearchAttributes(ctx,
			searchattr.KubeNamespace.ValueSet(in.Namespace),
			searchattr.NudgeEdge.ValueSet(nudgeapi.Edge(in.From, in.To)),
			searchattr.NudgingComponent.ValueSet(in.From),
			searchattr.NudgedComponent.ValueSet(in.To),
			searchattr.Phase.ValueSet(p)); err != nil {
			log.Warn("upserting search attributes", "error", err)
		}
	}
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (State, error) { return *st, nil }); err != nil {
		return fmt.Errorf("registering the state query: %w", err)
	}
	buildCh := workflow.GetSignalChannel(ctx, SignalBuild)
	snapCh := workflow.GetSignalChannel(ctx, SignalSnapshotTested)
	handled := 0 // signals taken in this run: never continue as new before the first
	verify := workflow.GetVersion(ctx, versionVerifyBuilds, workflow.DefaultVersion, 1) >= 1
	if workflow.GetVersion(ctx, versionFailedSnapshotGrace, workflow.DefaultVersion, 1) >= 1 {
		st.grace = in.FailedSnapshotGrace
		if st.grace <= 0 {
			st.grace = DefaultFailedSnapshotGrace
		}
	}
	takeBuild := func(b Build) {
		handled++
		if verify && !slices.Contains(st.SeenBuilds, buildKey(b)) {
			v := verifyBuild(ctx, in, b)
			if !v.Verified {
				st.refuse(b, v)
				log.Warn("build refused: the cluster did not build it", "digest", b.Digest, "build", b.BuildPipelineRun, "reason", v.Reason)
				return
			}
			st.BuildVerdicts = pushBounded(st.BuildVerdicts, BuildVerdict{Digest: b.Digest, BuildPipelineRun: b.BuildPipelineRun, Verdict: v}, verdictsBound)
		}
		if why := st.onBuild(b, workflow.Now(ctx)); why != "" {
			log.Info("build ignored", "digest", b.Digest, "build", b.BuildPipelineRun, "why", why)
		}
	}
	takeSnapshot := func(r SnapshotResult) {
		handled++
		if why := st.onSnapshot(r, workflow.Now(ctx)); why != "" {
			log.Info("snapshot result ignored", "snapshot", r.Snapshot, "passed", r.Passed, "why", why)
		}
	}

	var child workflow.ChildWorkflowFuture
	// The grace timer of the failing pending build (versionFailedSnapshotGrace),
	// for the build graceFor names; cancelled when that build passes or is superseded.
	var graceTimer workflow.Future
	var graceCancel workflow.CancelFunc
	graceFor := ""
	stopGrace := func() {
		if graceCancel != nil {
			graceCancel()
		}
		graceTimer, graceCancel, graceFor = nil, nil, ""
	}
	for {
		if until := st.failingUntil(); until.IsZero() {
			stopGrace()
		} else if key := buildKey(*st.Pending); key != graceFor {
			stopGrace()
			left := until.Sub(workflow.Now(ctx))
			if left <= 0 {
				// The grace passed before this run (continued as new while it ran).
				st.expire()
				continue
			}
			var tctx workflow.Context
			tctx, graceCancel = workflow.WithCancel(ctx)
			graceTimer, graceFor = workflow.NewTimer(tctx, left), key
		}
		if child == nil && st.Ready != nil {
			if rec := batch(ctx, in, *st.Ready); rec != nil {
				// A ChangeGroup (manual, or the target's automatic batch) took it.
				st.Nudges = pushBounded(st.Nudges, *rec, historyBound)
				st.LastNudged, st.Ready = st.Ready, nil
				continue
			}
			child = startNudge(ctx, in, *st.Ready)
			st.Running, st.Ready = st.Ready, nil
			st.LastNudged = st.Running
		}
		syncPhase()
		if child == nil && handled > 0 && shouldContinueAsNew(ctx, in) {
			// Drain what arrived so no signal is lost at the run boundary.
			for {
				var b Build
				if !buildCh.ReceiveAsync(&b) {
					break
				}
				takeBuild(b)
			}
			for {
				var r SnapshotResult
				if !snapCh.ReceiveAsync(&r) {
					break
				}
				takeSnapshot(r)
			}
			if st.Ready == nil {
				return workflow.NewContinueAsNewError(ctx, WorkflowName, in)
			}
			continue
		}
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(buildCh, func(c workflow.ReceiveChannel, _ bool) {
			var b Build
			c.Receive(ctx, &b)
			takeBuild(b)
		})
		sel.AddReceive(snapCh, func(c workflow.ReceiveChannel, _ bool) {
			var r SnapshotResult
			c.Receive(ctx, &r)
			takeSnapshot(r)
		})
		if graceTimer != nil {
			sel.AddFuture(graceTimer, func(f workflow.Future) {
				fired := f.Get(ctx, nil) == nil && st.Pending != nil && buildKey(*st.Pending) == graceFor
				graceTimer, graceCancel, graceFor = nil, nil, ""
				if fired {
					log.Info("no Snapshot holding the build passed within the grace: it counts as failed", "digest", st.Pending.Digest, "grace", st.grace)
					st.expire()
				}
			})
		}
		if child != nil {
			sel.AddFuture(child, func(f workflow.Future) {
				var res nudgeapi.Result
				err := f.Get(ctx, &res)
				rec := NudgeRecord{Digest: st.Running.Digest, BuiltAt: st.Running.BuiltAt,
					WorkflowID: nudgeapi.WorkflowID(in.Namespace, st.Running.BuildUID, in.To), Phase: res.Phase}
				var already *temporal.ChildWorkflowExecutionAlreadyStartedError
				switch {
				case err == nil:
				case asAlreadyStarted(err, &already):
					rec.Phase = "AlreadyStarted"
				default:
					if rec.Phase == "" {
						rec.Phase = nudgeapi.PhaseFailed
					}
					log.Warn("nudge ended in failure", "digest", rec.Digest, "error", err)
				}
				st.Nudges = pushBounded(st.Nudges, rec, historyBound)
				st.Running, child = nil, nil
			})
		}
		cancelled := false
		sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) { cancelled = true })
		sel.Select(ctx)
		if cancelled {
			return ctx.Err()
		}
	}
}

// versionVerifyBuilds guards verifying a build when its signal arrives
// (activities/buildcheck): whoever reaches Temporal can signal any digest. A
// refused build is never held, offered to a group nor nudged; the verdict is in
// the state. Runs recorded before it hold every build they receive (the Nudge
// they start verifies it on its own).
const versionVerifyBuilds = "verify-builds"

// versionFailedSnapshotGrace guards the wait after a failed verdict (a timer, then
// the drop): runs recorded before it drop the build on its first failed Snapshot.
const versionFailedSnapshotGrace = "failed-snapshot-grace"

// HistoryShape names the command sequence of this version, for stored histories.
const HistoryShape = versionFailedSnapshotGrace

// verifyBuild asks the cluster whether it built b, until it answers: the edge
// waits (its signals queue) rather than hold a build unverified or drop it.
// The refusal's Event goes on the target Component.
func verifyBuild(ctx workflow.Context, in Input, b Build) buildcheck.Verdict {
	var verifier *buildcheck.Activities // nil: its method value names the activity
	req := nudge.VerifyRequest(nudgeapi.Request{Namespace: in.Namespace, Nudging: in.From, Nudged: in.To, Build: b}, workflow.GetInfo(ctx).WorkflowExecution.ID)
	actx := workflow.WithActivityOptions(ctx, buildcheck.Options("verify that the cluster built "+in.From+"@"+b.Digest))
	var v buildcheck.Verdict
	if err := workflow.ExecuteActivity(actx, verifier.VerifyBuild, req).Get(ctx, &v); err != nil {
		// The activity retries until the cluster answers: only a request it rejects
		// (or the workflow's cancellation) ends here. Nothing proves the build.
		return buildcheck.Verdict{Reason: "not verified: " + err.Error()}
	}
	return v
}

// versionBatching guards the batching shape: a passed build is first offered to
// the ChangeGroup that holds the edge or to the target's automatic batch (an
// activity); histories recorded before it start the Nudge at once.
const versionBatching = "batching"

// PhaseBatched is a NudgeRecord's phase when a ChangeGroup took the build.
const PhaseBatched = "Batched"

// batch offers a passed build to a ChangeGroup; nil: none took it, nudge it. An
// activity that keeps failing (the API server unreachable for minutes) falls back
// to the nudge: the build is nudged unbatched rather than never.
func batch(ctx workflow.Context, in Input, b Build) *NudgeRecord {
	if workflow.GetVersion(ctx, versionBatching, workflow.DefaultVersion, 1) < 1 {
		return nil
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 30},
		Summary:             fmt.Sprintf("give %s to the ChangeGroup batching %s, if any", b.PullSpec, in.To),
	})
	var res grouproute.Result
	err := workflow.ExecuteActivity(actx, grouproute.Activity, grouproute.Request{Namespace: in.Namespace, From: in.From, To: in.To, Build: b}).Get(ctx, &res)
	if err != nil {
		workflow.GetLogger(ctx).Warn("could not offer the build to a ChangeGroup; nudging it", "digest", b.Digest, "error", err)
		return nil
	}
	if res.ChangeGroup == "" {
		return nil
	}
	return &NudgeRecord{Digest: b.Digest, BuiltAt: b.BuiltAt, WorkflowID: res.WorkflowID, Phase: PhaseBatched + " in ChangeGroup " + res.ChangeGroup}
}

func startNudge(ctx workflow.Context, in Input, b Build) workflow.ChildWorkflowFuture {
	req := nudgeapi.Request{Namespace: in.Namespace, Nudging: in.From, Nudged: in.To, Mode: "validated", Build: b, Tuning: in.Tuning}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            nudgeapi.WorkflowID(in.Namespace, b.BuildUID, in.To),
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		// A running Renovate nudge outlives this workflow's run boundary.
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		TypedSearchAttributes: temporal.NewSearchAttributes(nudgeapi.SearchAttributes(req, nudgeapi.PhaseLaunching)...),
		StaticSummary:         fmt.Sprintf("validated nudge of %s to %s", in.To, b.PullSpec),
	})
	return workflow.ExecuteChildWorkflow(cctx, nudgeapi.WorkflowName, req)
}

func shouldContinueAsNew(ctx workflow.Context, in Input) bool {
	info := workflow.GetInfo(ctx)
	if info.GetContinueAsNewSuggested() {
		return true
	}
	return in.ContinueAsNewAfter > 0 && info.GetCurrentHistoryLength() >= in.ContinueAsNewAfter
}

func asAlreadyStarted(err error, target **temporal.ChildWorkflowExecutionAlreadyStartedError) bool {
	return errors.As(err, target)
}
