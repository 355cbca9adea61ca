package changegrouppr

import (
	"context"
	"errors"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/digestref"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/prbody"
)

// changeGroupRef is the ChangeGroup a refused sync records its Event on (nil for a
// request that names none).
func changeGroupRef(req changegroupprapi.SyncRequest) *corev1.ObjectReference {
	if req.ChangeGroup == "" {
		return nil
	}
	return &corev1.ObjectReference{APIVersion: appstudiov1alpha1.GroupVersion.String(), Kind: "ChangeGroup",
		Namespace: req.Namespace, Name: req.ChangeGroup}
}

// SyncPullRequest makes the PR match req, looking before it writes: an unchanged
// request writes nothing, and a retry after a crash converges without a second
// CI-triggering event.
func (a *Activities) SyncPullRequest(ctx context.Context, req changegroupprapi.SyncRequest) (changegroupprapi.Observed, error) {
	if err := validate(req); err != nil {
		return changegroupprapi.Observed{}, err
	}
	f, secrets, err := a.connect(ctx, req.Repo, changeGroupRef(req))
	if err != nil {
		return changegroupprapi.Observed{}, redact(err, secrets)
	}
	o, err := a.sync(ctx, f, req)
	if err != nil {
		return changegroupprapi.Observed{}, redact(err, secrets)
	}
	o.Writes = f.Writes()
	return o, nil
}

func validate(req changegroupprapi.SyncRequest) error {
	if req.Branch == "" || strings.ContainsAny(req.Branch, " ~^:?*[\\") || strings.Contains(req.Branch, "..") {
		return invalid("branch %q is not a valid branch name", req.Branch)
	}
	if req.Mode != changegroupprapi.ModeHold && req.Mode != changegroupprapi.ModeRelease {
		return invalid("mode %q is neither %s nor %s", req.Mode, changegroupprapi.ModeHold, changegroupprapi.ModeRelease)
	}
	for _, r := range req.Rows {
		if r.State == prbody.StateReady && r.New != "" {
			if !digestref.ValidImage(r.Image) || !digestref.ValidDigest(r.New) {
				return invalid("row %q: image %q or digest %q is not valid", r.Component, r.Image, r.New)
			}
		}
	}
	if _, err := digestref.NewFileMatcher(req.FileMatch); err != nil {
		return invalid("%v", err)
	}
	return nil
}

func (a *Activities) sync(ctx context.Context, f forge.Forge, req changegroupprapi.SyncRequest) (changegroupprapi.Observed, error) {
	o, err := a.syncOnce(ctx, f, req)
	if errors.Is(err, errHeadMoved) {
		// A person pushed while nudgeflow was updating: look again; the human-edit
		// rules decide (the new commit is theirs), and nothing of theirs is lost.
		activity.GetLogger(ctx).Info("the branch moved during the sync; reading it again", "branch", req.Branch)
		req.Overwrite = false
		o, err = a.syncOnce(ctx, f, req)
	}
	if err != nil && req.Known.Number != 0 {
		// A person may merge or close the PR while nudgeflow writes (lift the draft,
		// then merge at once): the write is refused (Forgejo: the base moved under
		// the push) and the PR's state is the answer, not a failure.
		if st, rerr := a.read(ctx, f, req.Branch, req.Known.Number); rerr == nil && st.found && !st.pr.Open {
			activity.GetLogger(ctx).Info("the PR was closed or merged during the sync", "pr", st.pr.Number, "merged", st.pr.Merged, "error", err)
			return observed(f, st, req.Known, req.Mode == changegroupprapi.ModeHold), nil
		}
	}
	return o, err
}

// syncOnce is one sync, read in one direction: it reads the PR and the base it
// must target, opens the PR on a first sync, decides from what it read what the
// open PR needs (planSync, planWrites: no forge call) and does it (syncexec.go).
func (a *Activities) syncOnce(ctx context.Context, f forge.Forge, req changegroupprapi.SyncRequest) (changegroupprapi.Observed, error) {
	st, err := a.read(ctx, f, req.Branch, req.Known.Number)
	if err != nil {
		return changegroupprapi.Observed{}, err
	}
	hold := req.Mode == changegroupprapi.ModeHold
	if st.found && !st.pr.Open {
		return observed(f, st, req.Known, hold), nil // closed or merged: never write
	}
	baseBranch, base, err := target(ctx, f, req, st)
	if err != nil {
		return changegroupprapi.Observed{}, err
	}

	if !st.found {
		// A first sync, or a retry after a crash between the push and the PR.
		var d desired
		if st, d, err = a.open(ctx, f, req, base, baseBranch); err != nil {
			return changegroupprapi.Observed{}, err
		}
		// A person may have pushed in the moments since the PR opened: then the
		// human-edit handling below explains the pause, as on any later sync.
		if reason, _ := humanEdit(f, st); hold && reason == "" {
			o := observed(f, st, req.Known, hold)
			o.References = references(req, d)
			return o, nil
		}
	}

	p := planSync(f, req, st)
	if p.staleRebase {
		// The rebase was asked for on an older head: what was pushed since is kept.
		if err := untickRebase(ctx, f, st); err != nil {
			return changegroupprapi.Observed{}, err
		}
		req.Overwrite = false
	}
	switch {
	case p.humanEdit != "":
		if err := explainHumanEdit(ctx, f, st, p.humanEdit, p.humanEditKey, baseBranch); err != nil {
			return changegroupprapi.Observed{}, err
		}
		activity.GetLogger(ctx).Info("human edits: not updating", "pr", st.pr.Number, "reason", p.humanEdit)
		return observed(f, st, req.Known, hold), nil
	case p.releasedByHuman:
		// A person released the hold; the workflow decides what follows.
		return observed(f, st, req.Known, hold), nil
	}
	return a.update(ctx, f, req, st, base, baseBranch)
}

// target is the base branch the group's PR targets, and that branch's head. A PR
// found for the branch is written to only when it is the group's: its head is the
// group's branch and its base the group's base branch.
func target(ctx context.Context, f forge.Forge, req changegroupprapi.SyncRequest, st state) (string, forge.Commit, error) {
	if st.found && st.pr.Head != req.Branch {
		return "", forge.Commit{}, invalid("PR #%d has head %q, not %q", st.pr.Number, st.pr.Head, req.Branch)
	}
	baseBranch := req.Repo.BaseBranch
	if baseBranch == "" {
		var err error
		if baseBranch, err = f.DefaultBranch(ctx); err != nil {
			return "", forge.Commit{}, err
		}
	}
	if st.found && st.pr.Base != baseBranch {
		// Retargeted by a person, or another group's PR: the group's digests are for
		// its own base, so it never writes to (or releases) a PR aimed elsewhere.
		return "", forge.Commit{}, invalid("PR #%d targets %q, not the group's base branch %q", st.pr.Number, st.pr.Base, baseBranch)
	}
	base, ok, err := f.BranchHead(ctx, baseBranch)
	if err != nil {
		return "", forge.Commit{}, err
	}
	if !ok {
		return "", forge.Commit{}, temporal.NewNonRetryableApplicationError("base branch "+baseBranch+" does not exist", "BaseBranchMissing", nil)
	}
	return baseBranch, base, nil
}

// update brings the open PR to the desired tree and description (planWrites
// decides the writes, applyWrites makes them), then reads it again.
func (a *Activities) update(ctx context.Context, f forge.Forge, req changegroupprapi.SyncRequest, st state, base forge.Commit, baseBranch string) (changegroupprapi.Observed, error) {
	hold := req.Mode == changegroupprapi.ModeHold
	d, err := a.desiredTree(ctx, f, req, base)
	if err != nil {
		return changegroupprapi.Observed{}, err
	}
	d.baseBranch = baseBranch
	rebase := st.body.Rebase && !req.Overwrite
	// Text around the managed section (a person's note, a bot's report) is kept.
	body := prbody.Compose(st.pr.Body, renderBody(req, d, hold, rebase, st.body.ReleaseNow, noDraft(st)))
	if err := applyWrites(ctx, f, req, d, st, planWrites(f, st, body, hold)); err != nil {
		return changegroupprapi.Observed{}, err
	}
	if st, err = a.read(ctx, f, req.Branch, st.pr.Number); err != nil {
		return changegroupprapi.Observed{}, err
	}
	o := observed(f, st, req.Known, hold)
	o.References = references(req, d)
	return o, nil
}
