package nudgewrite

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/nudgeflow/nudgeflow/activities/changegrouppr"
	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/contracts/nudgewriteapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/prbody"
)

// state is what the forge says before the write, with the shape to write.
type state struct {
	facts
	shape      shape
	body       string
	baseBranch string
	base       forge.Commit
}

// write reads the forge, plans (decide) and writes. A branch that moved between
// the read and the push, or a pull request opened meanwhile (a person, or another
// writer), is read and planned again once: what moved it decides.
func (a *Activities) write(ctx context.Context, f forge.Forge, n nudge, gitAuthor string) (nudgewriteapi.WriteResult, error) {
	res, err := a.writeOnce(ctx, f, n, gitAuthor)
	if errors.Is(err, forge.ErrHeadMoved) {
		activity.GetLogger(ctx).Info("the nudge branch moved during the write; reading it again", "nudged", n.req.Nudged)
		res, err = a.writeOnce(ctx, f, n, gitAuthor)
	}
	if errors.Is(err, forge.ErrHeadMoved) {
		return res, temporal.NewApplicationError("the nudge branch moved twice while nudgeflow wrote it", "HeadMoved")
	}
	return res, err
}

func (a *Activities) writeOnce(ctx context.Context, f forge.Forge, n nudge, gitAuthor string) (nudgewriteapi.WriteResult, error) {
	st, err := a.look(ctx, f, n, gitAuthor)
	if err != nil {
		return nudgewriteapi.WriteResult{}, err
	}
	p := decide(st.facts, st.shape, st.body)
	res := nudgewriteapi.WriteResult{Branch: st.shape.Branch}
	if st.hasPR {
		res.PR, res.URL = st.pr.Number, st.pr.URL
	}
	if st.branch {
		res.Commit = st.head.SHA
	}
	log := activity.GetLogger(ctx)
	if p.outcome != "" {
		res.Outcome, res.Reason = p.outcome, p.reason
		log.Info("nudge not written", "outcome", p.outcome, "reason", p.reason, "branch", st.shape.Branch)
		return res, nil
	}
	res.Outcome = nudgewriteapi.OutcomeUpdated
	if p.push {
		c, err := f.Push(ctx, forge.Push{Branch: st.shape.Branch, Parent: st.base, Base: st.baseBranch, Files: st.changes,
			Message: st.shape.Message, Exists: st.branch, ExpectedHead: st.head.SHA,
			// One ref write where the forge takes a git push (Forgejo, Gitea), with
			// the same compare-and-swap on the head the writer read.
			GitProtocol: true})
		if err != nil {
			return res, err
		}
		res.Commit = c.SHA
		for path := range st.changes {
			res.Files = append(res.Files, path)
		}
		slices.Sort(res.Files)
		log.Info("pushed the nudge", "branch", st.shape.Branch, "commit", c.SHA, "files", len(st.changes))
	} else {
		res.Reason = "the branch already holds this build"
	}
	switch {
	case p.open:
		pr, err := f.CreatePR(ctx, forge.NewPR{Title: st.shape.Title, Head: st.shape.Branch, Base: st.baseBranch, Body: st.body, Labels: st.shape.Labels})
		if err != nil {
			// Another writer (Renovate, a retry of this nudge elsewhere) may have
			// opened it since the read: then the branch is read and planned again.
			if _, open, ferr := f.FindPR(ctx, st.shape.Branch, 0); ferr == nil && open {
				return res, forge.ErrHeadMoved
			}
			return res, err
		}
		res.Outcome, res.PR, res.URL = nudgewriteapi.OutcomeOpened, pr.Number, pr.URL
		log.Info("opened the nudge pull request", "pr", pr.Number, "branch", st.shape.Branch)
		if lb, ok := f.(forge.Labeler); ok && len(st.shape.Labels) > 0 && !sameSet(pr.Labels, st.shape.Labels) {
			// A forge that takes no labels when opening (GitHub) gets them now.
			if err := lb.AddLabels(ctx, pr.Number, missing(pr.Labels, st.shape.Labels)); err != nil {
				return res, err
			}
		}
		if p.automerge {
			enableAutoMerge(ctx, f, pr)
		}
	case p.edit:
		te, ok := f.(forge.TitleEditor)
		if !ok {
			return res, temporal.NewNonRetryableApplicationError("the forge client cannot edit a pull request's title", nudgewriteapi.ErrorTypeNotNudgeable, nil)
		}
		if _, err := te.EditTitle(ctx, st.pr.Number, st.shape.Title, &st.body); err != nil {
			return res, err
		}
	}
	if p.automerge && !p.open {
		enableAutoMerge(ctx, f, st.pr)
	}
	if lb, ok := f.(forge.Labeler); ok && len(p.labels)+len(p.unlabel) > 0 {
		if err := lb.AddLabels(ctx, st.pr.Number, p.labels); err != nil {
			return res, err
		}
		if err := lb.RemoveLabels(ctx, st.pr.Number, p.unlabel); err != nil {
			return res, err
		}
	}
	return res, nil
}

// enableAutoMerge asks the forge to merge the PR once its checks pass, as
// Renovate's platformAutomerge; a forge without it enables none (Renovate's
// platforms without it do the same). A refusal is logged and the PR stays open,
// as Renovate logs it and goes on.
func enableAutoMerge(ctx context.Context, f forge.Forge, pr forge.PR) {
	log := activity.GetLogger(ctx)
	am, ok := f.(forge.AutoMerger)
	if !ok {
		log.Info("the forge has no auto-merge; the pull request is left to be merged by hand", "pr", pr.Number)
		return
	}
	enabled, err := am.EnableAutoMerge(ctx, pr)
	if err != nil {
		log.Warn("the forge refused its auto-merge; the pull request stays open", "pr", pr.Number, "error", err)
		return
	}
	log.Info("auto-merge", "pr", pr.Number, "enabled", enabled)
}

func missing(have, want []string) []string {
	var out []string
	for _, l := range want {
		if !slices.Contains(have, l) {
			out = append(out, l)
		}
	}
	return out
}

// look reads the base branch, the nudge branch and its open pull request, and
// rewrites the base's files with the build's digest.
func (a *Activities) look(ctx context.Context, f forge.Forge, n nudge, gitAuthor string) (state, error) {
	var st state
	var err error
	st.baseBranch = n.repo.BaseBranch
	if st.baseBranch == "" {
		if st.baseBranch, err = f.DefaultBranch(ctx); err != nil {
			return st, err
		}
	}
	var ok bool
	if st.base, ok, err = f.BranchHead(ctx, st.baseBranch); err != nil {
		return st, err
	}
	if !ok {
		return st, temporal.NewNonRetryableApplicationError("base branch "+st.baseBranch+" does not exist", nudgewriteapi.ErrorTypeNotNudgeable, nil)
	}
	req := n.req
	dist, err := renovate.DistributionReposOf(ctx, a.Launch, n.launch)
	if err != nil {
		return st, err
	}
	simple := renovate.SimpleBranch(n.nudging)
	cfg := renovate.GenerateConfig(renovate.ConfigInput{
		Platform: n.platform, GitAuthor: gitAuthor, BaseBranch: st.baseBranch,
		Nudging: req.Nudging, Nudged: req.Nudged, BuiltRepo: n.image, DistributionRepos: dist,
		RepoAtSHA: renovate.SourceLinkOf(ctx, a.Launch, n.launch, n.nudging), SimpleBranch: simple,
		FileMatch: n.fileMatch, Options: n.opts, BuiltAt: req.BuiltAt, Run: runName(req.WorkflowID),
	})
	st.shape = shapeOf(cfg, req.Nudging, req.Nudged, simple, req.Digest)
	if !req.BuiltAt.IsZero() {
		st.builtAt = renovate.BuiltAtStamp(req.BuiltAt)
	}
	st.reattempt = n.platform == forge.ProviderGitHub

	rows := []changegroupprapi.Row{{Component: req.Nudging, Image: n.image, New: req.Digest, State: prbody.StateReady}}
	rw, err := a.PR.RewriteFound(ctx, f, req.Namespace, rows, n.fileMatch, st.base)
	if err != nil {
		return st, err
	}
	tree := rw.Tree
	st.changes, st.found = rw.Changes, len(rw.Found[req.Nudging]) > 0
	from := previousDigest(rw.Before, append([]string{n.image}, dist...), req.Digest)

	if st.head, st.branch, err = f.BranchHead(ctx, st.shape.Branch); err != nil {
		return st, err
	}
	if st.branch {
		st.headOurs = changegrouppr.IsBot(f, st.head)
		if st.headOurs && len(st.changes) > 0 {
			if st.headHolds, err = changegrouppr.TreeHolds(ctx, f, st.head, tree); err != nil {
				return st, err
			}
		}
	}
	if st.pr, st.hasPR, err = f.FindPR(ctx, st.shape.Branch, 0); err != nil {
		return st, err
	}
	if st.hasPR && st.pr.Head != st.shape.Branch {
		return st, fmt.Errorf("the forge answered PR #%d of branch %s for branch %s", st.pr.Number, st.pr.Head, st.shape.Branch)
	}
	prev := ""
	if st.hasPR {
		prev = st.pr.Body
	}
	st.body = bodyOf(st.shape, n.image, from, req.Digest, st.baseBranch, prev)
	return st, nil
}
