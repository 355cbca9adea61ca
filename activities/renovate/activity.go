// Package renovate launches Konflux-style Renovate nudge PipelineRuns: one
// PipelineRun per (nudging build, nudged component, attempt) with a deterministic
// name, the labels and annotations integration-service and build-service use, a
// Renovate config generated like theirs from the two ConfigMap tiers and the
// nudging component's distribution repositories, registry host rules from its
// image pull credentials, the cluster's trusted CA bundle, and a config ConfigMap,
// token Secret and CA ConfigMap named like the PipelineRun and owned by it, so they
// are garbage collected with it. It also reads a run's end (the polling fallback)
// and records nudge outcomes as Events on the nudged Component.
//
// Requests and results carry no secret: the git token and the registry password
// are read here and written only into the owned Secret.
package renovate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/components"
	"github.com/nudgeflow/nudgeflow/internal/digestref"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	ghforge "github.com/nudgeflow/nudgeflow/internal/forge/github"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
	"github.com/nudgeflow/nudgeflow/internal/releases"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// Labels and annotations of nudge PipelineRuns, plus nudgeflow's own keys the
// bridge uses to route a run's end to its workflow. Konflux's are the old
// (appstudio) forms of internal/konflux's Keys, kept for the tests that play an
// old-model service: nudgeflow reads them with konflux.NudgeTypeKey and friends
// (new form first) and writes both forms on its runs (ADR 69 phase 1).
const (
	LabelType                  = konflux.LabelNudgeType
	LabelTypeNudge             = konflux.NudgeTypeValue
	AnnotationNudgedComponents = konflux.AnnotationNudged
	AnnotationNudgingComponent = konflux.AnnotationNudging
	AnnotationNudgingImage     = konflux.AnnotationNudgingImg
	AnnotationNudgingPipeline  = konflux.AnnotationNudgingPLR
	AnnotationNudgingCommit    = konflux.AnnotationNudgingSHA
	LabelManagedBy             = renovaterun.LabelManagedBy
	LabelKueueQueue            = renovaterun.LabelKueueQueue
	ManagedByNudgeflow         = renovaterun.ManagedByNudgeflow
	AnnotationWorkflowID       = konflux.AnnotationWorkflowID
	AnnotationAttempt          = "nudgeflow.konflux-ci.dev/attempt"
	DefaultImage               = "quay.io/konflux-ci/mintmaker-renovate-image:29a2f31"
	tokenKey                   = "token_0"
	hostRulesKey               = "host_rules"
	secretEnvPrefix            = "TOKEN_"
	configMountPath            = "/configs"
	nonRetryableTargetMissing  = renovateapi.ErrorTypeTargetMissing
	nonRetryableNotNudgeable   = renovateapi.ErrorTypeNotNudgeable
	nonRetryableNoCredentials  = renovateapi.ErrorTypeNoCredentials
	nonRetryableNameConflict   = renovateapi.ErrorTypeNameConflict
	nonRetryableRefused        = renovateapi.ErrorTypeRefused
)

// Activities holds the clients the activities use.
type Activities struct {
	Kube ctrlclient.Client
	// Image is the Renovate image; DefaultImage when empty.
	Image string
	// OperatorNamespace is nudgeflow's own namespace, where a ConfigMap labelled
	// config.openshift.io/inject-trusted-cabundle=true holds the cluster's trusted
	// CA bundle (build-service looks in its own namespace the same way). Empty: no
	// bundle is looked for.
	OperatorNamespace string
	// GitHubApp is the Secret of the GitHub App whose repository-scoped
	// installation tokens Renovate pushes with on GitHub (build-service's
	// pipelines-as-code-secret when zero).
	GitHubApp types.NamespacedName
	// Transport makes the GitHub App's calls (http.DefaultTransport when nil).
	Transport http.RoundTripper
	// Ownership says whether a namespace owns the repository it nudges, which it
	// must before a credential is read or a token minted; nil: a checker of Kube
	// with OperatorNamespace's binding ConfigMap, recording Events.
	Ownership *ownership.Checker
	// AppTokens mints and caches the GitHub App's tokens
	// (ghforge.DefaultAppTokens when nil).
	AppTokens *ghforge.AppTokens
	// StandInForge says which forge hosts (host:port) only stand-in runs go to: a
	// test world's runs there end by a status a test writes and push nothing, and
	// CheckDelivery answers what the run's log said (DeliveryRequest.LogSaysOK)
	// instead of asking the forge. Test worlds only; nil in a deployment.
	StandInForge func(host string) bool

	ownership ownership.Lazy
}

// owner is the ownership checker, made once (it keeps an index of claims).
func (a *Activities) owner() *ownership.Checker {
	return a.ownership.Get(a.Ownership, func() *ownership.Checker {
		return &ownership.Checker{Reader: a.Kube, BindingNamespace: a.OperatorNamespace, Events: a.Kube}
	})
}

// New returns the activities with the Renovate image from RENOVATE_IMAGE (as
// build-service and integration-service read it) or the default.
func New(kube ctrlclient.Client, operatorNamespace string) *Activities {
	return &Activities{Kube: kube, Image: os.Getenv("RENOVATE_IMAGE"), OperatorNamespace: operatorNamespace}
}

// LaunchRenovate creates the run, its config ConfigMap, token Secret and, when the
// cluster has one, trusted CA ConfigMap (all owned by the run). It looks before it
// writes, so a retry changes nothing.
func (a *Activities) LaunchRenovate(ctx context.Context, req LaunchRequest) (LaunchResult, error) {
	log := activity.GetLogger(ctx)
	target, nudging, err := a.components(ctx, req)
	if err != nil {
		return LaunchResult{}, err
	}
	git := target.Spec.Source.GitSource
	if git == nil || git.URL == "" {
		return LaunchResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("component %s/%s has no spec.source.git.url to nudge", req.Namespace, req.Nudged), nonRetryableNotNudgeable, nil)
	}
	// build-service's rule: a host that names no forge, without the git-provider
	// annotation, is refused. A build a ChangeGroup hands back goes where the
	// group's pull request for this target went (forge.ProviderOrGitHub), or it
	// would fail for good after the group had worked there.
	providerOf := forge.ProviderOf
	if req.HandedBackBy != "" {
		providerOf = forge.ProviderOrGitHub
	}
	forge, err := parseForge(git.URL, target.Annotations[mirrorv1alpha1.AnnotationGitProvider], providerOf)
	if err != nil {
		return LaunchResult{}, temporal.NewNonRetryableApplicationError(err.Error(), nonRetryableNotNudgeable, err)
	}
	// Before any credential is read: the namespace must own the repository its
	// Component names (a tenant writes that URL). A refusal records a Warning Event
	// on the target and fails the launch for good; the Nudge reports the build.
	if err := a.owner().Require(ctx, req.Namespace, git.URL, componentRef(target)); err != nil {
		if ownership.IsRefusal(err) {
			log.Warn("refused: the namespace does not own the repository", "namespace", req.Namespace, "nudged", req.Nudged, "repo", git.URL, "error", err)
		}
		return LaunchResult{}, err
	}
	scm, err := a.scmCredential(ctx, req.Namespace, forge)
	if err != nil {
		return LaunchResult{}, err
	}
	cred, gitAuthor := scm.cred, scm.gitAuthor
	opts, tier, err := ReadTier(ctx, a.Kube, req.Namespace, target)
	if err != nil {
		return LaunchResult{}, err
	}
	distribution, err := a.distributionRepos(ctx, req)
	if err != nil {
		return LaunchResult{}, err
	}
	hostRules, err := a.hostRules(ctx, req.Namespace, nudging)
	if err != nil {
		return LaunchResult{}, err
	}
	caBundle, caSource, err := a.trustedCA(ctx)
	if err != nil {
		return LaunchResult{}, err
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
		SimpleBranch:      simpleBranch(nudging),
		FileMatch:         FileMatch(opts, req.NudgeFiles),
		Options:           opts,
		BuiltAt:           req.BuiltAt,
		Run:               req.Name,
	})
	cfgJSON, err := cfg.JSON()
	if err != nil {
		return LaunchResult{}, err
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
			AnnotationTokenRepository: forge.scheme + "://" + forge.host + "/" + forge.repository}
	}
	if hostRules != "" {
		// The whole rule, password included, stays in the Secret: the command only
		// names the variable (build-service writes the username and host into it).
		secretData[hostRulesKey] = hostRules
	}

	plr := a.pipelineRun(req, hostRules != "", caBundle != "")
	plr.Annotations[AnnotationBranch] = BranchKey(forge.host, forge.repository, git.Revision, req.Nudging, req.Nudged, simpleBranch(nudging))
	withBranchCheck(plr, req.BuiltAt, branchCheckOf(forge, req.Nudging, req.Nudged, simpleBranch(nudging)))
	created := true
	if err := a.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(plr), &tektonv1.PipelineRun{}); apierrors.IsNotFound(err) {
		// Only a run not created yet is refused: a retried activity keeps its run.
		if err := a.refuseIfSuperseded(ctx, req); err != nil {
			return LaunchResult{}, err
		}
	}
	if err := a.Kube.Create(ctx, plr); apierrors.IsAlreadyExists(err) {
		created = false
		if err := a.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(plr), plr); err != nil {
			return LaunchResult{}, fmt.Errorf("reading existing PipelineRun %s/%s: %w", req.Namespace, req.Name, err)
		}
		if plr.Annotations[AnnotationWorkflowID] != req.WorkflowID {
			return LaunchResult{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("PipelineRun %s/%s exists but belongs to %q", req.Namespace, req.Name, plr.Annotations[AnnotationWorkflowID]), nonRetryableNameConflict, nil)
		}
	} else if err != nil {
		if refused(err) {
			return LaunchResult{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("creating PipelineRun %s/%s: %v", req.Namespace, req.Name, err), nonRetryableRefused, nil)
		}
		return LaunchResult{}, fmt.Errorf("creating PipelineRun %s/%s: %w", req.Namespace, req.Name, err)
	}
	if err := a.completeAndRelease(ctx, req, plr, created, runObjects{config: cfgJSON, caBundle: caBundle, secret: secretData, secretAnnotations: secretAnnotations}); err != nil {
		return LaunchResult{}, a.withdraw(ctx, plr, err)
	}
	return LaunchResult{Name: req.Name, Created: created}, nil
}

// runObjects are what a run reads besides its spec: its Renovate config, the
// trusted CA bundle ("": none) and its Secret's data and annotations.
type runObjects struct {
	config            []byte
	caBundle          string
	secret            map[string]string
	secretAnnotations map[string]string
}

// completeAndRelease creates the run's ConfigMaps and Secret (owned by it) and
// releases it when it is still pending.
func (a *Activities) completeAndRelease(ctx context.Context, req LaunchRequest, plr *tektonv1.PipelineRun, created bool, objs runObjects) error {
	// A retry keeps the run an earlier attempt created: if that run mounts a CA
	// copy, the copy must exist, or its pod never starts.
	if !created && mountsTrustedCA(plr) && objs.caBundle == "" {
		err := a.Kube.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: CAConfigMapName(req.Name)}, &corev1.ConfigMap{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("PipelineRun %s/%s mounts the trusted CA bundle, but no ConfigMap labelled %s=true in %q holds one now",
				req.Namespace, req.Name, LabelInjectTrustedCABundle, a.OperatorNamespace)
		}
		if err != nil {
			return fmt.Errorf("reading ConfigMap %s/%s: %w", req.Namespace, CAConfigMapName(req.Name), err)
		}
	}
	// Owned by the run, so the garbage collector deletes them with it. No
	// blockOwnerDeletion (build-service sets none either): on OpenShift the
	// OwnerReferencesPermissionEnforcement admission plugin refuses it to whoever
	// may not update pipelineruns/finalizers, which the worker may not; it only
	// matters to a foreground deletion of the run, which nobody asks for.
	owner := []metav1.OwnerReference{{
		APIVersion: tektonv1.SchemeGroupVersion.String(), Kind: "PipelineRun",
		Name: plr.Name, UID: plr.UID,
	}}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: req.Name, Namespace: req.Namespace, OwnerReferences: owner,
			Labels: map[string]string{LabelManagedBy: ManagedByNudgeflow}},
		Data: map[string]string{configFile(req.Nudged): string(objs.config)},
	}
	if err := createOwned(ctx, a.Kube, cm, plr.UID); err != nil {
		return err
	}
	if objs.caBundle != "" {
		ca := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: CAConfigMapName(req.Name), Namespace: req.Namespace, OwnerReferences: owner,
				Labels: map[string]string{LabelManagedBy: ManagedByNudgeflow}},
			Data: map[string]string{CABundleKey: objs.caBundle},
		}
		if err := createOwned(ctx, a.Kube, ca, plr.UID); err != nil {
			return err
		}
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: req.Name, Namespace: req.Namespace, OwnerReferences: owner,
			Labels: map[string]string{LabelManagedBy: ManagedByNudgeflow}, Annotations: objs.secretAnnotations},
		Type:       corev1.SecretTypeOpaque,
		StringData: objs.secret,
	}
	if err := createOwned(ctx, a.Kube, secret, plr.UID); err != nil {
		return err
	}
	// Runs of older builds on the edge stop: they would write an older digest.
	// One look at the namespace's nudge runs serves both decisions below.
	runs, err := nudgeRuns(ctx, a.Kube, req.Namespace)
	if err != nil {
		return err
	}
	if err := a.supersedeOlder(ctx, req, runs); err != nil {
		return err
	}
	// The run was created pending so it never starts before its ConfigMaps and
	// Secret exist; now release it (releasable), when its branch is free
	// (branchqueue.go; else the bridge starts it when the branch's run ends). Not a
	// run the bridge's interceptor held for a ChangeGroup at admission: it is
	// pending only because a webhook called after the interceptor (tekton-kueue's)
	// re-pended it, and releasing it would start a nudge the group collects. Nor a
	// run Kueue queues (tekton-kueue labelled it with its queue and pended it):
	// Kueue admits it when the quota allows, and releasing it would jump the queue;
	// Kueue may admit it before its ConfigMap and Secret exist, as it may
	// build-service's and integration-service's runs; the pod waits for them.
	if releasable(plr) {
		started, blocker, err := startOrQueue(ctx, a.Kube, plr, runs)
		if err != nil {
			return err
		}
		switch {
		case plr.Annotations[AnnotationSupersededBy] != "":
			activity.GetLogger(ctx).Info("stopped the Renovate run before it started: a newer build's run of the edge exists",
				"pipelineRun", req.Name, "supersededBy", plr.Annotations[AnnotationSupersededBy])
		case !started:
			activity.GetLogger(ctx).Info("Renovate run waits for its branch", "pipelineRun", req.Name, "waitsFor", blocker,
				"branch", plr.Annotations[AnnotationBranch])
		}
	} else if _, err := stopIfSupersededInKueue(ctx, a.Kube, plr, runs); err != nil {
		return err
	}
	return nil
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
func (a *Activities) distributionRepos(ctx context.Context, req LaunchRequest) ([]string, error) {
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

func (a *Activities) components(ctx context.Context, req LaunchRequest) (target, nudging *mirrorv1alpha1.Component, err error) {
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

// simpleBranch reads the nudging component's build-nudge-simple-branch annotation
// as build-service does: exactly "true".
// nudgeRunLabels are the labels of nudgeflow's Renovate runs.
func nudgeRunLabels() map[string]string {
	return konflux.NudgeTypeKey.Set(map[string]string{LabelManagedBy: ManagedByNudgeflow}, konflux.NudgeTypeValue)
}

// nudgeRunAnnotations are the annotations of nudgeflow's Renovate run for req.
func nudgeRunAnnotations(req LaunchRequest) map[string]string {
	a := map[string]string{AnnotationWorkflowID: req.WorkflowID, AnnotationAttempt: fmt.Sprint(req.Attempt)}
	konflux.NudgedKey.Set(a, req.Nudged)
	konflux.NudgingKey.Set(a, req.Nudging)
	konflux.NudgingImageKey.Set(a, req.ImageURL)
	konflux.NudgingPipelineKey.Set(a, req.BuildPipelineRun)
	if sha := CommitFromRepoLink(req.RepoAtSHA); sha != "" {
		konflux.NudgingCommitKey.Set(a, sha)
	}
	return a
}

func simpleBranch(nudging *mirrorv1alpha1.Component) bool {
	return konflux.NudgeSimpleBranchKey.Get(nudging.Annotations) == "true"
}

func configFile(nudged string) string { return nudged + ".json" }

// createOwned creates one of a run's objects, or keeps the one an earlier try of
// this activity created for the same run. One owned by anything else is what a
// deleted run of the same name (withdrawn, or deleted by a person while pending)
// left to the garbage collector, which will delete it under the new run: the
// launch fails, retryably, until the collector has.
func createOwned(ctx context.Context, c ctrlclient.Client, obj ctrlclient.Object, owner types.UID) error {
	kind := reflect.TypeOf(obj).Elem().Name()
	err := c.Create(ctx, obj)
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	existing := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(ctrlclient.Object)
	if err := c.Get(ctx, ctrlclient.ObjectKeyFromObject(obj), existing); err != nil {
		return fmt.Errorf("reading existing %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	owners := []string{}
	for _, ref := range existing.GetOwnerReferences() {
		if ref.UID == owner {
			return nil
		}
		owners = append(owners, fmt.Sprintf("%s %s (uid %s)", ref.Kind, ref.Name, ref.UID))
	}
	return fmt.Errorf("%s %s/%s exists, owned by %v, not by this PipelineRun (uid %s): it is left over from a deleted run of the same name and waits for the garbage collector",
		kind, obj.GetNamespace(), obj.GetName(), owners, owner)
}

func createOrKeep(ctx context.Context, c ctrlclient.Client, obj ctrlclient.Object) error {
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// renovateCommand is build-service's command line for one target. Host rules come
// from the run's Secret through the environment: the password never appears in
// the command or the config (build-service passes them by environment too,
// "because we can't resolve variable in json config").
func renovateCommand(nudged string, withHostRules bool) string {
	cmd := fmt.Sprintf("RENOVATE_X_GITLAB_MERGE_REQUEST_DELAY=5000 RENOVATE_X_GITLAB_AUTO_MERGEABLE_CHECK_ATTEMPS=11 "+
		"RENOVATE_PR_HOURLY_LIMIT=0 RENOVATE_PR_CONCURRENT_LIMIT=0 RENOVATE_TOKEN=$%s%s RENOVATE_CONFIG_FILE=%s/%s",
		secretEnvPrefix, tokenKey, configMountPath, configFile(nudged))
	if withHostRules {
		cmd += fmt.Sprintf(` RENOVATE_HOST_RULES="$%s%s"`, secretEnvPrefix, hostRulesKey)
	}
	return cmd + " renovate"
}

func mountsTrustedCA(plr *tektonv1.PipelineRun) bool {
	if plr.Spec.PipelineSpec == nil {
		return false
	}
	for _, t := range plr.Spec.PipelineSpec.Tasks {
		if t.TaskSpec == nil {
			continue
		}
		for _, v := range t.TaskSpec.Volumes {
			if v.Name == caVolumeName {
				return true
			}
		}
	}
	return false
}

func (a *Activities) pipelineRun(req LaunchRequest, withHostRules, withCA bool) *tektonv1.PipelineRun {
	plr := a.newPipelineRun(req, withHostRules, withCA)
	if req.HandedBackBy != "" {
		plr.Annotations[konflux.AnnotationHandedBackBy] = req.HandedBackBy
	}
	if !req.BuiltAt.IsZero() {
		plr.Annotations[AnnotationBuiltAt] = req.BuiltAt.UTC().Format(time.RFC3339Nano)
	}
	return plr
}

func (a *Activities) newPipelineRun(req LaunchRequest, withHostRules, withCA bool) *tektonv1.PipelineRun {
	image := a.Image
	if image == "" {
		image = DefaultImage
	}
	mounts := []corev1.VolumeMount{{Name: "configs", MountPath: configMountPath}}
	volumes := []corev1.Volume{{Name: "configs", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: req.Name}}}}}
	if withCA {
		// build-service mounts the whole pem directory; a subPath replaces only the
		// bundle and keeps the image's other trust files there.
		mounts = append(mounts, corev1.VolumeMount{Name: caVolumeName, MountPath: CAMountPath, SubPath: caFileName, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: caVolumeName, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: CAConfigMapName(req.Name)},
			Items:                []corev1.KeyToPath{{Key: CABundleKey, Path: caFileName}},
		}}})
	}
	return &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{
			Name: req.Name, Namespace: req.Namespace,
			// integration-service labels its nudge runs with the type label only
			// (tekton/nudging/nudge_pipeline.go); Konflux's queues and quotas select
			// nudge runs by it. No other Konflux label: pipelines.appstudio.openshift.io/type
			// or appstudio.openshift.io/component would make build-service and
			// integration-service take the run for a build (and nudge from it).
			// Konflux's keys go in both forms (ADR 69 phase 1): a reader of either
			// (Kueue's rules, a peer's interceptor, nudgeflow's own) finds them.
			Labels:      nudgeRunLabels(),
			Annotations: nudgeRunAnnotations(req),
		},
		Spec: tektonv1.PipelineRunSpec{
			Status: tektonv1.PipelineRunSpecStatusPending,
			PipelineSpec: &tektonv1.PipelineSpec{
				Tasks: []tektonv1.PipelineTask{{
					Name: "renovate",
					TaskSpec: &tektonv1.EmbeddedTask{TaskSpec: tektonv1.TaskSpec{
						Steps: []tektonv1.Step{{
							Name:    "renovate",
							Image:   image,
							Command: []string{"bash", "-c", withOutcomeCheck(renovateCommand(req.Nudged, withHostRules))},
							EnvFrom: []corev1.EnvFromSource{{Prefix: secretEnvPrefix, SecretRef: &corev1.SecretEnvSource{
								LocalObjectReference: corev1.LocalObjectReference{Name: req.Name}}}},
							// build-service always runs Renovate with debug logs: a nudge that
							// opened no PR is explained only there.
							Env:          []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}},
							VolumeMounts: mounts,
							SecurityContext: &corev1.SecurityContext{
								Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
								RunAsNonRoot:             ptr.To(true),
								AllowPrivilegeEscalation: ptr.To(false),
								SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
							},
						}},
						Volumes: volumes,
						Results: []tektonv1.TaskResult{{Name: ResultOutcome, Type: tektonv1.ResultsTypeString,
							Description: "ok, registry-auth-failed when Renovate could not authenticate to the image registry, image-lookup-failed when it could not look the image up otherwise, " +
								"repository-not-updated when it did not write the branch, pr-not-opened when it opened no pull request, " +
								"superseded:<run> when the nudge branch carried a newer build and Renovate did not run"}},
					}},
				}},
				Results: []tektonv1.PipelineResult{{Name: ResultOutcome, Type: tektonv1.ResultsTypeString,
					Value: *tektonv1.NewStructuredValues("$(tasks.renovate.results." + ResultOutcome + ")")}},
			},
			TaskRunTemplate: tektonv1.PipelineTaskRunTemplate{ServiceAccountName: "build-pipeline-" + req.Nudging},
		},
	}
}

// RenovateRunStatus is the polling fallback for the bridge's run-finished signal.
// A run still waiting to start gets its GitHub App token renewed when it nears
// expiry (refreshRunToken).
func (a *Activities) RenovateRunStatus(ctx context.Context, namespace, name string) (RunStatus, error) {
	var plr tektonv1.PipelineRun
	err := a.Kube.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &plr)
	if apierrors.IsNotFound(err) {
		return RunStatus{Name: name, Done: true, Gone: true, Reason: "NotFound", Message: "the PipelineRun was deleted before it ended"}, nil
	}
	if err != nil {
		return RunStatus{}, fmt.Errorf("reading PipelineRun %s/%s: %w", namespace, name, err)
	}
	s := StatusOf(&plr)
	if !s.Done && waiting(&plr) {
		// A run may wait longer than its App token lives: renew it before it starts.
		// A failure is tried again at the next poll; the status is what was asked.
		if err := a.refreshRunToken(ctx, &plr); err != nil {
			activity.GetLogger(ctx).Warn("the App token of a waiting Renovate run was not renewed; trying again at the next poll",
				"pipelineRun", name, "namespace", namespace, "error", err)
		}
	}
	return s, nil
}

// EventName is deterministic per (workflow, attempt, reason): a retried activity
// never records an outcome twice.
func EventName(o Outcome) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d/%s", o.WorkflowID, o.Attempt, o.Reason)))
	return fmt.Sprintf("%s.nudge-%s", o.Component, hex.EncodeToString(sum[:])[:16])
}

// RecordNudgeOutcome writes the Event (idempotent by name).
func (a *Activities) RecordNudgeOutcome(ctx context.Context, o Outcome) error {
	var comp mirrorv1alpha1.Component
	if err := components.Get(ctx, a.Kube, o.Namespace, o.Component, &comp); err != nil {
		if apierrors.IsNotFound(err) {
			activity.GetLogger(ctx).Warn("nudged component is gone; outcome not recorded as an event", "component", o.Component, "reason", o.Reason)
			return nil
		}
		return fmt.Errorf("reading component %s/%s: %w", o.Namespace, o.Component, err)
	}
	kind := corev1.EventTypeNormal
	if o.Warning {
		kind = corev1.EventTypeWarning
	}
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: EventName(o), Namespace: o.Namespace,
			Labels:      map[string]string{LabelManagedBy: ManagedByNudgeflow},
			Annotations: map[string]string{AnnotationWorkflowID: o.WorkflowID, AnnotationAttempt: fmt.Sprint(o.Attempt)}},
		// The kind read (either Component kind): kubectl describe finds it by UID.
		InvolvedObject: *components.Ref(&comp),
		Reason:         o.Reason, Message: o.Message, Type: kind,
		Source:         corev1.EventSource{Component: "nudgeflow"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	return createOrKeep(ctx, a.Kube, ev)
}

type forgeInfo struct {
	platform, scheme, host, repository, endpoint string
}

// parseForge derives Renovate's platform and endpoint from the git URL, with the
// component's git-provider annotation taking precedence, by providerOf
// (forge.ProviderOf is build-service's rule).
// The endpoint is each forge's REST API root. build-service writes
// https://api.<host>/ for every GitHub host, which is right only for github.com:
// GitHub Enterprise serves its API at https://<host>/api/v3/, so that is used for
// any other host.
//
// The endpoint keeps the git URL's scheme when that is plain http (build-service
// always writes https://): a forge served over http only (the dev stack's
// Gitea, a forge on a private network) has no https endpoint for Renovate to
// reach, and the token would go over http to clone anyway. Every other scheme
// gives https, and github.com is always https.
func parseForge(gitURL, providerAnnotation string, providerOf func(annotation, host string) string) (forgeInfo, error) {
	u, err := url.Parse(gitURL)
	if err != nil || u.Host == "" {
		return forgeInfo{}, fmt.Errorf("git url %q is not a URL with a host", gitURL)
	}
	f := forgeInfo{scheme: u.Scheme, host: u.Host, repository: strings.Trim(strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git"), "/")}
	apiScheme := "https"
	if strings.EqualFold(u.Scheme, "http") {
		apiScheme = "http"
	}
	root := apiScheme + "://" + u.Host
	switch providerOf(providerAnnotation, u.Hostname()) {
	case "github":
		f.platform, f.endpoint = "github", root+"/api/v3/"
		if strings.EqualFold(u.Hostname(), "github.com") {
			f.endpoint = "https://api.github.com/"
		}
	case "gitlab":
		f.platform, f.endpoint = "gitlab", root+"/api/v4/"
	case "forgejo":
		f.platform, f.endpoint = "forgejo", root+"/api/v1/"
	default:
		return forgeInfo{}, fmt.Errorf("cannot tell the git provider of %q: set the component's git-provider annotation", gitURL)
	}
	return f, nil
}
