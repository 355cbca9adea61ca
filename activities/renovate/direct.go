package renovate

import (
	"context"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
)

// What the direct writer (activities/nudgewrite) reuses of a launch, so that both
// writers read a nudge alike: the same Components, provider rule, source link,
// distribution repositories and branch, and the same config (GenerateConfig)
// from them.

// These are functions, not methods: the worker registers every exported method of
// Activities as an activity.

// ComponentsOf reads the nudged (target) and nudging Components of req, with the
// launch's errors (a missing one is a non-retryable TargetMissing).
func ComponentsOf(ctx context.Context, a *Activities, req renovateapi.LaunchRequest) (target, nudging *mirrorv1alpha1.Component, err error) {
	return a.components(ctx, req)
}

// Platform is Renovate's platform of a git URL (github, gitlab, forgejo) and its
// API endpoint, by the launch's rule: the git-provider annotation, else the host;
// a build a ChangeGroup handed back falls back to GitHub.
func Platform(gitURL, providerAnnotation string, handedBack bool) (platform, endpoint string, err error) {
	providerOf := forgeProviderOf(handedBack)
	f, err := parseForge(gitURL, providerAnnotation, providerOf)
	return f.platform, f.endpoint, err
}

// SourceLinkOf is what the nudge names as the image's source (the PR header's
// "Image created from '<link>'").
func SourceLinkOf(ctx context.Context, a *Activities, req renovateapi.LaunchRequest, nudging *mirrorv1alpha1.Component) string {
	return a.sourceLink(ctx, req, nudging)
}

// DistributionReposOf are the repositories the nudging component is released to.
func DistributionReposOf(ctx context.Context, a *Activities, req renovateapi.LaunchRequest) ([]string, error) {
	return a.distributionRepos(ctx, req)
}
