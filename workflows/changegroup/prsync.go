package changegroup

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
)

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

func (r *run) mode() changegroupprapi.Mode {
	if r.s.Released || r.s.ReleaseRequested || r.s.allReady() {
		return changegroupprapi.ModeRelease
	}
	return changegroupprapi.ModeHold
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
	req := changegroupprapi.SyncRequest{
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
	if mode == changegroupprapi.ModeRelease {
		summary = "release CI: lift draft and push the final commit"
	}
	var obs changegroupprapi.Observed
	err := workflow.ExecuteActivity(r.syncCtx(summary), changegroupprapi.SyncActivity, req).Get(r.ctx, &obs)
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
			case c == nil || obs.State != changegroupprapi.PROpen:
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
	var obs changegroupprapi.Observed
	err := workflow.ExecuteActivity(r.observeCtx("read the pull request's state"), changegroupprapi.ObserveActivity,
		changegroupprapi.ObserveRequest{Repo: r.s.Repo, Branch: r.branch(), Known: r.s.PR}).Get(r.ctx, &obs)
	if err != nil {
		r.forgeFailed(err)
		return
	}
	r.applyObserved(obs, "")
}

// applyObserved folds what the forge says into the state. synced is the mode of a
// successful sync, or "" for a plain observation.
func (r *run) applyObserved(obs changegroupprapi.Observed, synced changegroupprapi.Mode) {
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
	case changegroupprapi.PRMerged:
		s.finish(now, appstudiov1alpha1.PhaseCompleted, "PRMerged", "the pull request was merged")
		return
	case changegroupprapi.PRClosed:
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
	if synced == changegroupprapi.ModeRelease && !s.Released {
		ready, _ := s.counts()
		r.count(metrics.CIBuildsSaved, ready-1)
		s.Released = true
		s.Phase, s.ReadyTime = appstudiov1alpha1.PhaseReady, now
		s.StatusStale = true
		r.watchCI(now, obs)
	} else if synced == changegroupprapi.ModeRelease && s.CI != nil && s.CI.Reason != appstudiov1alpha1.CIReasonStarted &&
		obs.HeadSHA != "" && obs.HeadSHA != s.CI.SHA {
		// A push after the release (a rebuild): its head is the one CI runs for now.
		s.CI.SHA = obs.HeadSHA
		s.StatusStale = true
	}
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
