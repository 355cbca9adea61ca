package changegrouppr

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/pac"
	"github.com/nudgeflow/nudgeflow/internal/prbody"
)

// open pushes the held tree and opens the draft PR (a normal one where the
// repository allows no drafts), then reads it. A branch that exists with someone
// else's commit and no open PR is not the group's to take, unless the request
// overwrites it.
func (a *Activities) open(ctx context.Context, f forge.Forge, req changegroupprapi.SyncRequest, base forge.Commit, baseBranch string) (state, desired, error) {
	log := activity.GetLogger(ctx)
	head, exists, err := f.BranchHead(ctx, req.Branch)
	if err != nil {
		return state{}, desired{}, err
	}
	if exists && !isBot(f, head) && !req.Overwrite {
		return state{}, desired{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"branch %s exists with commit %s by someone else and has no open PR", req.Branch, short(head.SHA)), "BranchNotOurs", nil)
	}
	d, err := a.desiredTree(ctx, f, req, base)
	if err != nil {
		return state{}, desired{}, err
	}
	d.baseBranch = baseBranch
	if _, err := pushIfNeeded(ctx, f, req, d, head, exists, true); err != nil {
		return state{}, desired{}, err
	}
	title := fmt.Sprintf("Update %s (ChangeGroup %s)", req.NudgedComponent, req.ChangeGroup)
	pr, err := f.CreatePR(ctx, forge.NewPR{Title: title, Head: req.Branch, Base: baseBranch, Body: renderBody(req, d, true, false, false, false), Draft: true})
	if errors.Is(err, forge.ErrDraftsUnsupported) {
		// The commits and the description still carry the skip marker: CI stays
		// held on a normal PR, and the release is the one unmarked push.
		log.Info("the repository allows no draft PRs; opening a normal one, held by the skip marker", "branch", req.Branch)
		pr, err = f.CreatePR(ctx, forge.NewPR{Title: title, Head: req.Branch, Base: baseBranch, Body: renderBody(req, d, true, false, false, true)})
	}
	if err != nil {
		return state{}, desired{}, err
	}
	log.Info("opened draft pull request", "pr", pr.Number, "branch", req.Branch)
	st, err := a.read(ctx, f, req.Branch, pr.Number)
	if err != nil {
		return state{}, desired{}, err
	}
	return st, d, nil
}

// untickRebase clears a rebase checkbox that can no longer be honoured, so it cannot
// authorise discarding commits pushed after it was ticked.
func untickRebase(ctx context.Context, f forge.Forge, st state) error {
	if !st.body.Rebase {
		return nil
	}
	body := strings.Replace(st.pr.Body, "- [x] "+prbody.RebaseLabel, "- [ ] "+prbody.RebaseLabel, 1)
	body = strings.Replace(body, "- [X] "+prbody.RebaseLabel, "- [ ] "+prbody.RebaseLabel, 1)
	if body == st.pr.Body {
		return nil
	}
	_, err := f.EditPR(ctx, st.pr.Number, &body, nil)
	return err
}

const humanEditMarker = "<!-- nudgeflow:human-edits %s -->"

// explainHumanEdit posts, once per edit (key), why nudgeflow stopped updating the
// PR and how to let it resume.
func explainHumanEdit(ctx context.Context, f forge.Forge, st state, reason, key, baseBranch string) error {
	marker := fmt.Sprintf(humanEditMarker, key)
	text := fmt.Sprintf("nudgeflow stopped updating this pull request: %s.\n\n"+
		"To let nudgeflow update it again, tick **rebase** in the description. nudgeflow then pushes a fresh commit "+
		"on `%s` and re-renders the description: the manual changes are discarded.", reason, baseBranch)
	return ensureComment(ctx, f, st.pr.Number, marker, text)
}

// applyWrites makes the planned writes in order; the final push follows the
// held one.
func applyWrites(ctx context.Context, f forge.Forge, req changegroupprapi.SyncRequest, d desired, st state, w writes) error {
	head := st.head
	if w.heldPush {
		var err error
		if head, err = pushIfNeeded(ctx, f, req, d, head, st.hasHead, true); err != nil {
			return err
		}
	}
	switch {
	case w.markReady:
		if err := f.MarkReady(ctx, st.pr, w.body); err != nil {
			return err
		}
		activity.GetLogger(ctx).Info("marked ready for review", "pr", st.pr.Number)
	case w.body != nil:
		if _, err := f.EditPR(ctx, st.pr.Number, w.body, nil); err != nil {
			return err
		}
	}
	if w.finalPush {
		if _, err := pushIfNeeded(ctx, f, req, d, head, st.hasHead, false); err != nil {
			return err
		}
	}
	return nil
}

// pushIfNeeded pushes unless the head is nudgeflow's, holds the desired tree and its
// marker matches hold.
func pushIfNeeded(ctx context.Context, f forge.Forge, req changegroupprapi.SyncRequest, d desired, head forge.Commit, exists, hold bool) (forge.Commit, error) {
	if exists && isBot(f, head) {
		same, err := holds(ctx, f, head, d)
		if err != nil {
			return head, err
		}
		if same && pac.HasSkipMarker(head.Message) == hold {
			return head, nil
		}
		if same {
			d.tree = head.Tree // only the message changes: no new tree to write
		}
	}
	return push(ctx, f, req, d, hold, exists, head.SHA)
}

// push makes one fresh commit of the desired tree on the base head and force-moves
// the branch to it, unless the branch no longer is at expected (the head this sync
// read): a commit pushed meanwhile is never overwritten.
func push(ctx context.Context, f forge.Forge, req changegroupprapi.SyncRequest, d desired, hold, exists bool, expected string) (forge.Commit, error) {
	c, err := f.Push(ctx, forge.Push{Branch: req.Branch, Parent: d.base, Base: d.baseBranch, Files: d.changes, Tree: d.tree,
		Message: commitMessage(req, hold), Exists: exists, ExpectedHead: expected})
	if errors.Is(err, forge.ErrHeadMoved) {
		return forge.Commit{}, errHeadMoved
	}
	if err != nil {
		return forge.Commit{}, err
	}
	activity.GetLogger(ctx).Info("pushed", "branch", req.Branch, "commit", c.SHA, "held", hold, "files", len(d.changes))
	return c, nil
}

// errHeadMoved: the branch changed between this sync's read and its push.
var errHeadMoved = forge.ErrHeadMoved
