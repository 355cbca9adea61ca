// Package prgroups is the bridge of ADR 29's PR groups: a succeeded pull-request
// build of a nudging component signals (with start) the PRGroup workflow of each of
// its edges' targets, keyed by (namespace, PR group, target); a forge event about a
// pull request signals the PRGroup workflows that pull request may originate (its
// repository's components' edges) and the one whose target PR it is.
//
// Pull-request builds never take the push path (bridge/builds ignores them) and no
// ChangeGroup ever holds them. The bridge is stateless: deterministic workflow IDs
// and the workflow's dedupe (by build UID) make a resync change nothing.
package prgroups

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	"github.com/nudgeflow/nudgeflow/internal/searchattr"
	"github.com/nudgeflow/nudgeflow/workflows/prgroup"
)

// Build PipelineRun keys of Pipelines as Code and Konflux (internal/konflux knows
// them; Konflux's are the old forms, which old-model stand-ins write: readers use
// konflux.PRNumberKey and konflux.CommitSHAKey, new form first).
const (
	KeySourceBranch          = konflux.AnnotationSourceBranch
	KeyPullRequest           = konflux.AnnotationPullRequest
	KeyRepoURL               = konflux.AnnotationPaCRepoURL
	KeySHA                   = konflux.AnnotationPaCSHA
	AnnotationPRNumber       = konflux.AnnotationPRNumber
	AnnotationCommitSHA      = konflux.AnnotationCommitSHA
	eventTypePullRequest     = "pull_request"
	eventTypeGitLabMergeReq  = "Merge Request"
	eventTypeRetestComment   = "retest-comment" // PaC's /retest on a PR
	eventTypeOkToTestComment = "ok-to-test-comment"
)

// Options configure the feature.
type Options struct {
	Temporal  client.Client
	TaskQueue string
	// Settings go into every PRGroup workflow the bridge starts.
	Settings prgroup.Settings
}

// +kubebuilder:rbac:groups=tekton.dev,resources=pipelineruns,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=components,verbs=get;list;watch
// +kubebuilder:rbac:groups=konflux-ci.dev,resources=nudgeconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=nudgeconfigs,verbs=get;list;watch

// Setup registers the pull-request build reconciler and returns the forge event sink.
func Setup(mgr ctrl.Manager, opts Options) (*Router, error) {
	c := mgr.GetClient()
	if err := ctrl.NewControllerManagedBy(mgr).Named("prgroup-builds").
		For(&tektonv1.PipelineRun{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o ctrlclient.Object) bool {
			plr, ok := o.(*tektonv1.PipelineRun)
			return ok && isPullRequestBuild(plr) && plr.IsDone()
		}))).
		Complete(&BuildReconciler{Client: c, Options: opts}); err != nil {
		return nil, fmt.Errorf("setting up the PR group build reconciler: %w", err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("prgroup-push-builds").
		For(&tektonv1.PipelineRun{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o ctrlclient.Object) bool {
			plr, ok := o.(*tektonv1.PipelineRun)
			return ok && builds.IsPushBuild(plr) && plr.IsDone()
		}))).
		Complete(&PushBuildReconciler{Client: c, Temporal: opts.Temporal, Poll: opts.Settings.PollInterval}); err != nil {
		return nil, fmt.Errorf("setting up the PR group push-build reconciler: %w", err)
	}
	return &Router{Client: c, Temporal: opts.Temporal}, nil
}

// PushBuildReconciler wakes the PR groups that wait for push builds when one
// succeeds: nothing else tells a group, which otherwise finds it at its next poll
// (PollInterval, 5 minutes by default). It signals an origin event to the running
// groups of the build's component's targets in the namespace that wait for push
// builds (Temporal visibility); each reads its origins again and takes the build
// if it is the one it waits for. A group that had not seen the merge yet finds the
// build when it does. Builds finished longer ago than the groups' poll interval
// wake nobody: every group has polled since (a resync or a restart is silent).
type PushBuildReconciler struct {
	Client   ctrlclient.Reader
	Temporal client.Client
	// Poll is the PR groups' poll interval (zero: prgroup.DefaultPollInterval).
	Poll time.Duration
}

// Reconcile handles one push build PipelineRun.
func (r *PushBuildReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var plr tektonv1.PipelineRun
	if err := r.Client.Get(ctx, req.NamespacedName, &plr); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	if !builds.IsPushBuild(&plr) || !renovaterun.StatusOf(&plr).Succeeded {
		return ctrl.Result{}, nil
	}
	poll := r.Poll
	if poll <= 0 {
		poll = prgroup.DefaultPollInterval
	}
	if done := plr.Status.CompletionTime; done != nil && time.Since(done.Time) > poll {
		return ctrl.Result{}, nil
	}
	edges, _, err := edgesOf(ctx, r.Client, plr.Namespace, konflux.ComponentOf(plr.Labels))
	if err != nil || len(edges) == 0 {
		return ctrl.Result{}, err
	}
	targets := make([]string, 0, len(edges))
	for _, e := range edges {
		targets = append(targets, "'"+e.To+"'")
	}
	query := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND %s = '%s' AND %s = '%s' AND %s IN (%s)",
		prgroup.WorkflowName, searchattr.KubeNamespace.GetName(), plr.Namespace, searchattr.Phase.GetName(), prgroup.PhaseWaiting,
		searchattr.NudgedComponent.GetName(), strings.Join(targets, ", "))
	var errs []error
	var token []byte
	for {
		resp, err := r.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token})
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("listing the PR groups waiting for %s's push build: %w", konflux.ComponentOf(plr.Labels), err)
		}
		for _, wf := range resp.GetExecutions() {
			ev := prgroup.OriginEvent{Action: "push-build", DeliveryID: string(plr.UID)}
			err := r.Temporal.SignalWorkflow(ctx, wf.GetExecution().GetWorkflowId(), "", prgroup.SignalOriginEvent, ev)
			var notFound *serviceerror.NotFound
			if err != nil && !errors.As(err, &notFound) {
				errs = append(errs, fmt.Errorf("waking %s: %w", wf.GetExecution().GetWorkflowId(), err))
				continue
			}
			log.FromContext(ctx).Info("push build woke its PR group", "build", plr.Name, "workflowID", wf.GetExecution().GetWorkflowId())
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	return ctrl.Result{}, errors.Join(errs...)
}

func get(m map[string]string, k string) string { return strings.TrimSpace(m[k]) }

func either(plr *tektonv1.PipelineRun, k string) string {
	if v := get(plr.Annotations, k); v != "" {
		return v
	}
	return get(plr.Labels, k)
}

// isPullRequestBuild: a build PipelineRun of a component from a pull request (PaC
// event type pull_request, GitLab's "Merge Request", or a /retest of one).
func isPullRequestBuild(plr *tektonv1.PipelineRun) bool {
	if konflux.ComponentOf(plr.Labels) == "" || konflux.PipelineTypeOf(plr.Labels) != konflux.PipelineTypeBuild || builds.IsPushBuild(plr) {
		return false
	}
	ev := konflux.EventType(plr.Labels, plr.Annotations)
	switch {
	case strings.EqualFold(ev, eventTypePullRequest), strings.EqualFold(ev, eventTypeGitLabMergeReq):
		return true
	case ev == eventTypeRetestComment, ev == eventTypeOkToTestComment:
		return prNumber(plr) > 0
	}
	return false
}

func prNumber(plr *tektonv1.PipelineRun) int {
	for _, k := range append(konflux.PRNumberKey.Forms(), KeyPullRequest) {
		if n, err := strconv.Atoi(either(plr, k)); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// BuildReconciler turns a succeeded pull-request build into PR group signals.
type BuildReconciler struct {
	Client  ctrlclient.Reader
	Options Options
}

// Reconcile handles one build PipelineRun; it is safe to run any number of times.
func (r *BuildReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("build", req.NamespacedName)
	var plr tektonv1.PipelineRun
	if err := r.Client.Get(ctx, req.NamespacedName, &plr); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	if !isPullRequestBuild(&plr) || !plr.IsDone() || !renovaterun.StatusOf(&plr).Succeeded {
		return ctrl.Result{}, nil
	}
	component := konflux.ComponentOf(plr.Labels)
	edges, comp, err := edgesOf(ctx, r.Client, plr.Namespace, component)
	if err != nil || len(edges) == 0 {
		return ctrl.Result{}, err
	}
	built, hasResults := konflux.BuildOf(&plr)
	branch := either(&plr, KeySourceBranch)
	number := prNumber(&plr)
	repoURL := either(&plr, KeyRepoURL)
	if repoURL == "" && comp != nil && comp.Spec.Source.GitSource != nil {
		repoURL = comp.Spec.Source.GitSource.URL
	}
	if !hasResults || branch == "" || number == 0 || repoURL == "" {
		// Nothing to route: say why (the build is not ours to lose, it never nudges).
		logger.Info("pull-request build cannot join a PR group: it lacks IMAGE_URL/IMAGE_DIGEST, the source branch, the PR number or the repository",
			"image", hasResults, "sourceBranch", branch, "pullRequest", number, "repoURL", repoURL)
		return ctrl.Result{}, nil
	}
	b := prgroup.PRBuild{Component: component, Build: built, SourceBranch: branch,
		Origin: prgroup.OriginRef{RepoURL: strings.TrimSuffix(repoURL, ".git"), Number: number}}
	group := prgroup.GroupOf(branch)
	var errs []error
	for _, e := range edges {
		if err := signal(ctx, r.Options, plr.Namespace, group, e.To, b); err != nil {
			errs = append(errs, err)
			continue
		}
		logger.Info("pull-request build proposed to its PR group", "group", group, "target", e.To, "digest", b.Digest)
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// signal delivers a PR build to the (namespace, group, target) workflow, starting it.
func signal(ctx context.Context, o Options, namespace, group, target string, b prgroup.PRBuild) error {
	id := prgroup.WorkflowID(namespace, group, target)
	_, err := o.Temporal.SignalWithStartWorkflow(ctx, id, prgroup.SignalPRBuild, b, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             o.TaskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(prgroup.SearchAttributes(namespace, group, target, prgroup.PhaseProposing)...),
		StaticSummary:         fmt.Sprintf("PR group %s proposes to %s", group, target),
	}, prgroup.WorkflowName, prgroup.Input{Namespace: namespace, Group: group, Target: target, Settings: o.Settings})
	if err != nil {
		return fmt.Errorf("signalling %s to %s: %w", prgroup.SignalPRBuild, id, err)
	}
	return nil
}

// edgesOf are the component's nudge edges (NudgeConfig, else build-nudges-ref) and
// the Component (nil when it does not exist).
func edgesOf(ctx context.Context, c ctrlclient.Reader, namespace, component string) ([]builds.Edge, *mirrorv1alpha1.Component, error) {
	ncp, err := nudgeconfigs.Get(ctx, c, namespace)
	if err = nudgeconfigs.IgnoreBatchingError(err); err != nil {
		return nil, nil, err
	}
	comp := &mirrorv1alpha1.Component{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: component}, comp); apierrors.IsNotFound(err) {
		comp = nil
	} else if err != nil {
		return nil, nil, fmt.Errorf("reading component %s/%s: %w", namespace, component, err)
	}
	return builds.EdgesFrom(ncp, comp, component), comp, nil
}

// Router delivers forge pull request events to PRGroup workflows (forgehook.Sink).
type Router struct {
	Client   ctrlclient.Reader
	Temporal client.Client
}

// PullRequestEvent signals the workflows the PR may concern: those of its branch's
// group for its repository's components' targets (it originates them), and the one
// whose target PR it is. A workflow that does not run is not started.
//
// The repository is the one whose secret verified the event (host and path, as
// forgehook.RepoKey): a component on another forge with the same owner/name is
// another repository. An event a tenant's bound secret verified reaches only that
// namespace's components.
func (p *Router) PullRequestEvent(ctx context.Context, e forgehook.Event) error {
	if e.HeadRef == "" || e.Repo == "" {
		return nil
	}
	group := prgroup.GroupOf(e.HeadRef)
	ids := map[string]bool{}
	var comps mirrorv1alpha1.ComponentList
	var scope []ctrlclient.ListOption
	if e.Namespace != "" {
		scope = append(scope, ctrlclient.InNamespace(e.Namespace))
	}
	if err := p.Client.List(ctx, &comps, scope...); err != nil {
		return fmt.Errorf("listing components: %w", err)
	}
	for i := range comps.Items {
		c := &comps.Items[i]
		if c.Spec.Source.GitSource == nil || forgehook.RepoKey(c.Spec.Source.GitSource.URL) != e.Repo {
			continue
		}
		edges, _, err := edgesOf(ctx, p.Client, c.Namespace, c.Name)
		if err != nil {
			return err
		}
		for _, ed := range edges {
			ids[prgroup.WorkflowID(c.Namespace, group, ed.To)] = true
		}
		// The target PR itself (head <group>@nudgeflow-<target>).
		if _, suffix, ok := strings.Cut(e.HeadRef, "@"+prgroup.BranchSuffix+"-"); ok && suffix == c.Name {
			ids[prgroup.WorkflowID(c.Namespace, group, c.Name)] = true
		}
	}
	ev := prgroup.OriginEvent{Key: prgroup.OriginKey(e.RepoFullName, e.Number), Action: e.Action, DeliveryID: e.DeliveryID}
	var errs []error
	for id := range ids {
		err := p.Temporal.SignalWorkflow(ctx, id, "", prgroup.SignalOriginEvent, ev)
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("signalling %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}
