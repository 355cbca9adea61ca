package nudge

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/contracts/nudgewriteapi"
)

// Event reasons of the direct writer (versionDirectWriter). The Renovate path's
// reasons (NudgeSucceeded, NudgeRunFailed, ...) name Renovate runs in their
// messages; these name the direct writer.
const (
	// ReasonNudgedDirectly: the direct writer opened or updated the pull request,
	// or found every reference already at the digest.
	ReasonNudgedDirectly = "NudgedDirectly"
	// reasonWriterFallback: the direct writer left the nudge to Renovate (the
	// tenant's configuration asks for what it does not do, or it could not write).
	reasonWriterFallback = "WriterFallback"
	// reasonBranchEdited: a person committed on the nudge branch; nothing was
	// written over it.
	reasonBranchEdited = "NudgeBranchEdited"
)

// writeAttempt is the Event attempt of the direct write: Renovate's runs count
// from 1, so a write and a run never share an Event name.
const writeAttempt = 0

// direct is the direct-writer step of one Nudge.
type direct struct {
	ctx    workflow.Context
	req    nudgeapi.Request
	wfID   string
	st     *State
	record func(attempt int, reason, message, run string, warning bool)
	result func(phase, reason string) nudgeapi.Result
}

// write chooses the writer and, when it is the direct writer, writes. done false
// leaves the nudge to the Renovate launch loop (the choice is Renovate, or the
// direct writer fell back to it), the state saying why.
//
// Decisions where the writer's outcome is not a delivery:
//   - PersonCommitted ends the nudge BranchEdited with a Warning: Renovate refuses
//     an edited branch too (its run would end NotDelivered three times), and a
//     person's commit is an answer, as a person's cancel is (PhaseCancelled).
//   - A write that fails (a forge outage past the retries, a refusal) under the
//     auto setting falls back to Renovate with a Warning: the build stays
//     nudgeflow's to deliver ("nothing lost"), and Renovate reports what it meets
//     in turn. Under the direct setting the tenant asked for no Renovate run: the
//     nudge ends Failed with a Warning Event that names the cause.
func (d direct) write() (nudgeapi.Result, bool, error) {
	ctx, req := d.ctx, d.req
	log := workflow.GetLogger(ctx)
	choice, err := d.choose()
	if err != nil {
		// Failing open keeps the behaviour before the direct writer.
		log.Warn("could not choose the writer; launching Renovate as before", "error", err)
		d.writer(nudgeapi.WriterRenovate, "the writer could not be chosen ("+causeOf(err)+"): Renovate, as before the direct writer")
		return nudgeapi.Result{}, false, nil
	}
	d.st.Choice = &choice
	if choice.Writer != nudgeapi.WriterDirect {
		d.writer(nudgeapi.WriterRenovate, choice.Reason)
		return nudgeapi.Result{}, false, nil
	}
	d.writer(nudgeapi.WriterDirect, choice.Reason)
	strict := choice.Setting == string(konfluxv1alpha1.WriterDirect)

	var w nudgewriteapi.WriteResult
	wreq := nudgewriteapi.WriteRequest{Namespace: req.Namespace, WorkflowID: d.wfID, Nudging: req.Nudging, Nudged: req.Nudged,
		Build: req.Build, HandedBackBy: req.HandedBackBy}
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, writeOptions("write the nudge of "+req.Nudged+" to "+req.Digest)),
		nudgewriteapi.WriteActivity, wreq).Get(ctx, &w); err != nil {
		if strict {
			msg := fmt.Sprintf("the direct writer could not nudge %s to %s@%s: %s (immediateWriter direct: no Renovate run is launched)",
				req.Nudged, req.Nudging, req.Digest, causeOf(err))
			d.record(writeAttempt, ReasonFailed, msg, "", true)
			return d.result(nudgeapi.PhaseFailed, msg), true, temporal.NewNonRetryableApplicationError(msg, ReasonFailed, err)
		}
		msg := fmt.Sprintf("the direct writer could not nudge %s to %s@%s (%s); launching a Renovate run instead",
			req.Nudged, req.Nudging, req.Digest, causeOf(err))
		d.record(writeAttempt, reasonWriterFallback, msg, "", true)
		d.writer(nudgeapi.WriterRenovate, msg)
		return nudgeapi.Result{}, false, nil
	}
	d.st.Write = &w
	pr := prOf(w)
	switch w.Outcome {
	case nudgewriteapi.OutcomeOpened, nudgewriteapi.OutcomeUpdated, nudgewriteapi.OutcomeAlreadyCurrent:
		what := map[string]string{
			nudgewriteapi.OutcomeOpened:         "opened " + pr,
			nudgewriteapi.OutcomeUpdated:        "updated " + pr,
			nudgewriteapi.OutcomeAlreadyCurrent: "found every reference already at the digest (" + pr + ")",
		}[w.Outcome]
		msg := fmt.Sprintf("the direct writer nudged %s to %s@%s: it %s", req.Nudged, req.Nudging, req.Digest, what)
		if w.Reason != "" {
			msg += "; " + w.Reason
		}
		d.record(writeAttempt, ReasonNudgedDirectly, msg, "", false)
		return d.result(nudgeapi.PhaseSucceeded, msg), true, nil
	case nudgewriteapi.OutcomeSuperseded:
		msg := fmt.Sprintf("the direct writer did not nudge %s to %s@%s: %s already holds a newer build of %s",
			req.Nudged, req.Nudging, req.Digest, pr, req.Nudging)
		if w.Reason != "" {
			msg += " (" + w.Reason + ")"
		}
		d.record(writeAttempt, ReasonSuperseded, msg, "", false)
		return d.result(nudgeapi.PhaseSuperseded, msg), true, nil
	case nudgewriteapi.OutcomePersonCommitted:
		msg := fmt.Sprintf("the direct writer did not nudge %s to %s@%s: a person committed on %s, and nudgeflow does not write over a person's commit; "+
			"merge or close the pull request, or delete the branch, and the next build of %s nudges %s again",
			req.Nudged, req.Nudging, req.Digest, pr, req.Nudging, req.Nudged)
		if w.Reason != "" {
			msg += " (" + w.Reason + ")"
		}
		d.record(writeAttempt, reasonBranchEdited, msg, "", true)
		return d.result(nudgeapi.PhaseBranchEdited, msg), true, nil
	case nudgewriteapi.OutcomeFallback:
		if strict {
			msg := fmt.Sprintf("the direct writer cannot nudge %s to %s@%s: %s (immediateWriter direct: no Renovate run is launched; "+
				"set immediateWriter auto or renovate for this edge to have Renovate write it)", req.Nudged, req.Nudging, req.Digest, w.Reason)
			d.record(writeAttempt, ReasonFailed, msg, "", true)
			return d.result(nudgeapi.PhaseFailed, msg), true, temporal.NewNonRetryableApplicationError(msg, ReasonFailed, nil)
		}
		msg := fmt.Sprintf("the direct writer leaves the nudge of %s to %s@%s to Renovate: %s", req.Nudged, req.Nudging, req.Digest, w.Reason)
		d.record(writeAttempt, reasonWriterFallback, msg, "", false)
		d.writer(nudgeapi.WriterRenovate, msg)
		return nudgeapi.Result{}, false, nil
	}
	// An outcome this workflow does not know (a newer writer): nothing says it
	// delivered, so Renovate nudges, as for a fallback.
	msg := fmt.Sprintf("the direct writer answered outcome %q, which this Nudge does not know; launching a Renovate run for %s to %s@%s",
		w.Outcome, req.Nudged, req.Nudging, req.Digest)
	d.record(writeAttempt, reasonWriterFallback, msg, "", true)
	d.writer(nudgeapi.WriterRenovate, msg)
	return nudgeapi.Result{}, false, nil
}

// choose asks the cluster which writer writes the nudge.
func (d direct) choose() (nudgeapi.WriterChoice, error) {
	var c nudgeapi.WriterChoice
	in := nudgeapi.WriterChoiceRequest{Namespace: d.req.Namespace, Nudging: d.req.Nudging, Nudged: d.req.Nudged, HandedBackBy: d.req.HandedBackBy}
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(d.ctx, chooseOptions("choose the writer of "+nudgeapi.Edge(d.req.Nudging, d.req.Nudged))),
		nudgeapi.ChooseWriterActivity, in).Get(d.ctx, &c)
	return c, err
}

// writer records the writer in the state and the NudgeWriter search attribute.
func (d direct) writer(writer, reason string) {
	d.st.Writer, d.st.WriterReason = writer, reason
	if err := workflow.UpsertTypedSearchAttributes(d.ctx, nudgeapi.WriterSearchAttribute(writer)); err != nil {
		workflow.GetLogger(d.ctx).Warn("upserting the writer search attribute", "error", err)
	}
}

// chooseOptions: a GET and a LIST on the API server, retried a while before the
// nudge falls back to Renovate.
func chooseOptions(summary string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
			MaximumAttempts: 5, NonRetryableErrorTypes: []string{nudgeapi.ErrorTypeInvalidChoice}},
	}
}

// writeOptions: the forge's calls, retried with backoff for a few minutes (a
// blip); what a retry never fixes (nudgewriteapi.NonRetryableErrorTypes) ends
// the write at once.
func writeOptions(summary string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 2 * time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			MaximumAttempts: 6, NonRetryableErrorTypes: nudgewriteapi.NonRetryableErrorTypes},
	}
}

// prOf names the pull request a write result points at, for Events.
func prOf(w nudgewriteapi.WriteResult) string {
	switch {
	case w.URL != "":
		return fmt.Sprintf("pull request %s (branch %s)", w.URL, w.Branch)
	case w.PR != 0:
		return fmt.Sprintf("pull request #%d (branch %s)", w.PR, w.Branch)
	case w.Branch != "":
		return "branch " + w.Branch
	}
	return "the nudge branch"
}
