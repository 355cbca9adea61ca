package changegrouppr

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/pac"
	"github.com/nudgeflow/nudgeflow/internal/prbody"
)

// state is what the forge says about the PR and its branch.
type state struct {
	pr      forge.PR
	found   bool
	head    forge.Commit
	hasHead bool
	body    prbody.Parsed
}

func (a *Activities) read(ctx context.Context, f forge.Forge, branch string, number int) (state, error) {
	var st state
	var err error
	st.pr, st.found, err = f.FindPR(ctx, branch, number)
	if err != nil || !st.found {
		return st, err
	}
	st.body = prbody.Parse(st.pr.Body)
	if st.pr.Open {
		st.head, st.hasHead, err = f.BranchHead(ctx, st.pr.Head)
	} else if st.pr.HeadSHA != "" {
		st.head, err = f.Commit(ctx, st.pr.HeadSHA)
		st.hasHead = err == nil
	}
	return st, err
}

// noDraft: the PR was opened as a normal PR because the repository allows no drafts.
func noDraft(st state) bool { return st.body.State != nil && st.body.State.NoDraft }

// isDraft reports whether the PR is held as a draft would be: a real draft, or a
// normal PR in a repository without drafts (held by the skip marker alone).
func isDraft(st state) bool { return st.pr.Draft || noDraft(st) }

// isBot: the bot authored c, and committed it, or the forge recorded its API
// identity as committer (GitLab writes every commit as the token's user, with its
// commit email, whatever author nudgeflow names).
func isBot(f forge.Forge, c forge.Commit) bool {
	bot := f.Bot().Email
	if bot == "" || !strings.EqualFold(c.Author.Email, bot) {
		return false
	}
	if strings.EqualFold(c.Committer.Email, bot) {
		return true
	}
	bc, ok := f.(forge.BotCommitter)
	return ok && bc.BotCommitter().Email != "" && strings.EqualFold(c.Committer.Email, bc.BotCommitter().Email)
}

// humanEdit returns why automated updates must stop, and a key that identifies this
// particular edit (so one comment is posted per edit).
func humanEdit(f forge.Forge, st state) (reason, key string) {
	if st.hasHead && !isBot(f, st.head) {
		who := st.head.Author.Email
		if isBotSig(f, st.head.Author) {
			who = st.head.Committer.Email
		}
		return fmt.Sprintf("commit %s on the branch was made by %s, not by nudgeflow", short(st.head.SHA), who), "commit-" + st.head.SHA
	}
	if st.body.HumanEdited {
		sum := sha256.Sum256([]byte(st.body.Section))
		return "the section of the description nudgeflow manages was edited", "body-" + hex.EncodeToString(sum[:8])
	}
	return "", ""
}

func isBotSig(f forge.Forge, s forge.Signature) bool {
	return strings.EqualFold(s.Email, f.Bot().Email)
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// observed fills what a read says; held tells whether the group is holding CI.
func observed(f forge.Forge, st state, known changegroupprapi.PRRef, held bool) changegroupprapi.Observed {
	o := changegroupprapi.Observed{PR: known}
	if !st.found {
		return o
	}
	o.PR.Number, o.PR.URL, o.PR.NodeID = st.pr.Number, st.pr.URL, st.pr.NodeID
	switch {
	case st.pr.Merged:
		o.State = changegroupprapi.PRMerged
	case st.pr.Open:
		o.State = changegroupprapi.PROpen
	default:
		o.State = changegroupprapi.PRClosed
	}
	o.Draft = st.pr.Draft
	if st.hasHead {
		o.HeadSHA = st.head.SHA
		o.HeadHasSkipMarker = pac.HasSkipMarker(st.head.Message)
		if isBot(f, st.head) {
			o.PR.LastPushedSHA = st.head.SHA
		}
	}
	o.RebaseRequested, o.ReleaseRequested = st.body.Rebase, st.body.ReleaseNow
	if st.pr.Open {
		o.HumanEditReason, _ = humanEdit(f, st)
		o.HumanEdits = o.HumanEditReason != ""
		o.MarkedReadyByHuman = held && (!isDraft(st) || !st.body.SkipMarker)
	}
	return o
}

// references reports, per row, where its image is referenced (nil: not looked up).
func references(req changegroupprapi.SyncRequest, d desired) []changegroupprapi.RowReferences {
	if d.refs == nil {
		return nil
	}
	out := []changegroupprapi.RowReferences{}
	for _, r := range req.Rows {
		if r.State != prbody.StateDropped {
			out = append(out, changegroupprapi.RowReferences{Component: r.Component, Repositories: d.refs[r.Component]})
		}
	}
	return out
}

// ObservePullRequest reads the PR without writing.
func (a *Activities) ObservePullRequest(ctx context.Context, req changegroupprapi.ObserveRequest) (changegroupprapi.Observed, error) {
	f, secrets, err := a.connect(ctx, req.Repo, nil)
	if err != nil {
		return changegroupprapi.Observed{}, redact(err, secrets)
	}
	st, err := a.read(ctx, f, req.Branch, req.Known.Number)
	if err != nil {
		return changegroupprapi.Observed{}, redact(err, secrets)
	}
	held := st.body.State != nil && st.body.State.Mode == string(changegroupprapi.ModeHold)
	o := observed(f, st, req.Known, held)
	o.Writes = f.Writes()
	return o, nil
}
