package changegroup

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
)

func (r *run) registerHandlers() error {
	if err := workflow.SetQueryHandlerWithOptions(r.ctx, changegroupapi.QueryState, func() (*State, error) { return r.s, nil },
		workflow.QueryHandlerOptions{Description: "The ChangeGroup's whole state: components, PR, phase"}); err != nil {
		return err
	}
	updates := []struct {
		name, desc string
		handler    any
		validator  any
	}{
		{changegroupapi.UpdateReleaseNow, "Stop waiting: release CI with the components that are ready",
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
		{changegroupapi.UpdateCancel, "Cancel the group: close its pull request and stop",
			func(ctx workflow.Context, req changegroupapi.CancelRequest) (string, error) {
				if err := r.awaitState(ctx, r.notFinal); err != nil {
					return "", err
				}
				r.cancelReason = cancelReason(req.Reason, "cancelled by a person")
				r.markUrgent()
				return "cancelling: " + r.cancelReason, nil
			},
			func(ctx workflow.Context, req changegroupapi.CancelRequest) error { return r.validate(r.notFinal) }},
		{changegroupapi.UpdateDropComponent, "Stop waiting for one component",
			func(ctx workflow.Context, req changegroupapi.DropRequest) (string, error) {
				if err := r.awaitState(ctx, func() error { return r.checkDrop(req) }); err != nil {
					return "", err
				}
				r.s.drop(workflow.Now(ctx), req.Component, r.nothingLost)
				r.markUrgent()
				ready, total := r.s.counts()
				return fmt.Sprintf("dropped %s; %d of %d ready", req.Component, ready, total), nil
			},
			func(ctx workflow.Context, req changegroupapi.DropRequest) error {
				return r.validate(func() error { return r.checkDrop(req) })
			}},
		{changegroupapi.UpdateRebase, "Discard manual changes on the pull request and let nudgeflow update it again",
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

func (r *run) checkDrop(req changegroupapi.DropRequest) error {
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
		var b changegroupapi.ComponentBuilt
		for r.built.ReceiveAsync(&b) {
			progressed = true
			if r.verifyBuilds {
				if !r.s.queueUnverified(b) {
					log.Info("build not collected", "component", b.Component, "digest", b.Digest, "reason", "duplicate")
				}
			} else {
				r.applyBuild(b)
			}
			b = changegroupapi.ComponentBuilt{}
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
		var ev changegroupapi.PREvent
		for r.prEvent.ReceiveAsync(&ev) {
			progressed = true
			r.applyPREvent(ev)
			ev = changegroupapi.PREvent{}
		}
		var cr changegroupapi.CancelRequest
		for r.cancel.ReceiveAsync(&cr) {
			progressed = true
			r.cancelReason = cancelReason(cr.Reason, "cancelled")
			cr = changegroupapi.CancelRequest{}
		}
		if !progressed {
			return
		}
	}
}

// applyBuild collects (or hands back) a build the group may keep.
func (r *run) applyBuild(b changegroupapi.ComponentBuilt) {
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

func (r *run) applyPREvent(ev changegroupapi.PREvent) {
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
