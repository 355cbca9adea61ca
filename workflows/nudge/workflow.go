// Package nudge is the Nudge workflow: one per (nudging build, nudged component). An
// immediate nudge first asks which writer writes it (direct.go): nudgeflow's direct
// writer opens or updates the pull request itself with no PipelineRun; otherwise,
// or when that writer leaves the nudge to Renovate, the workflow launches a
// Renovate PipelineRun, waits for its end (the bridge's signal, with a
// polling activity as the fallback), retries a failed run with backoff up to a limit
// (a new deterministic run name per attempt) and records every outcome: an Event on
// the nudged Component per attempt and the Phase search attribute. A Renovate failure
// is never lost: it ends as Phase Failed with a Warning Event.
package nudge

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/contracts/nudgewriteapi"
	renovate "github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
)

// QueryState answers State.
const QueryState = "state"

// Event reasons on the nudged Component, one per attempt's outcome.
const (
	ReasonSucceeded  = "NudgeSucceeded"
	ReasonRunFailed  = "NudgeRunFailed"
	ReasonFailed     = "NudgeFailed"
	reasonHeld       = "NudgeHeldByChangeGroup"
	ReasonCancelled  = "NudgeCancelled"
	ReasonSuperseded = "NudgeSuperseded"
)

// versionSupersededEnds guards the end of a nudge whose build a newer build of the
// same component superseded (renovate.ErrorTypeSuperseded at launch, or its run
// stopped with renovate.AnnotationSupersededBy): before it, the launch refusal
// failed the nudge and a stopped run counted as cancelled.
const versionSupersededEnds = "superseded-ends"

// versionHeldRunEnds guards the end of a nudge whose Renovate run a ChangeGroup
// held, and the extra attempt for a run a group held and returned: before it, such
// runs counted as failed attempts.
const versionHeldRunEnds = "held-run-ends"

// versionCancelledRunEnds guards the end of a nudge whose Renovate run someone
// cancelled: before it, a cancelled run counted as a failed attempt and was
// launched again after the backoff, so a person had to cancel every attempt.
const versionCancelledRunEnds = "cancelled-run-ends"

// versionVerifyBuilds guards verifying the build before the first launch
// (activities/buildcheck): whoever reaches Temporal can start a Nudge with any
// digest. A refused build is launched nowhere; the verdict is in the state.
const versionVerifyBuilds = "verify-builds"

// versionDeliveryFromForge guards asking the forge, after a Renovate run that
// exited 0, whether the build was delivered (renovate.CheckDelivery: the digest on
// the base branch, in an open or merged pull request of the nudge branch, or
// nothing to change). Before it, the step's reading of Renovate's log decided,
// and Renovate exits 0 after a pull request it failed to open.
const versionDeliveryFromForge = "delivery-from-forge"

// versionDirectWriter guards choosing the writer of an immediate nudge before its
// first Renovate launch (nudgeapi.ChooseWriterActivity) and, when the choice is
// nudgeflow's direct writer, writing the pull request with no PipelineRun
// (nudgewriteapi.WriteActivity). Before it, every nudge launched Renovate.
const versionDirectWriter = "direct-writer"

// HistoryShape names the command sequence of this version, for stored histories.
const HistoryShape = versionDirectWriter

// State is what the query shows.
type State struct {
	Phase        string   `json:"phase"`
	Attempt      int      `json:"attempt"`
	PipelineRuns []string `json:"pipelineRuns"`
	LastReason   string   `json:"lastReason,omitempty"`
	// Verdict is what the cluster said of the build (versionVerifyBuilds).
	Verdict *buildcheck.Verdict `json:"verdict,omitempty"`
	// Delivery is what the forge said of the last run that exited 0
	// (versionDeliveryFromForge).
	Delivery *renovate.DeliveryVerdict `json:"delivery,omitempty"`
	// Writer is the writer of the pull request (nudgeapi.WriterDirect or
	// WriterRenovate; empty before versionDirectWriter, when it was Renovate) and
	// WriterReason why it is that one.
	Writer       string `json:"writer,omitempty"`
	WriterReason string `json:"writerReason,omitempty"`
	// Choice is the writer choice the cluster gave, Write what the direct writer
	// did (versionDirectWriter).
	Choice *nudgeapi.WriterChoice     `json:"choice,omitempty"`
	Write  *nudgewriteapi.WriteResult `json:"write,omitempty"`
}

// Workflow runs one nudge to its end.
func Workflow(ctx workflow.Context, req nudgeapi.Request) (nudgeapi.Result, error) {
	req = req.WithDefaults()
	log := workflow.GetLogger(ctx)
	wfID := workflow.GetInfo(ctx).WorkflowExecution.ID
	st := &State{}
	setPhase := func(p string) {
		st.Phase = p
		if err := workflow.UpsertTypedSearchAttributes(ctx, nudgeapi.SearchAttributes(req, p)...); err != nil {
			log.Warn("upserting search attributes", "error", err)
		}
	}
	setPhase(nudgeapi.PhaseLaunching)
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (State, error) { return *st, nil }); err != nil {
		return nudgeapi.Result{}, fmt.Errorf("registering the state query: %w", err)
	}

	// Run ends arrive at least once, possibly before we wait for them, possibly for
	// an earlier attempt: keep them by run name.
	finished := map[string]renovate.RunStatus{}
	ch := workflow.GetSignalChannel(ctx, nudgeapi.SignalRunFinished)
	workflow.Go(ctx, func(gctx workflow.Context) {
		for {
			var s renovate.RunStatus
			ch.Receive(gctx, &s)
			if s.Done {
				finished[s.Name] = s
			}
		}
	})

	activityOpts := workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 2 * time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			MaximumAttempts: 10, NonRetryableErrorTypes: renovate.NonRetryableErrorTypes,
		},
	}
	withSummary := func(s string) workflow.Context {
		o := activityOpts
		o.Summary = s
		return workflow.WithActivityOptions(ctx, o)
	}
	record := func(attempt int, reason, message, run string, warning bool) {
		metrics.Count(workflow.GetMetricsHandler(ctx), metrics.Nudges, 1, "mode", req.Mode, "outcome", reason)
		o := renovate.Outcome{Namespace: req.Namespace, Component: req.Nudged, WorkflowID: wfID, Attempt: attempt,
			Warning: warning, Reason: reason, Message: message, PipelineRun: run}
		if err := workflow.ExecuteActivity(withSummary(reason+" event on "+req.Nudged), renovate.OutcomeActivity, o).Get(ctx, nil); err != nil {
			log.Error("recording the nudge outcome as an event", "reason", reason, "error", err)
		}
	}
	result := func(phase, reason string) nudgeapi.Result {
		st.LastReason = reason
		setPhase(phase)
		res := nudgeapi.Result{Phase: phase, Digest: req.Digest, Attempts: st.Attempt, PipelineRuns: st.PipelineRuns, Reason: reason,
			Writer: st.Writer, WriterReason: st.WriterReason}
		if st.Write != nil {
			res.PullRequest = st.Write.URL
		}
		return res
	}

	if workflow.GetVersion(ctx, versionVerifyBuilds, workflow.DefaultVersion, 1) >= 1 {
		var verifier *buildcheck.Activities // nil: its method value names the activity
		var v buildcheck.Verdict
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, buildcheck.Options("verify that the cluster built "+req.Nudging+"@"+req.Digest)),
			verifier.VerifyBuild, VerifyRequest(req, wfID)).Get(ctx, &v); err != nil {
			return result(nudgeapi.PhaseFailed, err.Error()), err
		}
		st.Verdict = &v
		if !v.Verified {
			// The Warning Event (BuildNotVerified) is on the nudged Component already.
			metrics.Count(workflow.GetMetricsHandler(ctx), metrics.Nudges, 1, "mode", req.Mode, "outcome", nudgeapi.PhaseBuildNotVerified)
			log.Warn("build refused: nothing launched", "digest", req.Digest, "reason", v.Reason)
			return result(nudgeapi.PhaseBuildNotVerified, fmt.Sprintf("not nudging %s to %s@%s: %s", req.Nudged, req.Nudging, req.Digest, v.Reason)), nil
		}
	}

	if workflow.GetVersion(ctx, versionDirectWriter, workflow.DefaultVersion, 1) == 1 && req.Mode != string(konfluxv1alpha1.ModeValidated) {
		d := direct{ctx: ctx, req: req, wfID: wfID, st: st, record: record, result: result}
		if res, done, err := d.write(); done {
			return res, err
		}
	}

	backoff := req.RetryBackoff
	// returned counts runs a ChangeGroup held and then did not take (it ended in
	// between): the build was never tried, so they do not use up an attempt, up to
	// MaxAttempts of them (a bound, should groups keep holding and ending).
	returned := 0
	for attempt := 1; ; attempt++ {
		name := renovate.RunName(wfID, attempt)
		st.Attempt = attempt
		st.PipelineRuns = append(st.PipelineRuns, name)
		setPhase(nudgeapi.PhaseLaunching)
		launch := renovate.LaunchRequest{
			Namespace: req.Namespace, Name: name, WorkflowID: wfID, Attempt: attempt,
			Nudging: req.Nudging, Nudged: req.Nudged, Build: req.Build,
			DistributionRepos: req.DistributionRepos, HandedBackBy: req.HandedBackBy,
		}
		if err := workflow.ExecuteActivity(withSummary("launch Renovate run "+name), renovate.LaunchActivity, launch).Get(ctx, nil); err != nil {
			if newer, ok := supersededAtLaunch(err); ok && workflow.GetVersion(ctx, versionSupersededEnds, workflow.DefaultVersion, 1) == 1 {
				msg := fmt.Sprintf("not nudging %s to %s@%s: a newer build of %s already nudges it (Renovate run %s)",
					req.Nudged, req.Nudging, req.Digest, req.Nudging, newer)
				record(attempt, ReasonSuperseded, msg, name, false)
				return result(nudgeapi.PhaseSuperseded, msg), nil
			}
			msg := fmt.Sprintf("could not launch the Renovate run for %s@%s: %s", req.Nudging, req.Digest, causeOf(err))
			record(attempt, ReasonFailed, msg, name, true)
			res := result(nudgeapi.PhaseFailed, msg)
			return res, temporal.NewNonRetryableApplicationError(msg, ReasonFailed, err)
		}
		setPhase(nudgeapi.PhaseRunning)
		status, err := waitRun(ctx, req, name, finished, withSummary)
		if err != nil {
			return result(nudgeapi.PhaseFailed, err.Error()), err
		}
		delivered := ""
		if askForge(status) && workflow.GetVersion(ctx, versionDeliveryFromForge, workflow.DefaultVersion, 1) == 1 {
			status, delivered = deliveryOf(ctx, req, name, status, st, withSummary)
		}
		metrics.Count(workflow.GetMetricsHandler(ctx), metrics.RenovateRuns, 1, "outcome", runOutcome(status), "reason", runReason(status))
		if status.HeldBy != "" && workflow.GetVersion(ctx, versionHeldRunEnds, workflow.DefaultVersion, 1) == 1 {
			msg := fmt.Sprintf("Renovate run %s was held by ChangeGroup %s, which collects %s@%s for %s into its pull request",
				name, status.HeldBy, req.Nudging, req.Digest, req.Nudged)
			record(attempt, reasonHeld, msg, name, false)
			return result(nudgeapi.PhaseHeldByChangeGroup, msg), nil
		}
		if status.SupersededBy != "" && workflow.GetVersion(ctx, versionSupersededEnds, workflow.DefaultVersion, 1) == 1 {
			msg := fmt.Sprintf("Renovate run %s was stopped for run %s of a newer build of %s, which nudges %s instead of %s@%s",
				name, status.SupersededBy, req.Nudging, req.Nudged, req.Nudging, req.Digest)
			record(attempt, ReasonSuperseded, msg, name, false)
			return result(nudgeapi.PhaseSuperseded, msg), nil
		}
		if status.Cancelled && workflow.GetVersion(ctx, versionCancelledRunEnds, workflow.DefaultVersion, 1) == 1 {
			// A person's stop is an answer, not a failure: retrying would undo it.
			// Nothing waits on this build: the next build of the nudging component
			// nudges again (a Warning, so the undelivered digest is seen).
			msg := fmt.Sprintf("Renovate run %s was cancelled (%s: %s) before it nudged %s to %s@%s; a cancelled run is not retried: the next build of %s nudges %s again",
				name, status.Reason, status.Message, req.Nudged, req.Nudging, req.Digest, req.Nudging, req.Nudged)
			record(attempt, ReasonCancelled, msg, name, true)
			return result(nudgeapi.PhaseCancelled, msg), nil
		}
		if status.Succeeded {
			msg := fmt.Sprintf("Renovate run %s nudged %s to %s@%s (attempt %d)", name, req.Nudged, req.Nudging, req.Digest, attempt)
			if delivered != "" {
				msg += ": " + delivered
			}
			record(attempt, ReasonSucceeded, msg, name, false)
			return result(nudgeapi.PhaseSucceeded, msg), nil
		}
		if status.Reason == renovate.ReasonHeldReturned && returned < req.MaxAttempts &&
			workflow.GetVersion(ctx, versionHeldRunEnds, workflow.DefaultVersion, 1) == 1 {
			returned++
		}
		if attempt >= req.MaxAttempts+returned {
			msg := fmt.Sprintf("Renovate run %s failed (%s: %s); giving up after %d attempts", name, status.Reason, status.Message, attempt)
			record(attempt, ReasonFailed, msg, name, true)
			res := result(nudgeapi.PhaseFailed, msg)
			return res, temporal.NewNonRetryableApplicationError(msg, ReasonFailed, nil)
		}
		msg := fmt.Sprintf("Renovate run %s failed (%s: %s); retrying in %s (attempt %d of %d)", name, status.Reason, status.Message, backoff, attempt, req.MaxAttempts)
		record(attempt, ReasonRunFailed, msg, name, true)
		st.LastReason = msg
		setPhase(nudgeapi.PhaseRetryWaiting)
		if err := workflow.NewTimerWithOptions(ctx, backoff, workflow.TimerOptions{Summary: fmt.Sprintf("backoff before attempt %d", attempt+1)}).Get(ctx, nil); err != nil {
			return result(nudgeapi.PhaseFailed, err.Error()), err
		}
		backoff *= 2
	}
}

// VerifyRequest is the verification of req's build, whose refusal goes on the
// nudged Component (where every outcome of a nudge is recorded).
func VerifyRequest(req nudgeapi.Request, workflowID string) buildcheck.Request {
	return buildcheck.Request{Namespace: req.Namespace, Component: req.Nudging, Build: req.Build,
		HandedBackBy: req.HandedBackBy, Workflow: workflowID, Subject: buildcheck.Subject{Kind: buildcheck.KindComponent, Name: req.Nudged}}
}

// waitRun waits for the bridge's signal; every PollInterval without one it asks
// Kubernetes directly.
func waitRun(ctx workflow.Context, req nudgeapi.Request, name string, finished map[string]renovate.RunStatus, withSummary func(string) workflow.Context) (renovate.RunStatus, error) {
	for {
		ok, err := workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{
			Timeout:      req.PollInterval,
			TimerOptions: workflow.TimerOptions{Summary: "wait for Renovate run " + name},
		}, func() bool { _, ok := finished[name]; return ok })
		if err != nil {
			return renovate.RunStatus{}, err
		}
		if ok {
			return finished[name], nil
		}
		var s renovate.RunStatus
		if err := workflow.ExecuteActivity(withSummary("poll Renovate run "+name), renovate.StatusActivity, req.Namespace, name).Get(ctx, &s); err != nil {
			workflow.GetLogger(ctx).Warn("polling the Renovate run", "pipelineRun", name, "error", err)
			continue
		}
		if s.Done {
			return s, nil
		}
	}
}

// askForge: the run ended with Renovate's exit code 0 and nobody stopped it, so
// whether it delivered is the forge's to say.
func askForge(s renovate.RunStatus) bool {
	return s.Done && s.ExitedZero && !s.Gone && !s.Cancelled && s.HeldBy == "" && s.SupersededBy == ""
}

// deliveryOf asks the forge whether the run delivered the build and returns the
// run's status as the forge decides it, and, when delivered, where (for the
// Event). Delivered, the run succeeded whatever its log said; not delivered, it
// failed, with the step's reason when its log named one (registry-auth-failed and
// the like: what to fix) and NotDelivered otherwise. A forge that cannot be asked
// fails the run (DeliveryUnknown): it is tried again, and a new run of the same
// build changes nothing that landed.
func deliveryOf(ctx workflow.Context, req nudgeapi.Request, name string, s renovate.RunStatus, st *State,
	withSummary func(string) workflow.Context) (renovate.RunStatus, string) {
	var v renovate.DeliveryVerdict
	ask := renovate.DeliveryRequest{Namespace: req.Namespace, Nudging: req.Nudging, Nudged: req.Nudged, ImageURL: req.ImageURL,
		Digest: req.Digest, NudgeFiles: req.NudgeFiles, DistributionRepos: req.DistributionRepos, PipelineRun: name, LogSaysOK: s.Succeeded}
	if err := workflow.ExecuteActivity(withSummary("ask the forge whether run "+name+" delivered "+req.Digest), renovate.DeliveryActivity, ask).Get(ctx, &v); err != nil {
		s.Succeeded, s.Reason = false, renovate.ReasonDeliveryUnknown
		s.Message = fmt.Sprintf("Renovate exited 0, but the forge could not be asked whether %s reached %s: %s", req.Digest, req.Nudged, causeOf(err))
		return s, ""
	}
	st.Delivery = &v
	if v.Delivered {
		return s.WithDelivery(v), v.Message
	}
	return s.WithDelivery(v), ""
}

// runReasons are the metric's reason of each failed RunStatus.Reason nudgeflow
// knows; any other (Tekton's reasons of a failed task) is ReasonRenovateFailed.
var runReasons = map[string]string{
	renovate.ReasonRegistryAuthFailed:   metrics.ReasonRegistryAuth,
	renovate.ReasonImageLookupFailed:    metrics.ReasonImageLookup,
	renovate.ReasonRepositoryNotUpdated: metrics.ReasonRepositoryNotUpdated,
	renovate.ReasonPRNotOpened:          metrics.ReasonPRNotOpened,
	renovate.ReasonNotDelivered:         metrics.ReasonNotDelivered,
	renovate.ReasonDeliveryUnknown:      metrics.ReasonDeliveryUnknown,
	renovate.ReasonHeldReturned:         metrics.ReasonHeldReturned,
	"PipelineRunTimeout":                metrics.ReasonTimeout,
	"TaskRunTimeout":                    metrics.ReasonTimeout,
}

// runReason is the bounded reason label of an ended run's metric: why it failed,
// or "delivered"; gone, held and cancelled runs are their outcome's word.
func runReason(s renovate.RunStatus) string {
	switch o := runOutcome(s); {
	case o == metrics.RunSucceeded:
		return metrics.ReasonDelivered
	case o != metrics.RunFailed:
		return o
	case s.SupersededBy != "":
		return metrics.ReasonSuperseded
	}
	if r, ok := runReasons[s.Reason]; ok {
		return r
	}
	return metrics.ReasonRenovateFailed
}

// runOutcome is the outcome label of an ended run.
func runOutcome(s renovate.RunStatus) string {
	switch {
	case s.Succeeded:
		return metrics.RunSucceeded
	case s.Gone:
		return metrics.RunGone
	case s.HeldBy != "":
		return metrics.RunHeld
	case s.Cancelled:
		return metrics.RunCancelled
	}
	return metrics.RunFailed
}

// supersededAtLaunch reports whether LaunchRenovate refused because a newer build
// already nudges the target, and that build's run.
func supersededAtLaunch(err error) (string, bool) {
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != renovate.ErrorTypeSuperseded {
		return "", false
	}
	var newer string
	if appErr.HasDetails() {
		_ = appErr.Details(&newer)
	}
	return newer, true
}

// causeOf is what a person needs of a failed activity: the application error's own
// message, without the SDK's "activity error (type: ..., scheduledEventID: ...)"
// wrapping (the Event on the Component shows it).
func causeOf(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Message() != "" {
		return appErr.Message()
	}
	return err.Error()
}
