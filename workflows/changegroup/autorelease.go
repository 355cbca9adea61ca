package changegroup

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
)

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
	if end := s.LastBuildAt.Add(a.Window); a.Window > 0 && !s.LastBuildAt.IsZero() && now.Before(end) && a.policy() != autoReleaseAll {
		out = append(out, wakeUp{end, "batch window: release if no new build arrives"})
	}
	return out
}

func (a *AutoRelease) policy() string {
	if a.Policy == "" {
		return autoReleaseWindow
	}
	return a.Policy
}

func (a *AutoRelease) windowPassed(s *State, now time.Time) bool {
	return a.Window > 0 && !s.LastBuildAt.IsZero() && !now.Before(s.LastBuildAt.Add(a.Window))
}

// windowReleases says whether a quiet window releases with ready of total.
func (a *AutoRelease) windowReleases(ready, total int) bool {
	switch a.policy() {
	case autoReleaseAll:
		return false
	case autoReleaseQuorum:
		q := a.Quorum
		if q <= 0 || q > total {
			q = total
		}
		return ready >= q && ready > 0
	}
	return ready > 0
}
