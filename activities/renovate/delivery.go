package renovate

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"go.temporal.io/sdk/activity"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/digestref"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	forgejoforge "github.com/nudgeflow/nudgeflow/internal/forge/forgejo"
	ghforge "github.com/nudgeflow/nudgeflow/internal/forge/github"
	glforge "github.com/nudgeflow/nudgeflow/internal/forge/gitlab"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// A Renovate run that exits 0 has delivered its build when the forge says so, not
// when its log does: the digest is on the nudged component's base branch, or at
// the head of an open or merged pull request of the nudge branch, or there was
// nothing to change (the repository does not reference the image). Renovate 39
// exits 0 after it pushed a branch and failed to open the pull request, after a
// person's edit made it skip the branch, and after a failed lookup; and it logs
// failure-looking lines on runs that landed. CheckDelivery asks the forge, after
// the run ended, with the credential the run pushed with.

// Bounds of one check: pull requests of the branch looked at, and files read per
// commit (Renovate's fileMatch usually selects a few; a ConfigMap's empty
// fileMatch selects every file). A repository with more matching files is not
// judged (an error: DeliveryUnknown, said in the Event) rather than read whole.
const (
	deliveryMaxPRs   = 10
	deliveryMaxBlobs = 1000
)

// DeliveryInput is what ForgeDelivery looks for on one repository.
type DeliveryInput struct {
	// Base is the base branch ("" reads the repository's default branch); Branch
	// the nudge branch Renovate pushes.
	Base, Branch string
	// Digest is looked for in the files FileMatch selects (Renovate's fileMatch
	// regexes, matched against the path); Repos are the image's repositories
	// (built and distribution), whose references say the file refers to it.
	Digest    string
	FileMatch []string
	Repos     []string
}

// CheckDelivery asks the nudged component's forge whether req's digest was
// delivered (see DeliveryVerdict). It reads with the credential the run pushed
// with, after the same ownership check as the launch.
func (a *Activities) CheckDelivery(ctx context.Context, req renovateapi.DeliveryRequest) (renovaterun.DeliveryVerdict, error) {
	target, nudging, err := a.components(ctx, renovateapi.LaunchRequest{Namespace: req.Namespace, Nudging: req.Nudging, Nudged: req.Nudged})
	if err != nil {
		return renovaterun.DeliveryVerdict{}, err
	}
	git := target.Spec.Source.GitSource
	if git == nil || git.URL == "" {
		return renovaterun.DeliveryVerdict{}, fmt.Errorf("component %s/%s has no spec.source.git.url", req.Namespace, req.Nudged)
	}
	info, err := parseForge(git.URL, target.Annotations[mirrorv1alpha1.AnnotationGitProvider], forge.ProviderOrGitHub)
	if err != nil {
		return renovaterun.DeliveryVerdict{}, err
	}
	if a.StandInForge != nil && a.StandInForge(info.host) {
		v := renovaterun.DeliveryVerdict{Delivered: req.LogSaysOK, Message: "the run's log says so (only stand-in runs go to " + info.host + " in this world)"}
		if v.Delivered {
			v.Where = renovaterun.DeliveredByRunLog
		}
		return v, nil
	}
	if err := a.owner().Require(ctx, req.Namespace, git.URL, componentRef(target)); err != nil {
		if ownership.IsRefusal(err) {
			activity.GetLogger(ctx).Warn("refused: the namespace does not own the repository", "namespace", req.Namespace, "repo", git.URL, "error", err)
		}
		return renovaterun.DeliveryVerdict{}, err
	}
	f, err := a.deliveryForge(ctx, req.Namespace, info, git.URL)
	if err != nil {
		return renovaterun.DeliveryVerdict{}, err
	}
	opts, _, err := ReadTier(ctx, a.Kube, req.Namespace, target)
	if err != nil {
		return renovaterun.DeliveryVerdict{}, err
	}
	// The released names too, as the launch wrote them into the config: a
	// repository that refers to the image only by one of them references it.
	distribution, err := a.distributionRepos(ctx, renovateapi.LaunchRequest{Namespace: req.Namespace, Nudging: req.Nudging, DistributionRepos: req.DistributionRepos})
	if err != nil {
		return renovaterun.DeliveryVerdict{}, err
	}
	built := digestref.ParseReference(req.ImageURL)
	branch := branchName(req.Nudging, req.Nudged, SimpleBranch(nudging))
	v, err := ForgeDelivery(ctx, f, DeliveryInput{Base: git.Revision, Branch: branch, Digest: req.Digest,
		FileMatch: FileMatch(opts, req.NudgeFiles), Repos: append([]string{built.Repository}, distribution...)})
	if err != nil {
		return renovaterun.DeliveryVerdict{}, fmt.Errorf("asking %s whether run %s delivered %s: %w", info.host+"/"+info.repository, req.PipelineRun, req.Digest, err)
	}
	activity.GetLogger(ctx).Info("delivery of a Renovate run", "pipelineRun", req.PipelineRun, "delivered", v.Delivered, "where", v.Where, "pr", v.PR)
	return v, nil
}

// deliveryForge is a reading client of the nudged repository, with the run's
// credential (scmCredential: the GitHub App's token or the basic-auth Secret's).
func (a *Activities) deliveryForge(ctx context.Context, namespace string, info forgeInfo, gitURL string) (forge.Forge, error) {
	repo, err := forge.ParseRepoURL(gitURL)
	if err != nil {
		return nil, err
	}
	s, err := a.scmCredential(ctx, namespace, info)
	if err != nil {
		return nil, err
	}
	o := forge.ClientOptions{Repo: repo, Token: s.cred.Password, Transport: a.Transport}
	switch info.platform {
	case "github":
		return ghforge.New(o)
	case "gitlab":
		return glforge.New(ctx, o)
	case "forgejo":
		return forgejoforge.New(o)
	}
	return nil, fmt.Errorf("no forge client for platform %q", info.platform)
}

// branchName is the branch Renovate pushes for the group of nudging in nudged's
// repository (BranchKey's last part).
func branchName(nudging, nudged string, simple bool) string {
	additional := nudged + "-"
	if simple {
		additional = ""
	}
	return BranchPrefix + additional + "component-update-" + nudging
}

// ForgeDelivery looks for in.Digest on the base branch, then at the heads of the
// branch's open and merged pull requests (newest first).
func ForgeDelivery(ctx context.Context, f forge.Forge, in DeliveryInput) (renovaterun.DeliveryVerdict, error) {
	match, err := compileAll(in.FileMatch)
	if err != nil {
		return renovaterun.DeliveryVerdict{}, err
	}
	refs, err := referencesOf(in.Repos)
	if err != nil {
		return renovaterun.DeliveryVerdict{}, err
	}
	base := in.Base
	if base == "" {
		if base, err = f.DefaultBranch(ctx); err != nil {
			return renovaterun.DeliveryVerdict{}, err
		}
	}
	v := renovaterun.DeliveryVerdict{Branch: in.Branch, Base: base}
	head, ok, err := f.BranchHead(ctx, base)
	if err != nil {
		return v, err
	}
	if !ok {
		return v, fmt.Errorf("the base branch %s does not exist", base)
	}
	onBase, referenced, err := holds(ctx, f, head.Tree, in.Digest, match, refs)
	if err != nil {
		return v, err
	}
	if onBase {
		v.Delivered, v.Where = true, renovaterun.DeliveredOnBase
		v.Message = fmt.Sprintf("%s is on the base branch %s", in.Digest, base)
		return v, nil
	}
	prs, err := branchPRs(ctx, f, in.Branch)
	if err != nil {
		return v, err
	}
	for _, pr := range prs {
		if (!pr.Open && !pr.Merged) || pr.HeadSHA == "" {
			continue
		}
		c, err := f.Commit(ctx, pr.HeadSHA)
		if err != nil {
			return v, err
		}
		atHead, _, err := holds(ctx, f, c.Tree, in.Digest, match, refs)
		if err != nil {
			return v, err
		}
		if atHead {
			state := "open"
			if pr.Merged {
				state = "merged"
			}
			v.Delivered, v.Where, v.PR, v.PRURL = true, renovaterun.DeliveredInPullRequest, pr.Number, pr.URL
			v.Message = fmt.Sprintf("%s is in %s pull request #%d (%s) of branch %s", in.Digest, state, pr.Number, pr.URL, in.Branch)
			return v, nil
		}
	}
	if !referenced && len(prs) == 0 {
		v.Delivered, v.Where = true, renovaterun.DeliveredNotReferenced
		v.Message = fmt.Sprintf("no file of the base branch %s that Renovate edits references the image: nothing to nudge", base)
		return v, nil
	}
	v.Message = fmt.Sprintf("the forge shows %s neither on the base branch %s nor in an open or merged pull request of branch %s", in.Digest, base, in.Branch)
	return v, nil
}

// branchPRs are the branch's pull requests: every state where the forge lists
// them (forge.BranchPRLister), else its newest open one.
func branchPRs(ctx context.Context, f forge.Forge, branch string) ([]forge.PR, error) {
	if l, ok := f.(forge.BranchPRLister); ok {
		return l.BranchPRs(ctx, branch, deliveryMaxPRs)
	}
	pr, ok, err := f.FindPR(ctx, branch, 0)
	if err != nil || !ok {
		return nil, err
	}
	return []forge.PR{pr}, nil
}

// holds reads the files of tree that match and says whether one holds digest,
// and whether one references the image at all.
func holds(ctx context.Context, f forge.Forge, tree, digest string, match []*regexp.Regexp, refs *regexp.Regexp) (hasDigest, referenced bool, err error) {
	files, err := f.Files(ctx, tree)
	if err != nil {
		return false, false, err
	}
	read := 0
	for _, file := range files {
		if !matchesAny(match, file.Path) {
			continue
		}
		if read++; read > deliveryMaxBlobs {
			return false, referenced, fmt.Errorf("more than %d files match Renovate's fileMatch; not reading them all", deliveryMaxBlobs)
		}
		content, err := f.Blob(ctx, file.SHA)
		if err != nil {
			return false, false, err
		}
		if strings.Contains(string(content), digest) {
			return true, true, nil
		}
		referenced = referenced || refs.Match(content)
	}
	return false, referenced, nil
}

func compileAll(patterns []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(patterns))
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("fileMatch %q: %w", p, err)
		}
		out = append(out, re)
	}
	return out, nil
}

func matchesAny(res []*regexp.Regexp, path string) bool {
	for _, re := range res {
		if re.MatchString(path) {
			return true
		}
	}
	return false
}

// referencesOf matches a digest reference to any of repos, as the config's
// custom manager does: <repo>(:tag)?@sha256:<hex>.
func referencesOf(repos []string) (*regexp.Regexp, error) {
	alts := make([]string, 0, len(repos))
	for _, r := range repos {
		if r != "" {
			alts = append(alts, regexp.QuoteMeta(r))
		}
	}
	return regexp.Compile(`(?:` + strings.Join(alts, "|") + `)(?::[^@\s]*)?@sha256:[a-f0-9]+`)
}
