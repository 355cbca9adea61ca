package renovate

import (
	"context"
	"errors"
	"fmt"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/components"
	"github.com/nudgeflow/nudgeflow/internal/digestref"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
	"github.com/nudgeflow/nudgeflow/internal/releases"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// LaunchRenovate creates the run, its config ConfigMap, token Secret and, when the
// cluster has one, trusted CA ConfigMap (all owned by the run). It looks before it
// writes, so a retry changes nothing.
func (a *Activities) LaunchRenovate(ctx context.Context, req renovateapi.LaunchRequest) (renovateapi.LaunchResult, error) {
	log := activity.GetLogger(ctx)
	target, nudging, err := a.components(ctx, req)
	if err != nil {
		return renovateapi.LaunchResult{}, err
	}
	git := target.Spec.Source.GitSource
	if git == nil || git.URL == "" {
		return renovateapi.LaunchResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("component %s/%s has no spec.source.git.url to nudge", req.Namespace, req.Nudged), nonRetryableNotNudgeable, nil)
	}
	// build-service's rule: a host that names no forge, without the git-provider
	// annotation, is refused. A build a ChangeGroup hands back goes where the
	// group's pull request for this target went (forge.ProviderOrGitHub), or it
	// would fail for good after the group had worked there.
	forge, err := parseForge(git.URL, target.Annotations[mirrorv1alpha1.AnnotationGitProvider], forgeProviderOf(req.HandedBackBy != ""))
	if err != nil {
		return renovateapi.LaunchResult{}, temporal.NewNonRetryableApplicationError(err.Error(), nonRetryableNotNudgeable, err)
	}
	// Before any credential is read: the namespace must own the repository its
	// Component names (a tenant writes that URL). A refusal records a Warning Event
	// on the target and fails the launch for good; the Nudge reports the build.
	if err := a.owner().Require(ctx, req.Namespace, git.URL, componentRef(target)); err != nil {
		if ownership.IsRefusal(err) {
			log.Warn("refused: the namespace does not own the repository", "namespace", req.Namespace, "nudged", req.Nudged, "repo", git.URL, "error", err)
		}
		return renovateapi.LaunchResult{}, err
	}
	scm, err := a.scmCredential(ctx, req.Namespace, forge)
	if err != nil {
		return renovateapi.LaunchResult{}, err
	}
	cred, gitAuthor := scm.cred, scm.gitAuthor
	opts, tier, err := ReadTier(ctx, a.Kube, req.Namespace, target)
	if err != nil {
		return renovateapi.LaunchResult{}, err
	}
	distribution, err := a.distributionRepos(ctx, req)
	if err != nil {
		return renovateapi.LaunchResult{}, err
	}
	hostRules, err := a.hostRules(ctx, req.Namespace, nudging)
	if err != nil {
		return renovateapi.LaunchResult{}, err
	}
	caBundle, caSource, err := a.trustedCA(ctx)
	if err != nil {
		return renovateapi.LaunchResult{}, err
	}
	req.RepoAtSHA = a.sourceLink(ctx, req, nudging)
	built := digestref.ParseReference(req.ImageURL)
	cfg := GenerateConfig(ConfigInput{
		Platform:          forge.platform,
		Endpoint:          forge.endpoint,
		Username:          cred.Username,
		GitAuthor:         gitAuthor,
		Repository:        forge.repository,
		BaseBranch:        git.Revision,
		Nudging:           req.Nudging,
		Nudged:            req.Nudged,
		BuiltRepo:         built.Repository,
		BuiltTag:          built.Tag,
		DistributionRepos: distribution,
		RepoAtSHA:         req.RepoAtSHA,
		SimpleBranch:      SimpleBranch(nudging),
		FileMatch:         FileMatch(opts, req.NudgeFiles),
		Options:           opts,
		BuiltAt:           req.BuiltAt,
		Run:               req.Name,
	})
	cfgJSON, err := cfg.JSON()
	if err != nil {
		return renovateapi.LaunchResult{}, err
	}
	log.Info("launching Renovate nudge", "pipelineRun", req.Name, "namespace", req.Namespace,
		"nudging", req.Nudging, "nudged", req.Nudged, "configTier", tier, "credentialSecret", cred.SecretName,
		"distributionRepos", distribution, "registryHostRules", hostRules != "", "trustedCA", caSource)

	secretData := map[string]string{tokenKey: cred.Password}
	var secretAnnotations map[string]string
	if !scm.expires.IsZero() {
		// An App token expires: what refreshRunToken needs to renew it while the
		// run waits (never the token itself).
		secretAnnotations = map[string]string{AnnotationTokenExpires: scm.expires.UTC().Format(time.RFC3339),
			annotationTokenRepository: forge.scheme + "://" + forge.host + "/" + forge.repository}
	}
	if hostRules != "" {
		// The whole rule, password included, stays in the Secret: the command only
		// names the variable (build-service writes the username and host into it).
		secretData[hostRulesKey] = hostRules
	}

	plr := a.pipelineRun(req, hostRules != "", caBundle != "")
	plr.Annotations[renovaterun.AnnotationBranch] = renovaterun.BranchKey(forge.host, forge.repository, git.Revision, req.Nudging, req.Nudged, SimpleBranch(nudging))
	withBranchCheck(plr, req.BuiltAt, branchCheckOf(forge, req.Nudging, req.Nudged, SimpleBranch(nudging)))
	created := true
	if err := a.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(plr), &tektonv1.PipelineRun{}); apierrors.IsNotFound(err) {
		// Only a run not created yet is refused: a retried activity keeps its run.
		if err := a.refuseIfSuperseded(ctx, req); err != nil {
			return renovateapi.LaunchResult{}, err
		}
	}
	if err := a.Kube.Create(ctx, plr); apierrors.IsAlreadyExists(err) {
		created = false
		if err := a.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(plr), plr); err != nil {
			return renovateapi.LaunchResult{}, fmt.Errorf("reading existing PipelineRun %s/%s: %w", req.Namespace, req.Name, err)
		}
		if plr.Annotations[AnnotationWorkflowID] != req.WorkflowID {
			return renovateapi.LaunchResult{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("PipelineRun %s/%s exists but belongs to %q", req.Namespace, req.Name, plr.Annotations[AnnotationWorkflowID]), nonRetryableNameConflict, nil)
		}
	} else if err != nil {
		if refused(err) {
			return renovateapi.LaunchResult{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("creating PipelineRun %s/%s: %v", req.Namespace, req.Name, err), nonRetryableRefused, nil)
		}
		return renovateapi.LaunchResult{}, fmt.Errorf("creating PipelineRun %s/%s: %w", req.Namespace, req.Name, err)
	}
	if err := a.completeAndRelease(ctx, req, plr, created, runObjects{config: cfgJSON, caBundle: caBundle, secret: secretData, secretAnnotations: secretAnnotations}); err != nil {
		return renovateapi.LaunchResult{}, a.withdraw(ctx, plr, err)
	}
	return renovateapi.LaunchResult{Name: req.Name, Created: created}, nil
}

// forgeProviderOf is the provider rule of a launch: build-service's
// (forge.ProviderOf), or, for a build a ChangeGroup handed back, GitHub when
// neither the annotation nor the host tells (forge.ProviderOrGitHub).
func forgeProviderOf(handedBack bool) func(annotation, host string) string {
	if handedBack {
		return forge.ProviderOrGitHub
	}
	return forge.ProviderOf
}

// withdraw deletes the run a launch could not release, if it is still pending,
// and returns why. Nobody would ever release it: it would wait forever, holding
// its name. Deleted, a retry of the activity creates it again from scratch, and a
// launch that fails for good leaves no run behind (the garbage collector deletes
// what it owned). A refusal (Forbidden, Invalid: RBAC, an admission policy or
// webhook) comes back on every try, so it is not retried; anything else is. A run
// no longer pending (released, or cancelled by a ChangeGroup's hold) is left alone.
func (a *Activities) withdraw(ctx context.Context, plr *tektonv1.PipelineRun, cause error) error {
	if plr.Spec.Status != tektonv1.PipelineRunSpecStatusPending {
		return cause
	}
	// The UID precondition: never delete a run of the same name this launch did not see.
	err := a.Kube.Delete(ctx, plr, ctrlclient.Preconditions{UID: &plr.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		// Still pending: retried, the launch deletes or releases it then. (Errors
		// here carry their causes as text: the Nudge workflow writes the last one
		// into an Event, and Temporal would repeat each error of a wrapped chain.)
		return fmt.Errorf("%v; deleting the pending PipelineRun %s/%s failed too, so it stays pending until the launch is retried: %v",
			cause, plr.Namespace, plr.Name, err)
	}
	activity.GetLogger(ctx).Warn("deleted the Renovate run the launch could not release", "pipelineRun", plr.Name,
		"namespace", plr.Namespace, "error", cause)
	msg := fmt.Sprintf("deleted the pending PipelineRun %s/%s, which could not be released: %v", plr.Namespace, plr.Name, cause)
	if refused(cause) {
		return temporal.NewNonRetryableApplicationError(msg, nonRetryableRefused, nil)
	}
	return errors.New(msg)
}

// refused: the API server refused the write itself (RBAC, an admission plugin,
// policy or webhook denial, a schema error): the same request is refused again.
func refused(err error) bool { return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) }

// distributionRepos are the repositories the nudging component's images are
// released to, which Renovate must rewrite too: the request's (old histories
// carry them), else its ReleasePlanAdmissions'. An admission whose data cannot
// be read is logged and skipped, as build-service does.
func (a *Activities) distributionRepos(ctx context.Context, req renovateapi.LaunchRequest) ([]string, error) {
	if len(req.DistributionRepos) > 0 {
		return req.DistributionRepos, nil
	}
	repos, problems, err := releases.Repositories(ctx, a.Kube, req.Namespace, req.Nudging)
	if err != nil {
		return nil, fmt.Errorf("reading the distribution repositories of %s/%s: %w", req.Namespace, req.Nudging, err)
	}
	for _, p := range problems {
		activity.GetLogger(ctx).Warn("skipped a ReleasePlanAdmission whose data cannot be read",
			"admission", p.Admission, "origin", req.Namespace, "component", req.Nudging, "error", p.Err)
	}
	return repos[req.Nudging], nil
}

func (a *Activities) components(ctx context.Context, req renovateapi.LaunchRequest) (target, nudging *mirrorv1alpha1.Component, err error) {
	target, nudging = &mirrorv1alpha1.Component{}, &mirrorv1alpha1.Component{}
	for _, c := range []struct {
		name string
		into *mirrorv1alpha1.Component
	}{{req.Nudged, target}, {req.Nudging, nudging}} {
		// Either Component kind (components.Get: the appstudio one while it exists).
		err := components.Get(ctx, a.Kube, req.Namespace, c.name, c.into)
		if apierrors.IsNotFound(err) {
			return nil, nil, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("component %s/%s does not exist", req.Namespace, c.name), nonRetryableTargetMissing, err)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading component %s/%s: %w", req.Namespace, c.name, err)
		}
	}
	return target, nudging, nil
}

// ReadTier reads the nudged component's ConfigMap tier: the ConfigMap its
// annotation names REPLACES the namespace-wide one; a named ConfigMap that is
// missing gives the built-in defaults (no fallback to the namespace-wide one). It
// returns which tier applied, for logs and tests.
func ReadTier(ctx context.Context, r ctrlclient.Reader, namespace string, nudged *mirrorv1alpha1.Component) (Options, string, error) {
	name, tier := NamespaceConfigMap, "namespace"
	if n := konflux.NudgeRenovateConfigMapKey.Get(nudged.Annotations); n != "" {
		name, tier = n, "component"
	}
	var cm corev1.ConfigMap
	err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &cm)
	if apierrors.IsNotFound(err) {
		return Options{}, "defaults", nil
	}
	if err != nil {
		return Options{}, "", fmt.Errorf("reading Renovate ConfigMap %s/%s: %w", namespace, name, err)
	}
	return ParseOptions(cm.Data), tier + ":" + name, nil
}
