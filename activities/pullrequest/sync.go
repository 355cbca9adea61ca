package pullrequest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/digestref"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/pac"
	"github.com/nudgeflow/nudgeflow/internal/prbody"
	"github.com/nudgeflow/nudgeflow/internal/releases"
)

const humanEditMarker = "<!-- nudgeflow:human-edits %s -->"

// changeGroupRef is the ChangeGroup a refused sync records its Event on (nil for a
// request that names none).
func changeGroupRef(req SyncRequest) *corev1.ObjectReference {
	if req.ChangeGroup == "" {
		return nil
	}
	return &corev1.ObjectReference{APIVersion: appstudiov1alpha1.GroupVersion.String(), Kind: "ChangeGroup",
		Namespace: req.Namespace, Name: req.ChangeGroup}
}

// SyncPullRequest makes the PR match req, looking before it writes: an unchanged
// request writes nothing, and a retry after a crash converges without a second
// CI-triggering event.
func (a *Activities) SyncPullRequest(ctx context.Context, req SyncRequest) (Observed, error) {
	if err := validate(req); err != nil {
		return Observed{}, err
	}
	f, secrets, err := a.connect(ctx, req.Repo, changeGroupRef(req))
	if err != nil {
		return Observed{}, redact(err, secrets)
	}
	o, err := a.sync(ctx, f, req)
	if err != nil {
		return Observed{}, redact(err, secrets)
	}
	o.Writes = f.Writes()
	return o, nil
}

func validate(req SyncRequest) error {
	if req.Branch == "" || strings.ContainsAny(req.Branch, " ~^:?*[\\") || strings.Contains(req.Branch, "..") {
		return invalid("branch %q is not a valid branch name", req.Branch)
	}
	if req.Mode != ModeHold && req.Mode != ModeRelease {
		return invalid("mode %q is neither %s nor %s", req.Mode, ModeHold, ModeRelease)
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

// desired is the tree the branch must hold: the base tree with every ready digest.
type desired struct {
	base       forge.Commit
	baseBranch string
	changes    map[string][]byte
	files      map[string]string // path -> blob SHA of the whole desired tree
	// refs are, per row, the repositories referenced in the matched files (the
	// built one and its distribution repositories), in the row's order.
	refs map[string][]string
	// tree, when set, is an existing tree holding exactly the desired files.
	tree string
}

// rowRewriters are the rewriters of one row: its built repository first, then the
// repositories it is released to.
type rowRewriters struct {
	row   Row
	repos []string
	rw    []*digestref.Rewriter
	apply bool // the row is ready: its references are rewritten, not only counted
}

// placeholderDigest counts references of rows that have no new digest yet.
var placeholderDigest = "sha256:" + strings.Repeat("0", 64)

func (a *Activities) desiredTree(ctx context.Context, f forge.Forge, req SyncRequest, base forge.Commit) (desired, error) {
	d := desired{base: base, changes: map[string][]byte{}, files: map[string]string{}, refs: map[string][]string{}}
	m, _ := digestref.NewFileMatcher(req.FileMatch) // validated
	rows, err := a.rewriters(ctx, req)
	if err != nil {
		return d, err
	}
	files, err := f.Files(ctx, base.Tree)
	if err != nil {
		return d, err
	}
	found := map[string]map[string]bool{}
	considered := 0
	for _, file := range files {
		d.files[file.Path] = file.SHA
		if len(rows) == 0 || !m.Match(file.Path) || file.Mode == "120000" || file.Mode == "160000" {
			continue
		}
		if considered++; considered%100 == 0 && activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, file.Path) // a big tree: still working
		}
		text, ok, err := referenceText(ctx, f, file.SHA)
		if err != nil {
			return d, err
		}
		if !ok {
			continue // binary, or holds no digest reference at all
		}
		original := text
		for _, r := range rows {
			for i, rw := range r.rw {
				rewritten, n := rw.Rewrite(text)
				if n == 0 {
					continue
				}
				if found[r.row.Component] == nil {
					found[r.row.Component] = map[string]bool{}
				}
				found[r.row.Component][r.repos[i]] = true
				if r.apply {
					text = rewritten
				}
			}
		}
		if text != original {
			d.changes[file.Path] = []byte(text)
			d.files[file.Path] = gitBlobSHA([]byte(text))
		}
	}
	for _, r := range rows {
		for _, repo := range r.repos {
			if found[r.row.Component][repo] {
				d.refs[r.row.Component] = append(d.refs[r.row.Component], repo)
			}
		}
	}
	return d, nil
}

// rewriters builds, per row with a valid image, the rewriters of its built
// repository and of its distribution repositories (ReleasePlanAdmissions): an OLM
// bundle references operands by where they are released, not where they were built.
func (a *Activities) rewriters(ctx context.Context, req SyncRequest) ([]rowRewriters, error) {
	var names []string
	for _, r := range req.Rows {
		names = append(names, r.Component)
	}
	dist, problems, err := releases.Repositories(ctx, a.k8s, req.Repo.Namespace, names...)
	if err != nil {
		return nil, err
	}
	for _, p := range problems {
		activity.GetLogger(ctx).Warn("a ReleasePlanAdmission could not be read; its repositories are not rewritten", "admission", p.Admission, "error", p.Err)
	}
	var out []rowRewriters
	for _, r := range req.Rows {
		if r.State == prbody.StateDropped || !digestref.ValidImage(r.Image) {
			continue
		}
		apply := r.State == prbody.StateReady && r.New != ""
		digest := r.New
		if !apply {
			digest = placeholderDigest
		}
		rr := rowRewriters{row: r, apply: apply}
		for _, repo := range append([]string{r.Image}, dist[r.Component]...) {
			if slices.Contains(rr.repos, repo) {
				continue
			}
			rw, err := digestref.NewRewriter(repo, digest)
			if err != nil {
				activity.GetLogger(ctx).Warn("a distribution repository is not a valid image repository; skipped", "component", r.Component, "repository", repo)
				continue
			}
			rr.repos, rr.rw = append(rr.repos, repo), append(rr.rw, rw)
		}
		out = append(out, rr)
	}
	return out, nil
}

// blobCache remembers, per blob SHA (content-addressed, so valid across repositories
// and syncs), whether a blob can hold a digest reference and, if so, its text: a
// re-sync of the same tree reads no blob again.
var blobCache = struct {
	sync.Mutex
	m map[string]*string // nil value: no reference possible
}{m: map[string]*string{}}

// maxCachedBlobs bounds the cache; it starts afresh when full.
const maxCachedBlobs = 50000

// referenceText returns a blob's text when it can hold a digest reference
// ("@sha256:"), reading it only the first time the blob is seen.
func referenceText(ctx context.Context, f forge.Forge, sha string) (string, bool, error) {
	blobCache.Lock()
	v, seen := blobCache.m[sha]
	blobCache.Unlock()
	if seen {
		if v == nil {
			return "", false, nil
		}
		return *v, true, nil
	}
	content, err := f.Blob(ctx, sha)
	if err != nil {
		return "", false, err
	}
	var entry *string
	if utf8.Valid(content) && strings.Contains(string(content), "@sha256:") {
		text := string(content)
		entry = &text
	}
	blobCache.Lock()
	if len(blobCache.m) >= maxCachedBlobs {
		blobCache.m = map[string]*string{}
	}
	blobCache.m[sha] = entry
	blobCache.Unlock()
	if entry == nil {
		return "", false, nil
	}
	return *entry, true, nil
}

// holds reports whether commit c carries exactly the desired tree on some base.
func holds(ctx context.Context, f forge.Forge, c forge.Commit, d desired) (bool, error) {
	files, err := f.Files(ctx, c.Tree)
	if err != nil {
		return false, err
	}
	if len(files) != len(d.files) {
		return false, nil
	}
	for _, file := range files {
		if d.files[file.Path] != file.SHA {
			return false, nil
		}
	}
	return true, nil
}

func commitMessage(req SyncRequest, hold bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "chore(deps): update %s for ChangeGroup %s", req.NudgedComponent, req.ChangeGroup)
	if hold {
		b.WriteString(" " + pac.SkipMarker)
	}
	b.WriteString("\n\n")
	for _, r := range req.Rows {
		if r.State == prbody.StateReady && r.New != "" {
			fmt.Fprintf(&b, "- %s: %s@%s\n", r.Component, r.Image, r.New)
		}
	}
	if hold {
		b.WriteString("\nHeld by nudgeflow until every component is ready.\n")
	}
	return b.String()
}

func renderBody(req SyncRequest, d desired, hold, rebase, releaseNow, noDraft bool) string {
	in := prbody.Input{ChangeGroup: req.ChangeGroup, ChangeGroupURL: req.ChangeGroupURL, Hold: hold, Rebase: rebase,
		ReleaseNow: releaseNow, NoDraft: noDraft, ReferencesKnown: d.refs != nil, FileMatch: req.FileMatch}
	for _, r := range req.Rows {
		in.Rows = append(in.Rows, prbody.Row{Name: r.Component, Current: r.Current, New: r.New, State: r.State,
			UpdatedAt: r.UpdatedAt, Repositories: d.refs[r.Component]})
	}
	return prbody.Render(in)
}

// references reports, per row, where its image is referenced (nil: not looked up).
func references(req SyncRequest, d desired) []RowReferences {
	if d.refs == nil {
		return nil
	}
	out := []RowReferences{}
	for _, r := range req.Rows {
		if r.State != prbody.StateDropped {
			out = append(out, RowReferences{Component: r.Component, Repositories: d.refs[r.Component]})
		}
	}
	return out
}

// errHeadMoved: the branch changed between this sync's read and its push.
var errHeadMoved = forge.ErrHeadMoved

// push makes one fresh commit of the desired tree on the base head and force-moves
// the branch to it, unless the branch no longer is at expected (the head this sync
// read): a commit pushed meanwhile is never overwritten.
func push(ctx context.Context, f forge.Forge, req SyncRequest, d desired, hold, exists bool, expected string) (forge.Commit, error) {
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

// pushIfNeeded pushes unless the head is nudgeflow's, holds the desired tree and its
// marker matches hold.
func pushIfNeeded(ctx context.Context, f forge.Forge, req SyncRequest, d desired, head forge.Commit, exists, hold bool) (forge.Commit, error) {
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

// staleRebase: a rebase may discard the branch's commits only up to the head it was
// requested on.
func staleRebase(f forge.Forge, req SyncRequest, st state) bool {
	return req.Overwrite && req.DiscardHead != "" && st.hasHead && st.head.SHA != req.DiscardHead && !isBot(f, st.head)
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

func (a *Activities) sync(ctx context.Context, f forge.Forge, req SyncRequest) (Observed, error) {
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
			return observed(f, st, req.Known, req.Mode == ModeHold), nil
		}
	}
	return o, err
}

func (a *Activities) syncOnce(ctx context.Context, f forge.Forge, req SyncRequest) (Observed, error) {
	log := activity.GetLogger(ctx)
	st, err := a.read(ctx, f, req.Branch, req.Known.Number)
	if err != nil {
		return Observed{}, err
	}
	hold := req.Mode == ModeHold
	if st.found && !st.pr.Open {
		return observed(f, st, req.Known, hold), nil // closed or merged: never write
	}
	if st.found && st.pr.Head != req.Branch {
		return Observed{}, invalid("PR #%d has head %q, not %q", st.pr.Number, st.pr.Head, req.Branch)
	}
	baseBranch := req.Repo.BaseBranch
	if baseBranch == "" {
		if baseBranch, err = f.DefaultBranch(ctx); err != nil {
			return Observed{}, err
		}
	}
	if st.found && st.pr.Base != baseBranch {
		// Retargeted by a person, or another group's PR: the group's digests are for
		// its own base, so it never writes to (or releases) a PR aimed elsewhere.
		return Observed{}, invalid("PR #%d targets %q, not the group's base branch %q", st.pr.Number, st.pr.Base, baseBranch)
	}
	base, ok, err := f.BranchHead(ctx, baseBranch)
	if err != nil {
		return Observed{}, err
	}
	if !ok {
		return Observed{}, temporal.NewNonRetryableApplicationError("base branch "+baseBranch+" does not exist", "BaseBranchMissing", nil)
	}

	if !st.found {
		// A first sync, or a retry after a crash between the push and the PR.
		head, exists, err := f.BranchHead(ctx, req.Branch)
		if err != nil {
			return Observed{}, err
		}
		if exists && !isBot(f, head) && !req.Overwrite {
			return Observed{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"branch %s exists with commit %s by someone else and has no open PR", req.Branch, short(head.SHA)), "BranchNotOurs", nil)
		}
		d, err := a.desiredTree(ctx, f, req, base)
		if err != nil {
			return Observed{}, err
		}
		d.baseBranch = baseBranch
		if _, err := pushIfNeeded(ctx, f, req, d, head, exists, true); err != nil {
			return Observed{}, err
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
			return Observed{}, err
		}
		log.Info("opened draft pull request", "pr", pr.Number, "branch", req.Branch)
		if st, err = a.read(ctx, f, req.Branch, pr.Number); err != nil {
			return Observed{}, err
		}
		// A person may have pushed in the moments since the PR opened: then the
		// human-edit handling below explains the pause, as on any later sync.
		if reason, _ := humanEdit(f, st); hold && reason == "" {
			o := observed(f, st, req.Known, hold)
			o.References = references(req, d)
			return o, nil
		}
	}

	if staleRebase(f, req, st) {
		// The rebase was asked for on an older head: what was pushed since is kept.
		if err := untickRebase(ctx, f, st); err != nil {
			return Observed{}, err
		}
		req.Overwrite = false
	}
	if reason, key := humanEdit(f, st); reason != "" && !req.Overwrite {
		marker := fmt.Sprintf(humanEditMarker, key)
		text := fmt.Sprintf("nudgeflow stopped updating this pull request: %s.\n\n"+
			"To let nudgeflow update it again, tick **rebase** in the description. nudgeflow then pushes a fresh commit "+
			"on `%s` and re-renders the description: the manual changes are discarded.", reason, baseBranch)
		if err := ensureComment(ctx, f, st.pr.Number, marker, text); err != nil {
			return Observed{}, err
		}
		log.Info("human edits: not updating", "pr", st.pr.Number, "reason", reason)
		return observed(f, st, req.Known, hold), nil
	}
	if hold && (!isDraft(st) || !st.body.SkipMarker) && !req.Overwrite {
		// A person released the hold; the workflow decides what follows.
		return observed(f, st, req.Known, hold), nil
	}

	d, err := a.desiredTree(ctx, f, req, base)
	if err != nil {
		return Observed{}, err
	}
	d.baseBranch = baseBranch
	rebase := st.body.Rebase && !req.Overwrite
	// Text around the managed section (a person's note, a bot's report) is kept.
	body := prbody.Compose(st.pr.Body, renderBody(req, d, hold, rebase, st.body.ReleaseNow, noDraft(st)))
	head := st.head
	if hold {
		if _, err := pushIfNeeded(ctx, f, req, d, head, st.hasHead, true); err != nil {
			return Observed{}, err
		}
		if st.pr.Body != body {
			if _, err := f.EditPR(ctx, st.pr.Number, &body, nil); err != nil {
				return Observed{}, err
			}
		}
	} else {
		// Release: (1) the description without the marker (edited: no build), (2) lift the
		// draft while the head still holds [skip ci] (ready_for_review: no build), (3) one
		// final commit without the marker (synchronize: the one build). (1) and (2) are
		// one request where the forge allows.
		var newBody *string
		if st.pr.Body != body {
			newBody = &body
		}
		if st.pr.Draft {
			// Only the marker matters for ready_for_review: a held commit of nudgeflow's
			// is enough, whatever digests it carries (the final commit has the new ones).
			if !st.hasHead || !isBot(f, head) || !pac.HasSkipMarker(head.Message) {
				if head, err = pushIfNeeded(ctx, f, req, d, head, st.hasHead, true); err != nil {
					return Observed{}, err
				}
			}
			if err := f.MarkReady(ctx, st.pr, newBody); err != nil {
				return Observed{}, err
			}
			log.Info("marked ready for review", "pr", st.pr.Number)
		} else if newBody != nil {
			if _, err := f.EditPR(ctx, st.pr.Number, newBody, nil); err != nil {
				return Observed{}, err
			}
		}
		if _, err := pushIfNeeded(ctx, f, req, d, head, st.hasHead, false); err != nil {
			return Observed{}, err
		}
	}
	if st, err = a.read(ctx, f, req.Branch, st.pr.Number); err != nil {
		return Observed{}, err
	}
	o := observed(f, st, req.Known, hold)
	o.References = references(req, d)
	return o, nil
}
