// Package prgroup holds the activities of the PRGroup workflow (ADR 29 PR groups):
// the target PR on the nudged component's repository (draft, digest commit,
// description linking every originating PR), reads of the originating PRs, and the
// lookup of a merged commit's push build. Every activity looks before it writes.
//
// Nothing in these types is a secret: they travel through workflow histories.
package prgroup

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/changegrouppr"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/contracts/prgroupapi"
	"github.com/nudgeflow/nudgeflow/internal/components"
	"github.com/nudgeflow/nudgeflow/internal/digestref"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/pac"
	"github.com/nudgeflow/nudgeflow/internal/prbody"
)

// Live reads (no watch): Components by name and by namespace, a component's build runs.
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=components,verbs=get;list
// +kubebuilder:rbac:groups=konflux-ci.dev,resources=components,verbs=get
// +kubebuilder:rbac:groups=tekton.dev,resources=pipelineruns,verbs=list

// Activities are the PR group activities. The forge connection (credentials read
// from Secrets at call time) is the pull request activities'.
type Activities struct {
	Kube client.Reader
	PR   *changegrouppr.Activities
}

// Register registers the activities under their contract names.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.Sync, activity.RegisterOptions{Name: prgroupapi.SyncActivity})
	r.RegisterActivityWithOptions(a.ObserveOrigins, activity.RegisterOptions{Name: prgroupapi.ObserveOriginsActivity})
	r.RegisterActivityWithOptions(a.FindPushBuild, activity.RegisterOptions{Name: prgroupapi.FindPushBuildActivity})
	r.RegisterActivityWithOptions(a.Close, activity.RegisterOptions{Name: prgroupapi.CloseActivity})
}

func invalid(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), "InvalidRequest", nil)
}

// repoOf is the target component's repository, as build-service reads it, and the
// Component (where a refused write records its Event).
func (a *Activities) repoOf(ctx context.Context, namespace, component string) (changegroupprapi.Repo, *corev1.ObjectReference, error) {
	var c mirrorv1alpha1.Component
	if err := components.Get(ctx, a.Kube, namespace, component, &c); err != nil {
		return changegroupprapi.Repo{}, nil, fmt.Errorf("reading component %s/%s: %w", namespace, component, err)
	}
	git := c.Spec.Source.GitSource
	if git == nil || git.URL == "" {
		return changegroupprapi.Repo{}, nil, invalid("component %q has no spec.source.git.url: nudgeflow cannot tell which repository to update", component)
	}
	ref := components.Ref(&c) // the kind read (either Component kind)
	return repoOf(namespace, git.URL, git.Revision, c.Annotations[mirrorv1alpha1.AnnotationGitProvider]), ref, nil
}

// repoOf is a pull request repository for a clone URL (provider from the
// annotation, else the host).
func repoOf(namespace, cloneURL, base, provider string) changegroupprapi.Repo {
	host := ""
	if u, err := url.Parse(cloneURL); err == nil {
		host = u.Hostname()
	}
	return changegroupprapi.Repo{Provider: forge.ProviderOrGitHub(provider, host), URL: strings.TrimSuffix(cloneURL, ".git"), BaseBranch: base, Namespace: namespace}
}

// providerOf is the git-provider annotation of a component of the namespace built
// from repoURL (as the rest of nudgeflow names a forge), "" when none says: then
// the host decides. A self-hosted GitLab or Forgejo host names no forge.
func (a *Activities) providerOf(ctx context.Context, namespace, repoURL string) string {
	var list mirrorv1alpha1.ComponentList
	if err := a.Kube.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		activity.GetLogger(ctx).Warn("listing components to learn an origin's forge; the host decides", "error", err)
		return ""
	}
	want := normalRepo(repoURL)
	for _, c := range list.Items {
		git := c.Spec.Source.GitSource
		if git == nil || normalRepo(git.URL) != want {
			continue
		}
		if p := c.Annotations[mirrorv1alpha1.AnnotationGitProvider]; p != "" {
			return p
		}
	}
	return ""
}

// normalRepo is host/path of a clone URL in lower case, without ".git" or slashes.
func normalRepo(u string) string {
	u = strings.ToLower(strings.TrimSpace(u))
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	if i := strings.Index(u, "@"); i >= 0 && i < strings.Index(u+"/", "/") {
		u = u[i+1:] // credentials in the URL
	}
	return strings.TrimSuffix(strings.Trim(u, "/"), ".git")
}

// ---- Sync ----

func validBranch(b string) bool {
	return b != "" && !strings.ContainsAny(b, " ~^:?*[\\") && !strings.Contains(b, "..")
}

// Sync makes the target PR match req: one bot commit on the base branch's head with
// every applied digest (a fresh commit when the digests or the base changed), a
// draft PR (opened when none is open), the description re-rendered, the draft
// lifted when req.Draft is false. A closed or merged PR is never written to.
func (a *Activities) Sync(ctx context.Context, req prgroupapi.SyncRequest) (prgroupapi.SyncResult, error) {
	if !validBranch(req.Branch) {
		return prgroupapi.SyncResult{}, invalid("branch %q is not a valid branch name", req.Branch)
	}
	for _, r := range req.Rows {
		if !r.Dropped && (!digestref.ValidImage(r.Image) || !digestref.ValidDigest(r.Digest)) {
			return prgroupapi.SyncResult{}, invalid("row %q: image %q or digest %q is not valid", r.Component, r.Image, r.Digest)
		}
	}
	fileMatch := req.FileMatch
	if len(fileMatch) == 0 {
		fileMatch = digestref.DefaultFileMatch
	}
	if _, err := digestref.NewFileMatcher(fileMatch); err != nil {
		return prgroupapi.SyncResult{}, invalid("%v", err)
	}
	repo, target, err := a.repoOf(ctx, req.Namespace, req.Target)
	if err != nil {
		return prgroupapi.SyncResult{}, err
	}
	f, clean, err := a.PR.Connect(ctx, repo, target)
	if err != nil {
		return prgroupapi.SyncResult{}, err
	}
	res, err := a.sync(ctx, f, repo, req, fileMatch)
	if err != nil {
		return prgroupapi.SyncResult{}, clean(err)
	}
	res.Writes = f.Writes()
	return res, nil
}

func result(pr forge.PR) prgroupapi.SyncResult {
	r := prgroupapi.SyncResult{PR: prgroupapi.PRRef{Number: pr.Number, URL: pr.URL}, Draft: pr.Draft}
	switch {
	case pr.Merged:
		r.State = prgroupapi.PRMerged
	case pr.Open:
		r.State = prgroupapi.PROpen
	default:
		r.State = prgroupapi.PRClosed
	}
	return r
}

func (a *Activities) sync(ctx context.Context, f forge.Forge, repo changegroupprapi.Repo, req prgroupapi.SyncRequest, fileMatch []string) (prgroupapi.SyncResult, error) {
	log := activity.GetLogger(ctx)
	pr, found, err := f.FindPR(ctx, req.Branch, req.Known.Number)
	if err != nil {
		return prgroupapi.SyncResult{}, err
	}
	if found && !pr.Open {
		return result(pr), nil // closed or merged: never written to
	}
	if found && pr.Head != req.Branch {
		return prgroupapi.SyncResult{}, invalid("PR #%d has head %q, not %q", pr.Number, pr.Head, req.Branch)
	}
	monorepo := false
	for _, o := range req.Origins {
		if sameRepo(o.Key, repo.URL) {
			monorepo = true
		}
	}
	baseBranch := repo.BaseBranch
	if baseBranch == "" {
		if baseBranch, err = f.DefaultBranch(ctx); err != nil {
			return prgroupapi.SyncResult{}, err
		}
	}
	base, ok, err := f.BranchHead(ctx, baseBranch)
	if err != nil {
		return prgroupapi.SyncResult{}, err
	}
	if !ok {
		return prgroupapi.SyncResult{}, temporal.NewNonRetryableApplicationError("base branch "+baseBranch+" does not exist", "BaseBranchMissing", nil)
	}
	var rows []changegroupprapi.Row
	for _, r := range req.Rows {
		if !r.Dropped {
			rows = append(rows, changegroupprapi.Row{Component: r.Component, Image: r.Image, New: r.Digest, State: prbody.StateReady})
		}
	}
	changes, tree, err := a.PR.Rewrite(ctx, f, req.Namespace, rows, fileMatch, base)
	if err != nil {
		return prgroupapi.SyncResult{}, err
	}
	head, exists, err := f.BranchHead(ctx, req.Branch)
	if err != nil {
		return prgroupapi.SyncResult{}, err
	}
	res := prgroupapi.SyncResult{Monorepo: monorepo}
	if exists && !changegrouppr.IsBot(f, head) {
		// A person pushed to the branch: their commit is kept; nudgeflow only reports.
		res.HumanEdits = fmt.Sprintf("commit %.7s on %s is not nudgeflow's", head.SHA, req.Branch)
	}
	if !found && len(changes) == 0 {
		log.Info("the base branch already holds every digest; no PR to open", "branch", req.Branch)
		res.NoChanges = true
		return res, nil
	}
	var syn synthetic
	if monorepo {
		baseFiles, err := f.Files(ctx, base.Tree)
		if err != nil {
			return prgroupapi.SyncResult{}, err
		}
		if syn, err = a.synthesize(ctx, f, repo, req, baseBranch, baseFiles); err != nil {
			return prgroupapi.SyncResult{}, err
		}
		if res.HumanEdits == "" && !syn.empty() {
			if err := a.pushWithSynthetic(ctx, f, req, rows, fileMatch, base, baseBranch, baseFiles, syn, head, exists); err != nil {
				return prgroupapi.SyncResult{}, err
			}
		}
	}
	if res.HumanEdits == "" && syn.empty() {
		same := false
		if exists {
			// The head is current when it sits on the base head and holds the tree.
			if slices.Equal(head.Parents, []string{base.SHA}) {
				if same, err = changegrouppr.TreeHolds(ctx, f, head, tree); err != nil {
					return prgroupapi.SyncResult{}, err
				}
			}
		}
		if !same {
			c, err := f.Push(ctx, forge.Push{Branch: req.Branch, Parent: base, Base: baseBranch, Files: changes,
				Message: commitMessage(req), Exists: exists, ExpectedHead: head.SHA})
			if errors.Is(err, forge.ErrHeadMoved) {
				return prgroupapi.SyncResult{}, headMoved()
			}
			if err != nil {
				return prgroupapi.SyncResult{}, err
			}
			log.Info("pushed", "branch", req.Branch, "commit", c.SHA, "files", len(changes))
		}
	}
	body := render(req, syn.describe())
	if !found {
		title := fmt.Sprintf("[PR group %s] Update %s", req.Group, req.Target)
		pr, err = f.CreatePR(ctx, forge.NewPR{Title: title, Head: req.Branch, Base: baseBranch, Body: body, Draft: req.Draft})
		if errors.Is(err, forge.ErrDraftsUnsupported) {
			log.Info("the repository allows no draft PRs; opening a normal one (the description says not to merge it yet)", "branch", req.Branch)
			pr, err = f.CreatePR(ctx, forge.NewPR{Title: title, Head: req.Branch, Base: baseBranch, Body: body})
		}
		if err != nil {
			return prgroupapi.SyncResult{}, err
		}
		log.Info("opened pull request", "pr", pr.Number, "branch", req.Branch, "draft", req.Draft)
	} else {
		body = prbody.Compose(pr.Body, body)
		if pr.Draft && !req.Draft {
			if err := f.MarkReady(ctx, pr, &body); err != nil {
				return prgroupapi.SyncResult{}, err
			}
			log.Info("marked ready for review", "pr", pr.Number)
		} else if pr.Body != body {
			if _, err := f.EditPR(ctx, pr.Number, &body, nil); err != nil {
				return prgroupapi.SyncResult{}, err
			}
		}
	}
	if pr, found, err = f.FindPR(ctx, req.Branch, pr.Number); err != nil || !found {
		return prgroupapi.SyncResult{}, errors.Join(err, fmt.Errorf("PR on %s vanished", req.Branch))
	}
	r := result(pr)
	r.HumanEdits, r.Monorepo = res.HumanEdits, monorepo
	return r, nil
}

func headMoved() error {
	return temporal.NewApplicationError("the branch moved during the sync; retrying", "HeadMoved")
}

// pushWithSynthetic makes the branch two bot commits on the base head: the
// synthetic commit (the copies) and the digest commit on its tree. Nothing is
// written when the head already is both. With a forge.CommitWriter the synthetic
// commit is written without moving the branch, so the branch moves once (one
// CI-triggering event); without one it is pushed first with [skip ci] in its
// message (PaC reads the marker in the head commit only), then the digest commit.
func (a *Activities) pushWithSynthetic(ctx context.Context, f forge.Forge, req prgroupapi.SyncRequest, rows []changegroupprapi.Row, fileMatch []string,
	base forge.Commit, baseBranch string, baseFiles []forge.File, syn synthetic, head forge.Commit, exists bool) error {
	log := activity.GetLogger(ctx)
	synTree := syn.tree(baseFiles)
	var synth forge.Commit
	if exists && len(head.Parents) == 1 {
		parent, err := f.Commit(ctx, head.Parents[0])
		if err != nil {
			return err
		}
		if changegrouppr.IsBot(f, parent) && slices.Equal(parent.Parents, []string{base.SHA}) {
			ok, err := changegrouppr.TreeHolds(ctx, f, parent, synTree)
			if err != nil {
				return err
			}
			if ok {
				synth = parent
			}
		}
	}
	expected := head.SHA
	if synth.SHA == "" {
		var err error
		if w, ok := f.(forge.CommitWriter); ok {
			synth, err = w.WriteCommit(ctx, base, syn.files, syn.message)
		} else {
			synth, err = f.Push(ctx, forge.Push{Branch: req.Branch, Parent: base, Base: baseBranch, Files: syn.files, New: syn.newPaths(baseFiles),
				Message: skipCI(syn.message), Exists: exists, ExpectedHead: head.SHA})
			expected, exists = synth.SHA, true
		}
		if errors.Is(err, forge.ErrHeadMoved) {
			return headMoved()
		}
		if err != nil {
			return err
		}
		log.Info("wrote the synthetic commit", "branch", req.Branch, "commit", synth.SHA, "files", len(syn.files))
	}
	changes, tree, err := a.PR.Rewrite(ctx, f, req.Namespace, rows, fileMatch, synth)
	if err != nil {
		return err
	}
	if exists && expected == head.SHA && slices.Equal(head.Parents, []string{synth.SHA}) {
		same, err := changegrouppr.TreeHolds(ctx, f, head, tree)
		if err != nil || same {
			return err
		}
	}
	c, err := f.Push(ctx, forge.Push{Branch: req.Branch, Parent: synth, Base: baseBranch, Files: changes, Message: commitMessage(req),
		Exists: exists, ExpectedHead: expected})
	if errors.Is(err, forge.ErrHeadMoved) {
		return headMoved()
	}
	if err != nil {
		return err
	}
	log.Info("pushed", "branch", req.Branch, "commit", c.SHA, "files", len(changes), "synthetic", synth.SHA)
	return nil
}

// skipCI puts PaC's marker on a commit's title line.
func skipCI(message string) string {
	title, rest, _ := strings.Cut(message, "\n")
	return title + " " + pac.SkipMarker + "\n" + rest
}

// sameRepo reports whether an origin key (owner/repo#N) is in the repository.
func sameRepo(originKey, repoURL string) bool {
	repo, _, _ := strings.Cut(originKey, "#")
	u, err := url.Parse(repoURL)
	if err != nil {
		return false
	}
	return strings.EqualFold(strings.Trim(u.Path, "/"), repo)
}

func commitMessage(req prgroupapi.SyncRequest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "chore(deps): update %s for PR group %s\n\n", req.Target, req.Group)
	for _, r := range req.Rows {
		if !r.Dropped {
			fmt.Fprintf(&b, "- %s: %s@%s (%s build of %s)\n", r.Component, r.Image, r.Digest, r.From, r.Origin)
		}
	}
	return b.String()
}

// render is the managed section of the target PR's description (deterministic).
func render(req prgroupapi.SyncRequest, synthetic []string) string {
	var b strings.Builder
	b.WriteString(prbody.Begin + "\n")
	fmt.Fprintf(&b, "### PR group `%s`: %s\n\n", req.Group, req.Target)
	if req.FollowUp {
		b.WriteString("The earlier pull request of this group was merged before its originating pull requests; this one replaces the pull-request builds' digests with the merged builds'.\n\n")
	}
	if req.Draft {
		b.WriteString("**Do not merge this pull request out of order**: it proposes images built from pull requests that are not merged yet. " +
			"nudgeflow lifts the draft once every originating pull request below is merged or closed, with the merged builds' digests.\n\n")
	} else {
		b.WriteString("Every originating pull request is merged or closed: this pull request is safe to merge.\n\n")
	}
	b.WriteString("Originating pull requests:\n\n")
	for _, o := range req.Origins {
		link := o.Key
		if o.URL != "" {
			link = fmt.Sprintf("[%s](%s)", o.Key, o.URL)
		}
		title := ""
		if o.Title != "" {
			title = " " + strings.ReplaceAll(o.Title, "\n", " ")
		}
		fmt.Fprintf(&b, "- %s%s: %s\n", link, title, o.State)
	}
	b.WriteString("\n| component | image | digest | built from |\n|---|---|---|---|\n")
	for _, r := range req.Rows {
		state := r.From + " build of " + r.Origin
		digest := "`" + digestref.Short(r.Digest) + "`"
		if r.Dropped {
			state = "not applied: " + r.Origin + " was closed unmerged"
			digest = "~~" + digest + "~~"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", r.Component, r.Image, digest, state)
	}
	notes := append(append([]string(nil), synthetic...), req.Notes...)
	if len(notes) > 0 {
		b.WriteString("\nNotes:\n\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	if req.WorkflowID != "" {
		fmt.Fprintf(&b, "\n<sub>nudgeflow workflow `%s`</sub>\n", req.WorkflowID)
	}
	b.WriteString(prbody.End)
	return b.String()
}

// ---- ObserveOrigins ----

// ObserveOrigins reads each originating PR; one that cannot be read says why and
// does not fail the others.
func (a *Activities) ObserveOrigins(ctx context.Context, req prgroupapi.ObserveRequest) ([]prgroupapi.OriginObservation, error) {
	out := make([]prgroupapi.OriginObservation, 0, len(req.Origins))
	conns := map[string]forge.Forge{}
	var transient []error
	for _, o := range req.Origins {
		obs := prgroupapi.OriginObservation{RepoURL: o.RepoURL, Number: o.Number}
		f, ok := conns[o.RepoURL]
		if !ok {
			var clean func(error) error
			var err error
			// An originating PR's repository must be the namespace's too: reading it
			// needs a token for it. A refusal is this origin's error (nil: no Event,
			// the target's Component is not the one refused).
			f, clean, err = a.PR.Connect(ctx, repoOf(req.Namespace, o.RepoURL, "", a.providerOf(ctx, req.Namespace, o.RepoURL)), nil)
			if err != nil {
				obs.Error = clean(err).Error()
				out = append(out, obs)
				continue
			}
			conns[o.RepoURL] = f
		}
		pr, found, err := f.FindPR(ctx, "", o.Number)
		if err != nil {
			var ae *temporal.ApplicationError
			if errors.As(err, &ae) && ae.NonRetryable() {
				obs.Error = err.Error()
				out = append(out, obs)
				continue
			}
			transient = append(transient, err)
			continue
		}
		obs.Found = found
		if found {
			obs.Open, obs.Merged, obs.URL, obs.Title = pr.Open, pr.Merged, pr.URL, pr.Title
			obs.HeadSHA, obs.MergeCommitSHA = pr.HeadSHA, pr.MergeCommitSHA
		}
		out = append(out, obs)
	}
	if len(transient) > 0 {
		return nil, errors.Join(transient...) // retried as a whole
	}
	return out, nil
}

// ---- FindPushBuild ----

// FindPushBuild looks for the succeeded push build of a merged commit.
func (a *Activities) FindPushBuild(ctx context.Context, req prgroupapi.FindPushBuildRequest) (prgroupapi.PushBuild, error) {
	runs, err := konflux.ListRuns(ctx, a.Kube, map[konflux.Key]string{
		konflux.ComponentKey: req.Component, konflux.PipelineTypeKey: konflux.PipelineTypeBuild}, client.InNamespace(req.Namespace))
	if err != nil {
		return prgroupapi.PushBuild{}, fmt.Errorf("listing the builds of %s/%s: %w", req.Namespace, req.Component, err)
	}
	var best *prgroupapi.PushBuild
	for i := range runs {
		plr := &runs[i]
		if !isPush(plr) || !plr.Status.GetCondition(apis.ConditionSucceeded).IsTrue() {
			continue
		}
		built, ok := konflux.BuildOf(plr)
		if !ok {
			continue
		}
		if req.CommitSHA != "" {
			if !strings.EqualFold(built.CommitSHA, req.CommitSHA) {
				continue
			}
		} else if built.BuiltAt.Before(req.After) {
			continue
		}
		b := prgroupapi.PushBuild{Found: true, Build: built}
		// The commit's newest build (a re-run), or the first build after the merge.
		if best == nil || (req.CommitSHA != "" && b.BuiltAt.After(best.BuiltAt)) || (req.CommitSHA == "" && b.BuiltAt.Before(best.BuiltAt)) {
			best = &b
		}
	}
	if best == nil {
		return prgroupapi.PushBuild{}, nil
	}
	return *best, nil
}

func isPush(plr *tektonv1.PipelineRun) bool {
	return konflux.IsPushEvent(plr.Labels, plr.Annotations)
}

// ---- Close / comment ----

// Close posts the comment once (per marker) and closes the PR when asked; a merged
// PR gets the comment only.
func (a *Activities) Close(ctx context.Context, req prgroupapi.CloseRequest) (prgroupapi.SyncResult, error) {
	if req.Known.Number <= 0 {
		return prgroupapi.SyncResult{}, nil
	}
	repo, target, err := a.repoOf(ctx, req.Namespace, req.Target)
	if err != nil {
		return prgroupapi.SyncResult{}, err
	}
	f, clean, err := a.PR.Connect(ctx, repo, target)
	if err != nil {
		return prgroupapi.SyncResult{}, err
	}
	res, err := closePR(ctx, f, req)
	if err != nil {
		return prgroupapi.SyncResult{}, clean(err)
	}
	res.Writes = f.Writes()
	return res, nil
}

func closePR(ctx context.Context, f forge.Forge, req prgroupapi.CloseRequest) (prgroupapi.SyncResult, error) {
	pr, found, err := f.FindPR(ctx, "", req.Known.Number)
	if err != nil || !found {
		return prgroupapi.SyncResult{PR: req.Known}, err
	}
	if req.Comment != "" && (pr.Open || pr.Merged) {
		marker := "<!-- nudgeflow:prgroup " + req.Marker + " -->"
		cs, err := f.Comments(ctx, pr.Number)
		if err != nil {
			return prgroupapi.SyncResult{}, err
		}
		if !slices.ContainsFunc(cs, func(c forge.Comment) bool { return strings.Contains(c.Body, marker) }) {
			if err := f.CreateComment(ctx, pr.Number, marker+"\n"+req.Comment); err != nil {
				return prgroupapi.SyncResult{}, err
			}
		}
	}
	if req.Close && pr.Open {
		if pr, err = f.EditPR(ctx, pr.Number, nil, new(false)); err != nil {
			return prgroupapi.SyncResult{}, err
		}
		activity.GetLogger(ctx).Info("closed pull request", "pr", pr.Number)
	}
	return result(pr), nil
}
