package changegroup

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	changegroupcr "github.com/nudgeflow/nudgeflow/contracts/changegroupcrapi"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// CIWatch is what the group knows about the pipeline on its released head: the
// CIStarted condition, and the warning (one PR comment, an Event per reason) it
// gave when none started.
type CIWatch struct {
	// SHA is the released head nudgeflow pushed last (a push after the release moves
	// it while no pipeline has started).
	SHA        string    `json:"sha"`
	ReleasedAt time.Time `json:"releasedAt"`
	// Deadline is ReleasedAt plus the grace period: nothing reported by then is
	// NoPipelineStarted.
	Deadline time.Time `json:"deadline"`
	// Reason is the condition's reason (appstudiov1alpha1.CIReason*).
	Reason string `json:"reason"`
	// Names are the reports that count as a started pipeline; Detail is Pipelines
	// as Code's text for a wait for approval; Author the PR's author.
	Names  []string `json:"names,omitempty"`
	Detail string   `json:"detail,omitempty"`
	Author string   `json:"author,omitempty"`
	// Commented: the PR comment telling a maintainer what to do is posted (once per
	// group); CommentRefused is the forge's non-retryable refusal of it (not asked
	// again). Evented is the reason the last Event was recorded for.
	Commented      bool   `json:"commented,omitempty"`
	CommentRefused string `json:"commentRefused,omitempty"`
	Evented        string `json:"evented,omitempty"`
}

// warning reports whether the reason is one the group warns about.
func ciWarning(reason string) bool {
	return reason == appstudiov1alpha1.CIReasonAwaitingApproval || reason == appstudiov1alpha1.CIReasonNoPipelineStarted
}

// pending reports whether the watch has work left: no pipeline yet, or the Event
// saying it started after a warning is not recorded yet.
func (w *CIWatch) pending() bool {
	if w == nil {
		return false
	}
	if w.Reason != appstudiov1alpha1.CIReasonStarted {
		return true
	}
	return w.Evented != "" && w.Evented != appstudiov1alpha1.CIReasonStarted
}

// condition is the CIStarted condition.
func (w *CIWatch) condition() metav1Condition {
	cond := metav1Condition{Type: appstudiov1alpha1.ConditionCIStarted, Reason: w.Reason}
	sha := shortSHA(w.SHA)
	switch w.Reason {
	case appstudiov1alpha1.CIReasonStarted:
		cond.Status = "True"
		cond.Message = fmt.Sprintf("a pipeline reported on %s: %s", sha, strings.Join(w.Names, ", "))
	case appstudiov1alpha1.CIReasonAwaitingApproval:
		cond.Status = "False"
		cond.Message = fmt.Sprintf("Pipelines as Code waits for approval to run CI on %s (%s): %s", sha, w.Detail, w.remedy())
	case appstudiov1alpha1.CIReasonNoPipelineStarted:
		cond.Status = "False"
		cond.Message = fmt.Sprintf("no pipeline reported on %s within %s of the release (Pipelines as Code ignores an untrusted bot's pull request without a word): %s",
			sha, w.Deadline.Sub(w.ReleasedAt), w.remedy())
	default:
		cond.Status = "Unknown"
		cond.Message = fmt.Sprintf("CI was released on %s; waiting until %s for a pipeline to start",
			sha, w.Deadline.UTC().Format(time.RFC3339))
	}
	return cond
}

// remedy is what a maintainer must do; the builds are in the PR either way.
func (w *CIWatch) remedy() string {
	who := "nudgeflow's bot"
	if w.Author != "" {
		who = w.Author
	}
	return fmt.Sprintf("a maintainer must comment /ok-to-test on the pull request, or make %s a trusted author "+
		"(a collaborator, an organisation member or in the OWNERS file); the builds are delivered in the pull request", who)
}

func shortSHA(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// watchCI starts looking for the pipeline the release should have started (the
// versionCIStart shape; asked once, at the release).
func (r *run) watchCI(now time.Time, obs changegroupprapi.Observed) {
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
	var obs changegroupprapi.CIObserved
	err := workflow.ExecuteActivity(r.ciCtx("look for the pipeline the release should have started"), changegroupprapi.CIActivity,
		changegroupprapi.CIRequest{Repo: s.Repo, Known: s.PR, SHA: w.SHA}).Get(r.ctx, &obs)
	if err != nil {
		workflow.GetLogger(r.ctx).Warn("CI reports not read; trying again at the next check", "sha", w.SHA, "error", err)
		return
	}
	if obs.State != changegroupprapi.PROpen {
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
		var res changegroupprapi.CommentResult
		err := workflow.ExecuteActivity(r.ciCtx("comment on the PR: CI did not start"), changegroupprapi.CommentActivity,
			changegroupprapi.CommentRequest{Repo: s.Repo, Known: s.PR, Key: ciCommentKey, Body: r.ciComment()}).Get(r.ctx, &res)
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
