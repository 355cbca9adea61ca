package prgroup

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	acts "github.com/nudgeflow/nudgeflow/contracts/prgroupapi"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/searchattr"
)

// GetVersion change IDs; each is called only on the path it changes.
const (
	// changeClosedByPersonFirst: a target PR closed by a person, then every
	// originating PR ended, ends as Closed (was Ended, "nothing to propose").
	changeClosedByPersonFirst = "closed-by-person-before-origins-ended"
	// changeNotFoundIsUnreadable: an originating PR the forge answered for before
	// and now answers "not found" for is unreadable (noted, read again at the next
	// poll), no longer counted as closed.
	changeNotFoundIsUnreadable = "origin-not-found-after-seen-is-unreadable"
	// changeVerifyBuilds: a PR build is verified when its signal arrives
	// (activities/buildcheck; whoever reaches Temporal can signal any digest), once;
	// a refused one is proposed nowhere. A run started (not continued) with a state
	// keeps none of it: its PR builds are verified like signals. Asked at the start
	// of every run.
	changeVerifyBuilds = "verify-builds"
)

// maxHistoryEvents continues as new before the history grows large.
const maxHistoryEvents = 5000

// SearchAttributes are the attributes a run carries.
func SearchAttributes(namespace, group, target, phase string) []temporal.SearchAttributeUpdate {
	return []temporal.SearchAttributeUpdate{
		searchattr.KubeNamespace.ValueSet(namespace),
		searchattr.PRGroup.ValueSet(group),
		searchattr.NudgedComponent.ValueSet(target),
		searchattr.Phase.ValueSet(phase),
	}
}

type run struct {
	ctx      workflow.Context
	in       Input
	set      Settings
	st       *State
	id       string
	builds   workflow.ReceiveChannel
	events   workflow.ReceiveChannel
	closeReq *string
	phase    string
	// wake makes the main loop run once more (an update changed the state).
	wake bool
	// verify: builds are verified when they enter (changeVerifyBuilds).
	verify bool
}

// Workflow runs one PR group's proposal to one nudged component.
func Workflow(ctx workflow.Context, in Input) (*State, error) {
	r := &run{ctx: ctx, in: in, set: in.Settings.withDefaults(), st: in.State,
		id:     workflow.GetInfo(ctx).WorkflowExecution.ID,
		builds: workflow.GetSignalChannel(ctx, SignalPRBuild), events: workflow.GetSignalChannel(ctx, SignalOriginEvent)}
	r.verify = workflow.GetVersion(ctx, changeVerifyBuilds, workflow.DefaultVersion, 1) >= 1
	var carried []PRBuild
	if r.verify && r.st != nil && workflow.GetInfo(ctx).ContinuedExecutionRunID == "" {
		// Only continue-as-new carries a state, and the server says which runs are
		// continued: this one was started with a state someone chose. Its PR builds
		// count as received, to be verified; the rest is read from the forge again.
		carried = r.st.carriedBuilds()
		workflow.GetLogger(ctx).Warn("started with a state: ignored, its builds are verified like signals", "builds", len(carried))
		r.st = nil
	}
	if r.st == nil {
		r.st = &State{Phase: PhaseProposing}
	}

	r.phase = r.st.Phase
	if r.st.CloseRequested != "" {
		// A close accepted by the previous run just before it continued as new.
		reason := r.st.CloseRequested
		r.closeReq = &reason
	}
	if err := r.handlers(); err != nil {
		return nil, err
	}
	for _, b := range carried {
		r.takeBuild(b)
	}
	observe := true
	for {
		if r.drainBuilds() {
			observe = true
		}
		for r.events.ReceiveAsync(nil) {
			observe = true
		}
		if observe {
			r.observeOrigins()
			observe = false
		}
		if r.closeReq != nil {
			return r.end(PhaseClosed, r.closeTarget("closed by the close override: "+*r.closeReq))
		}
		done, err := r.step()
		if err != nil || done {
			return r.st, err
		}
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() || workflow.GetInfo(ctx).GetCurrentHistoryLength() > maxHistoryEvents {
			return nil, r.continueAsNew()
		}
		ok, err := workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{Timeout: r.set.PollInterval,
			TimerOptions: workflow.TimerOptions{Summary: "poll the originating PRs"}}, func() bool {
			return r.builds.Len() > 0 || r.events.Len() > 0 || r.closeReq != nil || r.wake
		})
		if err != nil {
			return r.st, err
		}
		r.wake = false
		observe = !ok // the poll: read the forge again
	}
}

// continueAsNew drains every signal channel and carries what arrived during the
// last step (builds in the state, a close override as CloseRequested; origin events
// need no carry: the next run reads the originating PRs first). It adds no command
// but the verification of builds that arrived last (changeVerifyBuilds).
func (r *run) continueAsNew() error {
	r.drainBuilds()
	for r.events.ReceiveAsync(nil) {
	}
	if r.closeReq != nil {
		r.st.CloseRequested = *r.closeReq
	}
	next := r.in
	next.State = r.st
	return workflow.NewContinueAsNewError(r.ctx, WorkflowName, next)
}

func (r *run) handlers() error {
	if err := workflow.SetQueryHandler(r.ctx, QueryState, func() (State, error) { return *r.st, nil }); err != nil {
		return fmt.Errorf("registering the state query: %w", err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(r.ctx, UpdateClose, func(ctx workflow.Context, reason string) (string, error) {
		if reason == "" {
			reason = "no reason given"
		}
		r.closeReq = &reason
		return "closing the target PR of PR group " + r.in.Group, nil
	}, workflow.UpdateHandlerOptions{Description: "close the target PR with a comment and stop",
		Validator: func(ctx workflow.Context, reason string) error {
			if r.closeReq != nil {
				return errors.New("already closing")
			}
			return nil
		}}); err != nil {
		return fmt.Errorf("registering %s: %w", UpdateClose, err)
	}
	return workflow.SetUpdateHandlerWithOptions(r.ctx, UpdateReleaseNow, func(ctx workflow.Context) (string, error) {
		r.st.Released = true
		r.st.note("The draft was lifted by the release-now override while originating pull requests were still open or their push builds missing.")
		r.wake = true
		return "lifting the draft of " + r.st.PR.URL, nil
	}, workflow.UpdateHandlerOptions{Description: "lift the draft now, whatever the originating PRs' states",
		Validator: func(ctx workflow.Context) error {
			if r.st.PR.Number == 0 {
				return errors.New("no target PR is open yet")
			}
			if r.st.Released || r.phase == PhaseReady {
				return errors.New("the target PR is already ready for review")
			}
			return nil
		}})
}

func (r *run) drainBuilds() bool {
	changed := false
	for {
		var b PRBuild
		if !r.builds.ReceiveAsync(&b) {
			return changed
		}
		if r.takeBuild(b) {
			changed = true
		}
	}
}

// takeBuild adds a PR build the cluster built (verified once, when it is new);
// it reports whether the state changed.
func (r *run) takeBuild(b PRBuild) bool {
	if !r.verify || !r.st.isNew(b) {
		return r.st.addBuild(b)
	}
	if v := r.st.verdictOf(b); v != nil {
		return v.Verified && r.st.addBuild(b)
	}
	v := r.verifyBuild(b)
	r.st.recordVerdict(b, v)
	if !v.Verified {
		workflow.GetLogger(r.ctx).Warn("PR build refused: the cluster did not build it", "component", b.Component, "digest", b.Digest, "reason", v.Reason)
		return false
	}
	return r.st.addBuild(b)
}

// verifyBuild asks the cluster whether it built b, until it answers (the group
// waits rather than propose a build unverified, or drop it). The refusal's Event
// goes on the target Component.
func (r *run) verifyBuild(b PRBuild) buildcheck.Verdict {
	var verifier *buildcheck.Activities // nil: its method value names the activity
	req := buildcheck.Request{Namespace: r.in.Namespace, ClaimedNamespace: b.Namespace, Component: b.Component,
		Build:    konflux.CompleteLegacy(b.Build, nil), // a PR build signalled with its image only
		Workflow: r.id, Subject: buildcheck.Subject{Kind: buildcheck.KindComponent, Name: r.in.Target}}
	actx := workflow.WithActivityOptions(r.ctx, buildcheck.Options(fmt.Sprintf("verify that the cluster built %s@%s", b.Component, b.Digest)))
	var v buildcheck.Verdict
	if err := workflow.ExecuteActivity(actx, verifier.VerifyBuild, req).Get(r.ctx, &v); err != nil {
		// The activity retries until the cluster answers: only a request it rejects
		// ends here. Nothing proves the build.
		return buildcheck.Verdict{Reason: "not verified: " + err.Error()}
	}
	return v
}

func (r *run) setPhase(p string) {
	r.phase, r.st.Phase = p, p
	if err := workflow.UpsertTypedSearchAttributes(r.ctx, SearchAttributes(r.in.Namespace, r.in.Group, r.in.Target, p)...); err != nil {
		workflow.GetLogger(r.ctx).Warn("upserting search attributes", "error", err)
	}
}

func (r *run) end(phase, reason string) (*State, error) {
	r.st.Reason = reason
	r.setPhase(phase)
	workflow.GetLogger(r.ctx).Info("PR group ended", "phase", phase, "reason", reason)
	return r.st, nil
}

func (r *run) act(summary string) workflow.Context {
	return workflow.WithActivityOptions(r.ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 2 * time.Second, BackoffCoefficient: 2,
			MaximumInterval: time.Minute, MaximumAttempts: 10},
	})
}

// observeOrigins reads every originating PR; the forge's answer is the truth.
func (r *run) observeOrigins() {
	if len(r.st.Origins) == 0 {
		return
	}
	req := acts.ObserveRequest{Namespace: r.in.Namespace}
	for _, o := range r.st.Origins {
		req.Origins = append(req.Origins, acts.OriginRef{RepoURL: o.RepoURL, Number: o.Number})
	}
	var obs []acts.OriginObservation
	if err := workflow.ExecuteActivity(r.act("read the originating PRs"), acts.ObserveOriginsActivity, req).Get(r.ctx, &obs); err != nil {
		workflow.GetLogger(r.ctx).Warn("reading the originating PRs; the next poll tries again", "error", err)
		return
	}
	now := workflow.Now(r.ctx).UTC()
	for _, ob := range obs {
		o := r.st.origin(OriginKey(ob.RepoURL, ob.Number))
		if o == nil {
			continue
		}
		switch {
		case ob.Error != "":
			r.st.note(fmt.Sprintf("%s could not be read: %s", o.Key(), ob.Error))
			continue
		case !ob.Found && o.State != originUnknown &&
			workflow.GetVersion(r.ctx, changeNotFoundIsUnreadable, workflow.DefaultVersion, 1) >= 1:
			// Seen before: a wrong forge, a token that lost access or a renamed
			// repository answers 404 too; never read as "closed".
			r.st.note(fmt.Sprintf("%s could not be read: the forge answered not found for a pull request it showed before; "+
				"nudgeflow keeps its last state (%s) and reads it again at the next poll", o.Key(), o.State))
			continue
		case !ob.Found:
			r.st.note(fmt.Sprintf("%s does not exist (any more): counted as closed", o.Key()))
			o.State = originClosed
			continue
		}
		o.URL, o.Title, o.HeadSHA = ob.URL, ob.Title, ob.HeadSHA
		switch {
		case ob.Merged:
			if o.State != originMerged {
				o.MergedSeenAt = now
			}
			o.State, o.MergeCommitSHA = originMerged, ob.MergeCommitSHA
		case ob.Open:
			o.State = originOpen
		default:
			o.State = originClosed
		}
	}
}

// findPushBuilds replaces merged origins' PR builds by their push builds.
func (r *run) findPushBuilds(p Plan) {
	for _, w := range p.WaitingPush {
		o := r.st.origin(w.Origin)
		req := acts.FindPushBuildRequest{Namespace: r.in.Namespace, Component: w.Component, CommitSHA: o.MergeCommitSHA, After: o.MergedSeenAt}
		var b acts.PushBuild
		if err := workflow.ExecuteActivity(r.act("find the push build of "+w.Component), acts.FindPushBuildActivity, req).Get(r.ctx, &b); err != nil {
			workflow.GetLogger(r.ctx).Warn("looking for a push build", "component", w.Component, "error", err)
			continue
		}
		if b.Found {
			r.st.addPush(Entry{Component: w.Component, Origin: w.Origin, From: fromPush, Build: b.Build})
			continue
		}
		if workflow.Now(r.ctx).Sub(o.MergedSeenAt) > r.set.PushBuildWait {
			r.st.note(fmt.Sprintf("%s was merged but no succeeded push build of %s for its merge commit %s appeared within %s: "+
				"the draft stays until it does (or use the release-now override)", o.Key(), w.Component, short(o.MergeCommitSHA), r.set.PushBuildWait))
		}
	}
}

func short(s string) string {
	if len(s) > 7 {
		return s[:7]
	}
	return s
}

func (r *run) originsFor(p Plan) []acts.Origin {
	var out []acts.Origin
	for _, o := range r.st.Origins {
		out = append(out, acts.Origin{Key: o.Key(), URL: o.URL, Title: o.Title, State: o.State})
	}
	return out
}

// closeTarget closes the open target PR with a comment (and comments on a PR merged
// out of order); it returns the reason.
func (r *run) closeTarget(reason string) string {
	if r.st.PR.Number > 0 {
		req := acts.CloseRequest{Namespace: r.in.Namespace, Target: r.in.Target, Known: acts.PRRef(r.st.PR), Marker: "closed",
			Comment: "nudgeflow closed this pull request: " + reason + ".", Close: true}
		if err := workflow.ExecuteActivity(r.act("close the target PR"), acts.CloseActivity, req).Get(r.ctx, nil); err != nil {
			workflow.GetLogger(r.ctx).Error("closing the target PR", "error", err)
			return reason + " (closing the PR failed: " + err.Error() + ")"
		}
	}
	for _, early := range r.st.MergedEarly {
		req := acts.CloseRequest{Namespace: r.in.Namespace, Target: r.in.Target, Known: acts.PRRef(early), Marker: "abandoned",
			Comment: "Warning: this pull request was merged before its originating pull requests, and they were then " + reason +
				". The base branch now references images built from pull requests that were never merged: revert this change."}
		if err := workflow.ExecuteActivity(r.act("warn on the PR merged out of order"), acts.CloseActivity, req).Get(r.ctx, nil); err != nil {
			workflow.GetLogger(r.ctx).Error("commenting on the PR merged out of order", "error", err)
		}
	}
	return reason
}

// step converges the target PR once; done ends the workflow.
func (r *run) step() (bool, error) {
	p := r.st.plan()
	if len(p.WaitingPush) > 0 {
		r.findPushBuilds(p)
		p = r.st.plan()
	}
	if p.Close {
		var closed []string
		for _, o := range r.st.Origins {
			closed = append(closed, o.Key())
		}
		reason := "every originating pull request (" + strings.Join(closed, ", ") + ") was closed without merging"
		if r.st.PR.Number == 0 && len(r.st.MergedEarly) == 0 {
			_, err := r.end(phaseEnded, "nothing to propose: "+reason)
			return true, err
		}
		_, err := r.end(PhaseClosed, r.closeTarget(reason))
		return true, err
	}
	if len(p.applied()) == 0 {
		r.setPhase(PhaseProposing)
		return false, nil
	}
	if p.Done && r.st.PR.Number == 0 && len(r.st.MergedEarly) == 0 && r.phase == PhaseClosed &&
		workflow.GetVersion(r.ctx, changeClosedByPersonFirst, workflow.DefaultVersion, 1) >= 1 {
		// A person closed the target PR and then every originating PR ended: that
		// closing, not "nothing to propose", is why the run ends.
		_, err := r.end(PhaseClosed, "the target PR was closed by a person")
		return true, err
	}
	if p.Done && r.st.PR.Number == 0 && len(r.st.MergedEarly) == 0 {
		// A run started for builds whose PRs are already merged (a resync after the
		// group ended): the push builds nudge through the push path.
		_, err := r.end(phaseEnded, "nothing to propose: every originating pull request is already merged or closed")
		return true, err
	}
	if r.st.PR.Number == 0 && r.phase == PhaseClosed {
		// The target PR was closed by a person: wait for the originating PRs to end.
		if p.Done {
			_, err := r.end(PhaseClosed, "the target PR was closed by a person")
			return true, err
		}
		return false, nil
	}
	req := acts.SyncRequest{Namespace: r.in.Namespace, Group: r.in.Group, Target: r.in.Target, Branch: branch(r.in.Group, r.in.Target),
		Origins: r.originsFor(p), Draft: p.Draft, Notes: r.st.Notes, FileMatch: r.set.FileMatch, FollowUp: len(r.st.MergedEarly) > 0,
		WorkflowID: r.id, Known: acts.PRRef(r.st.PR)}
	for _, row := range p.Rows {
		req.Rows = append(req.Rows, acts.Row(row))
	}
	var res acts.SyncResult
	summary := "update the target PR"
	if r.st.PR.Number == 0 {
		summary = "open the target PR"
	}
	if err := workflow.ExecuteActivity(r.act(summary), acts.SyncActivity, req).Get(r.ctx, &res); err != nil {
		var ae *temporal.ApplicationError
		if errors.As(err, &ae) && ae.NonRetryable() {
			// Say why in the state; the next event or poll tries again.
			r.st.note("updating the target PR failed: " + ae.Error())
		}
		workflow.GetLogger(r.ctx).Error("syncing the target PR", "error", err)
		return false, nil
	}
	if res.NoChanges {
		if p.Done {
			_, err := r.end(phaseEnded, "the base branch already references every digest: nothing to propose")
			return true, err
		}
		r.setPhase(PhaseProposing)
		return false, nil
	}
	if res.HumanEdits != "" {
		r.st.note("nudgeflow stopped pushing: " + res.HumanEdits)
	}
	r.st.PR = PRRef(res.PR)
	switch res.State {
	case acts.PRMerged:
		if p.Draft {
			// Merged out of order: warn, and propose the merged builds later.
			early := r.st.PR
			r.st.MergedEarly = append(r.st.MergedEarly, early)
			r.st.PR = PRRef{}
			req := acts.CloseRequest{Namespace: r.in.Namespace, Target: r.in.Target, Known: acts.PRRef(early), Marker: "merged-early",
				Comment: "Warning: this pull request was merged before its originating pull requests. The base branch now references images " +
					"built from unmerged pull requests; nudgeflow opens a follow-up pull request with the merged builds' digests once they merge."}
			if err := workflow.ExecuteActivity(r.act("warn on the PR merged out of order"), acts.CloseActivity, req).Get(r.ctx, nil); err != nil {
				workflow.GetLogger(r.ctx).Error("commenting on the PR merged out of order", "error", err)
			}
			r.setPhase(PhaseDraft)
			return false, nil
		}
		_, err := r.end(PhaseMerged, "the target PR was merged")
		return true, err
	case acts.PRClosed:
		if p.Done {
			_, err := r.end(PhaseClosed, "the target PR was closed by a person")
			return true, err
		}
		// Closed by a person while the group goes on: not reopened nor re-proposed;
		// the workflow stays so a resent build does not open a new PR.
		r.st.note("the target PR was closed by a person: nudgeflow does not propose this group again")
		r.setPhase(PhaseClosed)
		r.st.PR = PRRef{}
		return false, nil
	}
	switch {
	case res.Draft:
		if len(p.WaitingPush) > 0 && !slices.ContainsFunc(r.st.Origins, func(o Origin) bool { return o.State == originOpen || o.State == originUnknown }) {
			r.setPhase(PhaseWaiting)
		} else {
			r.setPhase(PhaseDraft)
		}
	default:
		r.setPhase(PhaseReady)
	}
	return false, nil
}
