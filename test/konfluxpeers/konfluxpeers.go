// Package konfluxpeers runs stand-ins for the Konflux services that nudge beside
// nudgeflow, following their published contract as read from their source (see
// shared/reference/konflux-nudging.md §1, §2, §6.4):
//
//   - BuildService: build-service's component-dependency-update controller
//     (internal/controller/component_dependency_update_controller.go at ccde63a):
//     a succeeded push build of a component with build-nudges-ref gets ONE nudge
//     PipelineRun for all its existing targets, named renovate-pipeline-<unix>-<rand>,
//     unless the namespace holds integration-service's NudgeConfig nudge-config, where
//     it stands down; the build carries build-service's finalizer while it runs and
//     its processed annotation once handled.
//   - IntegrationService: integration-service's build-pipeline adapter
//     (EnsureNudgePipelineRunsExist at 2ae2878): in a namespace with its NudgeConfig,
//     the immediate edges from the built component get ONE nudge PipelineRun named
//     renovate-pipeline-<sha256(build UID)[:12]>, between its finalizer and its
//     processed annotation (targets comma-joined, or a reason); validated edges are
//     ignored.
//   - Tekton: runs nothing, but ends every nudge PipelineRun that is neither pending
//     nor finished as Tekton would once Renovate exits 0, and a cancelled one as
//     cancelled, so workflows waiting on a run's end go on.
//
// Both services label the run build.appstudio.redhat.com/type=nudge and annotate it
// with nudged-components (space-joined), nudging-component, nudging-image,
// nudging-pipeline and nudging-commit, which is how nudgeflow recognises and holds
// them. The delay build-service waits after a build's creation (10 s) and what the
// runs would do inside are left out: nothing here depends on them.
package konfluxpeers

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"knative.dev/pkg/apis"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
	"github.com/nudgeflow/nudgeflow/internal/digestref"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// The peers' keys, verbatim from their source.
const (
	BSProcessedAnnotation = "build.appstudio.openshift.io/component-nudge-processed"
	BSFinalizer           = "build.appstudio.openshift.io/build-nudge-finalizer"
	ISProcessedAnnotation = konflux.AnnotationISNudgeProcessed
	ISFinalizer           = "test.appstudio.openshift.io/nudge-pipelinerun"
	// ManagedByLabel marks the runs a stand-in created, so a test can tell whose
	// run is whose (the real services set no such label).
	ManagedByLabel = "nudgeflow-test/created-by"
)

// Who created a nudge run (ManagedByLabel values).
const (
	CreatedByBuildService       = "build-service"
	CreatedByIntegrationService = "integration-service"
)

func isDone(plr *tektonv1.PipelineRun) bool {
	c := plr.Status.GetCondition(apis.ConditionSucceeded)
	return c != nil && !c.IsUnknown()
}

func succeeded(plr *tektonv1.PipelineRun) bool {
	c := plr.Status.GetCondition(apis.ConditionSucceeded)
	return c != nil && c.IsTrue()
}

// nudgeRun is the nudge PipelineRun both services create for one build (their
// names differ). The pipeline is a placeholder: nothing here runs it.
func nudgeRun(build *tektonv1.PipelineRun, name, createdBy string, targets []string) *tektonv1.PipelineRun {
	imageURL, _ := konflux.BuildResults(build)
	commit := renovate.CommitFromRepoLink(build.Annotations[builds.AnnotationRepo])
	return &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: build.Namespace,
			Labels: map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue, ManagedByLabel: createdBy},
			Annotations: map[string]string{
				konflux.AnnotationNudged:     strings.Join(targets, " "),
				konflux.AnnotationNudging:    build.Labels[builds.LabelComponent],
				konflux.AnnotationNudgingImg: digestref.ParseReference(imageURL).Tagged(),
				konflux.AnnotationNudgingPLR: build.Name,
				konflux.AnnotationNudgingSHA: commit,
			},
		},
		Spec: tektonv1.PipelineRunSpec{PipelineSpec: &tektonv1.PipelineSpec{Tasks: []tektonv1.PipelineTask{{
			Name: "renovate",
			TaskSpec: &tektonv1.EmbeddedTask{TaskSpec: tektonv1.TaskSpec{Steps: []tektonv1.Step{{
				Name: "renovate", Image: "quay.io/konflux-ci/mintmaker-renovate-image:29a2f31", Command: []string{"renovate"},
			}}}},
		}}}},
	}
}

// existing keeps the names of the components that exist in the namespace, in order.
func existing(ctx context.Context, c ctrlclient.Reader, ns string, names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, &mirrorv1alpha1.Component{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// shippedNudgeConfig reads integration-service's NudgeConfig of the namespace (nil
// when none).
func shippedNudgeConfig(ctx context.Context, c ctrlclient.Reader, ns string) (*mirrorv1beta2.NudgeConfig, error) {
	var nc mirrorv1beta2.NudgeConfig
	err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: mirrorv1beta2.NudgeConfigSingletonName}, &nc)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &nc, nil
}

// patchMeta changes a build's metadata with a merge patch guarded by its
// resourceVersion, re-reading on a conflict (Tekton and nudgeflow write it too).
func patchMeta(ctx context.Context, c ctrlclient.Client, plr *tektonv1.PipelineRun, change func(*tektonv1.PipelineRun) bool) error {
	first := true
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if !first {
			if err := c.Get(ctx, ctrlclient.ObjectKeyFromObject(plr), plr); err != nil {
				return err
			}
		}
		first = false
		before := plr.DeepCopy()
		if !change(plr) {
			return nil
		}
		return c.Patch(ctx, plr, ctrlclient.MergeFromWithOptions(before, ctrlclient.MergeFromWithOptimisticLock{}))
	})
}

func annotate(key, value string) func(*tektonv1.PipelineRun) bool {
	return func(p *tektonv1.PipelineRun) bool {
		if p.Annotations[key] == value {
			return false
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[key] = value
		return true
	}
}

// BuildService stands in for build-service's nudging.
type BuildService struct {
	Client ctrlclient.Client
	// Live reads builds past the cache: build-service re-reads the build through
	// its API reader, so a stale cached copy without its processed annotation never
	// nudges a build twice (its run names are random).
	Live ctrlclient.Reader
}

// Reconcile handles one push build.
func (b *BuildService) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var plr tektonv1.PipelineRun
	if err := b.Live.Get(ctx, req.NamespacedName, &plr); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	if !builds.IsPushBuild(&plr) || plr.Annotations[BSProcessedAnnotation] != "" {
		return ctrl.Result{}, nil
	}
	var comp mirrorv1alpha1.Component
	if err := b.Client.Get(ctx, types.NamespacedName{Namespace: plr.Namespace, Name: plr.Labels[builds.LabelComponent]}, &comp); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, patchMeta(ctx, b.Client, &plr, dropFinalizer(BSFinalizer))
		}
		return ctrl.Result{}, err
	}
	if len(comp.Spec.BuildNudgesRef) == 0 {
		return ctrl.Result{}, nil
	}
	// The migration switch: integration-service's NudgeConfig makes build-service
	// stand down in the namespace.
	if nc, err := shippedNudgeConfig(ctx, b.Client, plr.Namespace); err != nil || nc != nil {
		if err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, patchMeta(ctx, b.Client, &plr, markProcessed(BSProcessedAnnotation, "true", BSFinalizer))
	}
	targets, err := existing(ctx, b.Client, plr.Namespace, comp.Spec.BuildNudgesRef)
	if err != nil || len(targets) == 0 {
		return ctrl.Result{}, err
	}
	if !isDone(&plr) && plr.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, patchMeta(ctx, b.Client, &plr, func(p *tektonv1.PipelineRun) bool {
			return controllerutil.AddFinalizer(p, BSFinalizer)
		})
	}
	if succeeded(&plr) {
		if url, digest := konflux.BuildResults(&plr); url != "" && digest != "" {
			// No push credential for the component's image: build-service marks the
			// build processed and nudges nothing
			// (BS:internal/controller/component_dependency_update_controller.go:426-434).
			if _, err := credentials.LookupRegistry(ctx, b.Client, plr.Namespace, credentials.BuildPipelineServiceAccount(comp.Name), comp.Spec.ContainerImage); err != nil {
				ctrl.LoggerFrom(ctx).Info("build-service stand-in: no image credential, build processed without a nudge", "build", plr.Name, "reason", err.Error())
				return ctrl.Result{}, patchMeta(ctx, b.Client, &plr, markProcessed(BSProcessedAnnotation, "true", BSFinalizer))
			}
			suffix := make([]byte, 3)
			if _, err := rand.Read(suffix); err != nil {
				return ctrl.Result{}, err
			}
			name := fmt.Sprintf("renovate-pipeline-%d-%s", time.Now().Unix(), hex.EncodeToString(suffix)[:5])
			if err := b.Client.Create(ctx, nudgeRun(&plr, name, CreatedByBuildService, targets)); err != nil {
				return ctrl.Result{}, fmt.Errorf("creating build-service's nudge run of %s: %w", plr.Name, err)
			}
		}
	}
	if err := patchMeta(ctx, b.Client, &plr, markProcessed(BSProcessedAnnotation, "true", BSFinalizer)); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, b.markStale(ctx, &plr)
}

// markStale does what build-service does after a nudge
// (BS:internal/controller/component_dependency_update_controller.go:521-555): the
// component's push builds created before this one and still running are marked
// processed, so an older build that ends last is never nudged over a newer one.
func (b *BuildService) markStale(ctx context.Context, plr *tektonv1.PipelineRun) error {
	var list tektonv1.PipelineRunList
	if err := b.Client.List(ctx, &list, ctrlclient.InNamespace(plr.Namespace), ctrlclient.MatchingLabels{
		builds.LabelPipelineType: builds.PipelineTypeBuild, builds.LabelComponent: plr.Labels[builds.LabelComponent]}); err != nil {
		return nil // build-service logs and does not retry
	}
	for i := range list.Items {
		older := &list.Items[i]
		if older.Name == plr.Name || !builds.IsPushBuild(older) || older.Status.CompletionTime != nil ||
			!older.CreationTimestamp.Before(&plr.CreationTimestamp) {
			continue
		}
		if err := patchMeta(ctx, b.Client, older, markProcessed(BSProcessedAnnotation, "true", BSFinalizer)); err != nil {
			return err
		}
	}
	return nil
}

func dropFinalizer(f string) func(*tektonv1.PipelineRun) bool {
	return func(p *tektonv1.PipelineRun) bool { return controllerutil.RemoveFinalizer(p, f) }
}

func markProcessed(key, value, finalizer string) func(*tektonv1.PipelineRun) bool {
	return func(p *tektonv1.PipelineRun) bool {
		changed := annotate(key, value)(p)
		return controllerutil.RemoveFinalizer(p, finalizer) || changed
	}
}

// IntegrationService stands in for integration-service's nudging of immediate
// NudgeConfig edges.
type IntegrationService struct{ Client ctrlclient.Client }

// Reconcile handles one push build.
func (s *IntegrationService) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var plr tektonv1.PipelineRun
	if err := s.Client.Get(ctx, req.NamespacedName, &plr); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	// IsPLRCreatedByPACPushEvent refuses merge-queue builds
	// (IS:tekton/build_pipeline.go:120-130); the controller sees only signed,
	// succeeded builds (IS:tekton/predicates.go:55-70).
	if !builds.IsPushBuild(&plr) || konflux.MergeQueueBuild(plr.Annotations) || !succeeded(&plr) ||
		plr.Annotations[ChainsSignedAnnotation] != "true" || plr.Annotations[ISProcessedAnnotation] != "" {
		return ctrl.Result{}, nil
	}
	nc, err := shippedNudgeConfig(ctx, s.Client, plr.Namespace)
	if err != nil || nc == nil {
		return ctrl.Result{}, err
	}
	// EnsureSnapshotExists runs before EnsureNudgePipelineRunsExist
	// (IS:internal/controller/buildpipeline/buildpipeline_controller.go:164-171):
	// no nudge before the build's Snapshot exists (the test creates it, as IS would).
	if ok, err := snapshotHolds(ctx, s.Client, &plr); err != nil || !ok {
		return ctrl.Result{RequeueAfter: 200 * time.Millisecond}, err
	}
	component := plr.Labels[builds.LabelComponent]
	var names []string
	for _, n := range nc.Spec.Nudges {
		if n.From == component && (n.Mode == "" || n.Mode == mirrorv1beta2.NudgeModeImmediate) {
			names = append(names, n.To)
		}
	}
	if len(names) == 0 {
		return ctrl.Result{}, patchMeta(ctx, s.Client, &plr, annotate(ISProcessedAnnotation, konflux.ISNudgeNoMatchingEdges))
	}
	targets, err := existing(ctx, s.Client, plr.Namespace, names)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(targets) == 0 {
		return ctrl.Result{}, patchMeta(ctx, s.Client, &plr, annotate(ISProcessedAnnotation, konflux.ISNudgeNoValidTargets))
	}
	// GetImageRegistryCredentials: the build's ServiceAccount must link a push
	// credential for the component's image (IS:internal/controller/buildpipeline/buildpipeline_adapter.go:238-249).
	var source mirrorv1alpha1.Component
	if err := s.Client.Get(ctx, types.NamespacedName{Namespace: plr.Namespace, Name: component}, &source); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	sa := plr.Spec.TaskRunTemplate.ServiceAccountName
	if sa == "" {
		sa = ISDefaultPipelineServiceAccount
	}
	if _, err := credentials.LookupRegistry(ctx, s.Client, plr.Namespace, sa, source.Spec.ContainerImage); err != nil {
		return ctrl.Result{}, patchMeta(ctx, s.Client, &plr, annotate(ISProcessedAnnotation, konflux.ISNudgeCredentialsError))
	}
	// GetNudgeTargetsGithubApp returns nothing (TODO STONEINTG-1671,
	// IS:tekton/nudging/nudge_credentials.go:78-120); GetNudgeTargetsBasicAuth keeps
	// the targets with a basic-auth SCM Secret for their repository.
	targets, err = withBasicAuth(ctx, s.Client, plr.Namespace, targets)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(targets) == 0 {
		return ctrl.Result{}, patchMeta(ctx, s.Client, &plr, annotate(ISProcessedAnnotation, konflux.ISNudgeNoCredentials))
	}
	if err := patchMeta(ctx, s.Client, &plr, func(p *tektonv1.PipelineRun) bool { return controllerutil.AddFinalizer(p, ISFinalizer) }); err != nil {
		return ctrl.Result{}, err
	}
	sum := sha256.Sum256([]byte(plr.UID))
	run := nudgeRun(&plr, "renovate-pipeline-"+hex.EncodeToString(sum[:])[:12], CreatedByIntegrationService, targets)
	if err := WithISObjects(ctx, s.Client, run, targets); err != nil {
		return ctrl.Result{}, err
	}
	if err := s.Client.Create(ctx, run); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, fmt.Errorf("creating integration-service's nudge run of %s: %w", plr.Name, err)
	}
	return ctrl.Result{}, patchMeta(ctx, s.Client, &plr, markProcessed(ISProcessedAnnotation, strings.Join(targets, ","), ISFinalizer))
}

// Tekton ends nudge runs as Tekton would after Renovate ran.
type Tekton struct{ Client ctrlclient.Client }

// Reconcile handles one nudge run.
func (t *Tekton) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var plr tektonv1.PipelineRun
	if err := t.Client.Get(ctx, req.NamespacedName, &plr); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	if plr.Labels[konflux.LabelNudgeType] != konflux.NudgeTypeValue || isDone(&plr) || plr.Spec.Status == tektonv1.PipelineRunSpecStatusPending {
		return ctrl.Result{}, nil
	}
	now := metav1.Now()
	cond := apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue, Reason: "Succeeded", Message: "Tasks Completed: 1 (Failed: 0, Cancelled 0), Skipped: 0"}
	if plr.Spec.Status != "" {
		cond = apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionFalse, Reason: tektonv1.PipelineRunReasonCancelled.String(),
			Message: fmt.Sprintf("PipelineRun %q was cancelled", plr.Name)}
	}
	plr.Status.SetCondition(&cond)
	plr.Status.StartTime, plr.Status.CompletionTime = &now, &now
	if err := t.Client.Status().Update(ctx, &plr); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// Which stand-ins Setup registers.
type Which struct {
	BuildService, IntegrationService, Tekton bool
	// Chains signs succeeded push builds; without it integration-service never
	// nudges (it sees only signed builds).
	Chains bool
}

// Setup registers the chosen stand-ins with mgr (whose cache decides which
// namespaces they see).
func Setup(mgr ctrl.Manager, which Which) error {
	pushBuilds := builder.WithPredicates(predicate.NewPredicateFuncs(func(o ctrlclient.Object) bool {
		plr, ok := o.(*tektonv1.PipelineRun)
		// Both services select builds by the appstudio keys only, never by ADR 69's
		// new ones (konflux.PeersSeeBuild cites their predicates).
		return ok && builds.IsPushBuild(plr) && konflux.PeersSeeBuild(plr.Labels)
	}))
	add := func(name string, on bool, pred builder.Predicates, r interface {
		Reconcile(context.Context, ctrl.Request) (ctrl.Result, error)
	}) error {
		if !on {
			return nil
		}
		return ctrl.NewControllerManagedBy(mgr).Named(name).For(&tektonv1.PipelineRun{}, pred).Complete(reconcilerFunc(r.Reconcile))
	}
	if err := add("standin-build-service", which.BuildService, pushBuilds, &BuildService{Client: mgr.GetClient(), Live: mgr.GetAPIReader()}); err != nil {
		return err
	}
	if err := add("standin-integration-service", which.IntegrationService, pushBuilds, &IntegrationService{Client: mgr.GetClient()}); err != nil {
		return err
	}
	if err := add("standin-chains", which.Chains, pushBuilds, &Chains{Client: mgr.GetClient()}); err != nil {
		return err
	}
	nudgeRuns := builder.WithPredicates(predicate.NewPredicateFuncs(func(o ctrlclient.Object) bool {
		return o.GetLabels()[konflux.LabelNudgeType] == konflux.NudgeTypeValue
	}))
	return add("standin-tekton", which.Tekton, nudgeRuns, &Tekton{Client: mgr.GetClient()})
}

type reconcilerFunc func(context.Context, ctrl.Request) (ctrl.Result, error)

func (f reconcilerFunc) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return f(ctx, req)
}

// Targets reads the targets of a nudge run.
func Targets(plr *tektonv1.PipelineRun) []string {
	t := strings.Fields(konflux.NudgedKey.Get(plr.Annotations))
	slices.Sort(t)
	return t
}
