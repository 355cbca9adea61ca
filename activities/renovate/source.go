package renovate

import (
	"context"
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/activity"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// sourceLink is what the nudge names as the image's source ("Image created from
// '<link>'" in the PR and commit, and the run's nudging-commit annotation): the
// request's link (the build's repo annotation, or Pipelines as Code's sha on its
// repository, konflux.SourceLink), else Pipelines as Code's sha on the build
// PipelineRun with the nudging Component's repository (a request recorded before
// the bridge fell back to it, or a build without PaC's repo-url), else the
// nudging Component's repository without a commit. Never "" while the Component
// names a repository: an empty source told the PR's reader nothing.
func (a *Activities) sourceLink(ctx context.Context, req renovateapi.LaunchRequest, nudging *mirrorv1alpha1.Component) string {
	if req.RepoAtSHA != "" {
		return req.RepoAtSHA
	}
	repoURL := ""
	if git := nudging.Spec.Source.GitSource; git != nil {
		repoURL = strings.TrimSuffix(strings.TrimSuffix(git.URL, "/"), ".git")
	}
	if req.BuildPipelineRun != "" {
		var build tektonv1.PipelineRun
		err := a.Kube.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: req.BuildPipelineRun}, &build)
		switch {
		case err == nil:
			if link := konflux.SourceLink(build.Annotations, repoURL); link != "" {
				return link
			}
		case !apierrors.IsNotFound(err):
			// Best effort: the link is text in the PR, and the repository alone
			// still names the source.
			activity.GetLogger(ctx).Warn("could not read the build PipelineRun for its commit; the nudge names the repository only",
				"namespace", req.Namespace, "pipelineRun", req.BuildPipelineRun, "error", err)
		}
	}
	return repoURL
}
