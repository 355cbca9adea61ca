// Package nudgewrite is the direct writer of immediate nudges: the
// WriteNudgePR activity opens or updates the nudge's pull request itself, through
// the forge's API, in exactly the shape the Renovate path gives it (branch, title,
// labels, body header and footer, commits as Renovate's gitAuthor), so that
// either writer, and build-service's or integration-service's Renovate, continues
// the other's branch. No PipelineRun, no clone.
//
// It reuses the ChangeGroup writer (activities/changegrouppr: the forge
// connection with its ownership check and credential redaction, the digest
// rewrite under file patterns with distribution repositories, compare-and-swap on
// the branch head) and the Renovate launch's reading of a nudge
// (activities/renovate: Components, provider, ConfigMap tier, source link,
// GenerateConfig). What the tenant's configuration asks for that it does not do
// it leaves to Renovate: OutcomeFallback, nothing written (support.go).
//
// Requests, results, errors and logs carry no secret.
package nudgewrite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/changegrouppr"
	"github.com/nudgeflow/nudgeflow/activities/renovate"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/contracts/nudgewriteapi"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/components"
	"github.com/nudgeflow/nudgeflow/internal/digestref"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
)

// Activities is the direct writer.
type Activities struct {
	// Kube reads the tenant's Renovate ConfigMaps.
	Kube client.Reader
	// PR connects to forges and rewrites digests (the ChangeGroup writer's).
	PR *changegrouppr.Activities
	// Launch reads a nudge as the Renovate launch does.
	Launch *renovate.Activities
}

// New returns the writer.
func New(kube client.Reader, pr *changegrouppr.Activities, launch *renovate.Activities) *Activities {
	return &Activities{Kube: kube, PR: pr, Launch: launch}
}

// Register registers WriteNudgePR under its contract name.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.WriteNudgePR, activity.RegisterOptions{Name: nudgewriteapi.WriteActivity})
}

// nudge is one request read from the cluster: everything the write needs.
type nudge struct {
	req nudgewriteapi.WriteRequest
	// launch is req as the Renovate launch's readers take it.
	launch    renovateapi.LaunchRequest
	target    *mirrorv1alpha1.Component
	nudging   *mirrorv1alpha1.Component
	repo      changegroupprapi.Repo
	platform  string
	opts      renovate.Options
	tier      string
	image     string // the built repository
	fileMatch []string
}

// WriteNudgePR writes one immediate nudge, or says why it leaves it to Renovate.
// It looks before it writes, so a retry converges: a branch already holding the
// build is not pushed again, an open pull request is not opened twice.
func (a *Activities) WriteNudgePR(ctx context.Context, req nudgewriteapi.WriteRequest) (nudgewriteapi.WriteResult, error) {
	image, err := validate(req)
	if err != nil {
		return nudgewriteapi.WriteResult{}, err
	}
	n, res, err := a.read(ctx, req, image)
	if err != nil || res.Outcome != "" {
		return res, err
	}
	// The commit identity is Renovate's gitAuthor of the credentials Connect
	// finds (renovate.BasicAuthIdentity); one Renovate resolves itself is not
	// one the writer can make.
	var gitAuthor string
	basicAuth := false
	identity := func(provider string, repo forge.Repo, ba forge.BasicAuth) forge.Signature {
		basicAuth = true
		_, gitAuthor = renovate.BasicAuthIdentity(provider, repo.Host, ba.Username, ba.Password)
		return parseAuthor(gitAuthor)
	}
	f, clean, err := a.PR.ConnectAs(ctx, n.repo, components.Ref(n.target), identity)
	if err != nil {
		return nudgewriteapi.WriteResult{}, contractError(err)
	}
	if !basicAuth && n.platform == forge.ProviderGitHub {
		// The GitHub App's token (Renovate's first choice there): its commits are
		// the App's bot's, and Renovate's gitAuthor is build-service's App identity.
		gitAuthor = renovate.AppGitAuthor(f.Bot())
	}
	if sig := parseAuthor(gitAuthor); sig.Email == "" || !strings.EqualFold(f.Bot().Email, sig.Email) {
		return fallback("the forge credentials' commit identity is one only Renovate resolves"), nil
	}
	res, err = a.write(ctx, f, n, gitAuthor)
	if err != nil {
		return nudgewriteapi.WriteResult{}, contractError(clean(err))
	}
	return res, nil
}

// read reads the nudge from the cluster as the Renovate launch does; a result
// with an outcome (Fallback) ends the write before any credential is read.
func (a *Activities) read(ctx context.Context, req nudgewriteapi.WriteRequest, image string) (nudge, nudgewriteapi.WriteResult, error) {
	lr := renovateapi.LaunchRequest{Namespace: req.Namespace, WorkflowID: req.WorkflowID, Nudging: req.Nudging, Nudged: req.Nudged,
		Build: req.Build, HandedBackBy: req.HandedBackBy}
	target, nudging, err := renovate.ComponentsOf(ctx, a.Launch, lr)
	if err != nil {
		return nudge{}, nudgewriteapi.WriteResult{}, err
	}
	git := target.Spec.Source.GitSource
	if git == nil || git.URL == "" {
		return nudge{}, nudgewriteapi.WriteResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("component %s/%s has no spec.source.git.url to nudge", req.Namespace, req.Nudged), nudgewriteapi.ErrorTypeNotNudgeable, nil)
	}
	platform, _, err := renovate.Platform(git.URL, target.Annotations[mirrorv1alpha1.AnnotationGitProvider], req.HandedBackBy != "")
	if err != nil {
		return nudge{}, nudgewriteapi.WriteResult{}, temporal.NewNonRetryableApplicationError(err.Error(), nudgewriteapi.ErrorTypeNotNudgeable, nil)
	}
	opts, tier, err := renovate.ReadTier(ctx, a.Kube, req.Namespace, target)
	if err != nil {
		return nudge{}, nudgewriteapi.WriteResult{}, err
	}
	if why := unsupported(opts, platform); why != "" {
		activity.GetLogger(ctx).Info("leaving the nudge to Renovate", "namespace", req.Namespace, "nudging", req.Nudging,
			"nudged", req.Nudged, "configTier", tier, "reason", why)
		return nudge{}, fallback(why), nil
	}
	return nudge{req: req, launch: lr, target: target, nudging: nudging, platform: platform, opts: opts, tier: tier, image: image,
		repo:      changegroupprapi.Repo{Provider: platform, URL: git.URL, BaseBranch: git.Revision, Namespace: req.Namespace},
		fileMatch: renovate.FileMatch(opts, req.NudgeFiles)}, nudgewriteapi.WriteResult{}, nil
}

func fallback(why string) nudgewriteapi.WriteResult {
	return nudgewriteapi.WriteResult{Outcome: nudgewriteapi.OutcomeFallback, Reason: why}
}

// validate refuses a request no retry can serve, and returns the built image
// repository (read from IMAGE_URL only for a build signalled before builds
// carried their Image).
func validate(req nudgewriteapi.WriteRequest) (string, error) {
	image := req.Image
	if image == "" {
		image = digestref.Repository(req.ImageURL)
	}
	switch {
	case req.Namespace == "" || req.Nudging == "" || req.Nudged == "":
		return "", temporal.NewNonRetryableApplicationError("the request names no namespace, nudging or nudged component", nudgewriteapi.ErrorTypeNotNudgeable, nil)
	case !digestref.ValidImage(image) || !digestref.ValidDigest(req.Digest):
		return "", temporal.NewNonRetryableApplicationError(fmt.Sprintf("image %q or digest %q is not valid", image, req.Digest), nudgewriteapi.ErrorTypeNotNudgeable, nil)
	}
	return image, nil
}

// parseAuthor reads "Name <email>" (zero when it is not that).
func parseAuthor(s string) forge.Signature {
	i := strings.LastIndex(s, " <")
	if i <= 0 || !strings.HasSuffix(s, ">") {
		return forge.Signature{}
	}
	return forge.Signature{Name: s[:i], Email: s[i+2 : len(s)-1]}
}

// contractError gives the errors a retry never fixes the contract's types: a
// repository the namespace does not own, or a forge's refusal for good, is
// Refused; a repository nudgeflow cannot write to is NotNudgeable; a missing
// credential is NoCredentials (changegrouppr's type of the same name). Retryable
// errors (rate limits with their delay, 5xx, a moved branch) pass unchanged.
func contractError(err error) error {
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) {
		return err
	}
	switch {
	case slices.Contains(nudgewriteapi.NonRetryableErrorTypes, ae.Type()):
		return err
	case ae.Type() == "InvalidRepository" || ae.Type() == "UnsupportedProvider" || ae.Type() == "BaseBranchMissing":
		return temporal.NewNonRetryableApplicationError(err.Error(), nudgewriteapi.ErrorTypeNotNudgeable, nil)
	case ae.Type() == ownership.ErrorType || ae.NonRetryable():
		// The namespace does not own the repository, or the forge refused a
		// request for good (a 4xx): the same write is refused again.
		return temporal.NewNonRetryableApplicationError(err.Error(), nudgewriteapi.ErrorTypeRefused, nil)
	}
	return err
}
