// Package builds is the bridge's part for nudging: it turns succeeded push builds,
// finished Snapshots and ended Renovate runs into Temporal starts and signals.
//
//   - A succeeded push build PipelineRun, per nudge edge from its component: an edge
//     held by an active ChangeGroup signals that group's workflow (and nothing
//     else); an immediate edge starts a Nudge workflow whose ID comes from the build's
//     UID and the target; a validated edge signals (with start) its ValidatedNudge.
//   - A Snapshot of a ComponentGroup that finished testing signals the ValidatedNudge
//     workflows gated by that group.
//   - A Renovate PipelineRun nudgeflow launched that ended signals its Nudge workflow.
//
// The bridge is stateless: deterministic workflow IDs, ID reuse policies and the
// workflows' own dedupe make a resync or a second bridge change nothing. What it
// writes on a build is for Kubernetes, not state: a finalizer that keeps the pruner
// from deleting a build it has not routed yet, and the acknowledgement that lets a
// resync skip a routed build without calling Temporal (routing.go).
package builds

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/changegroupcontroller"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/autogroups"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	"github.com/nudgeflow/nudgeflow/workflows/validatednudge"
)

// Build PipelineRun keys, for callers that write old-model builds (the tests'
// stand-ins): internal/konflux knows Konflux's keys; read them with its Keys
// (new form first, ADR 69).
const (
	LabelComponent    = konflux.LabelComponent
	LabelPipelineType = konflux.LabelPipelineType
	PipelineTypeBuild = konflux.PipelineTypeBuild
	KeyEventType      = konflux.AnnotationEventType
	AnnotationRepo    = konflux.AnnotationRepo
	ResultImageURL    = konflux.ResultImageURL
	ResultImageDigest = konflux.ResultImageDigest
)

// Options configure the feature.
type Options struct {
	Temporal  client.Client
	TaskQueue string
	// Peers are the Konflux services that nudge beside nudgeflow: the edges they
	// run are theirs (Peers.RunnerOf).
	Peers Peers
	// Tuning goes into every Nudge the bridge starts (zero: the workflow defaults).
	Tuning validatednudge.Tuning
	// FailedSnapshotGrace goes into the ValidatedNudge workflows the bridge starts
	// (zero: validatednudge.DefaultFailedSnapshotGrace).
	FailedSnapshotGrace time.Duration
	// ChangeGroups starts and signals ChangeGroup workflows (nil: one on Temporal
	// and TaskQueue with default settings).
	ChangeGroups *changegroupcontroller.Starter
	// Batches opens the automatic ChangeGroups of batched targets (nil: Setup
	// makes one on the manager's client and API reader).
	Batches *autogroups.Opener
	// ISDecisionDeadline is how long after a build finished the bridge waits for
	// integration-service's verdict before it takes the edges IS runs over
	// (takeover.go; zero: DefaultISDecisionDeadline).
	ISDecisionDeadline time.Duration
	// Recorder records who nudges a target integration-service left out (nil:
	// Setup takes the manager's).
	Recorder record.EventRecorder
}

func (o Options) changeGroups() *changegroupcontroller.Starter {
	if o.ChangeGroups != nil {
		return o.ChangeGroups
	}
	return &changegroupcontroller.Starter{Temporal: o.Temporal, TaskQueue: o.TaskQueue}
}

// The bridge patches build PipelineRuns' metadata (the build-routing finalizer and
// the acknowledgement); patch is all it needs, never update.
// +kubebuilder:rbac:groups=tekton.dev,resources=pipelineruns,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=components;snapshots;changegroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=changegroups,verbs=create;patch
// +kubebuilder:rbac:groups=konflux-ci.dev,resources=nudgeconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=nudgeconfigs,verbs=get;list;watch

// Setup registers the build, Renovate-run and Snapshot reconcilers and the webhook
// that holds push builds at creation.
func Setup(mgr ctrl.Manager, opts Options) error {
	c := mgr.GetClient()
	if opts.Batches == nil {
		opts.Batches = &autogroups.Opener{Kube: c, Live: mgr.GetAPIReader()}
	}
	if opts.Recorder == nil {
		opts.Recorder = mgr.GetEventRecorderFor("nudgeflow")
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("nudge-builds").
		For(&tektonv1.PipelineRun{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o ctrlclient.Object) bool {
			plr, ok := o.(*tektonv1.PipelineRun)
			return ok && needsReconcile(plr)
		}))).
		Complete(&BuildReconciler{Client: c, APIReader: mgr.GetAPIReader(), Options: opts}); err != nil {
		return fmt.Errorf("setting up the build reconciler: %w", err)
	}
	mgr.GetWebhookServer().Register(HoldPath, &webhook.Admission{Handler: &Holder{Reader: mgr.GetAPIReader()}})
	if err := ctrl.NewControllerManagedBy(mgr).Named("nudge-renovate-runs").
		For(&tektonv1.PipelineRun{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o ctrlclient.Object) bool {
			plr, ok := o.(*tektonv1.PipelineRun)
			return ok && isOurRenovateRun(plr) && (renovaterun.StatusOf(plr).Done || renovaterun.Queued(plr))
		}))).
		Complete(&RunReconciler{Client: c, Temporal: opts.Temporal}); err != nil {
		return fmt.Errorf("setting up the Renovate run reconciler: %w", err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("nudge-snapshots").
		For(&mirrorv1alpha1.Snapshot{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o ctrlclient.Object) bool {
			s, ok := o.(*mirrorv1alpha1.Snapshot)
			_, done := snapshotTestVerdict(s)
			return ok && (s.Spec.ComponentGroup != "" || s.Spec.Application != "") && done
		}))).
		Complete(&SnapshotReconciler{Client: c, Options: opts}); err != nil {
		return fmt.Errorf("setting up the Snapshot reconciler: %w", err)
	}
	return nil
}

// IsPushBuild: a build PipelineRun of a component from a push (or incoming, a
// re-run of push) event. Pull-request builds never nudge.
func IsPushBuild(plr *tektonv1.PipelineRun) bool {
	if konflux.ComponentOf(plr.Labels) == "" || konflux.PipelineTypeOf(plr.Labels) != PipelineTypeBuild {
		return false
	}
	return konflux.IsPushEvent(plr.Labels, plr.Annotations)
}

func isOurRenovateRun(plr *tektonv1.PipelineRun) bool {
	return konflux.IsNudgeRun(plr.Labels) &&
		plr.Labels[renovaterun.LabelManagedBy] == renovaterun.ManagedByNudgeflow &&
		plr.Annotations[konflux.AnnotationWorkflowID] != ""
}

// BuildReconciler turns a finished push build into nudges, holds the builds it has
// not routed yet, and acknowledges and releases the ones it has.
type BuildReconciler struct {
	// Client reads builds, Components, NudgeConfigs and ChangeGroups, and patches the
	// builds' finalizer and acknowledgement.
	Client ctrlclient.Client
	// APIReader reads past the cache: a build after a write conflict, and the edges
	// of a held build the cache says has none (nil: Client only).
	APIReader ctrlclient.Reader
	Options   Options
}

// Reconcile handles one build PipelineRun; it is safe to run any number of times.
func (r *BuildReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("build", req.NamespacedName))
	var plr tektonv1.PipelineRun
	if err := r.Client.Get(ctx, req.NamespacedName, &plr); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	// A routed and released build is done with: no read, no Temporal call.
	if !IsPushBuild(&plr) || Settled(&plr) {
		return ctrl.Result{}, nil
	}
	if IsMergeQueueBuild(&plr) {
		if !Holds(&plr) {
			// Never nudgeflow's: not held, not annotated, like a build without edges.
			return ctrl.Result{}, nil
		}
		// Held by the fallback of an older bridge, or annotated after admission:
		// released, never routed. Nothing is lost: the image is speculative, and the
		// push build of the merged commit is routed like any other.
		log.FromContext(ctx).Info("merge-queue build is speculative; released without nudging (its post-merge push build is nudged)",
			"sourceBranch", plr.Annotations[konflux.AnnotationSourceBranch])
		return ctrl.Result{}, r.acknowledge(ctx, &plr, RoutedMergeQueue)
	}
	if Acknowledged(&plr) {
		// Routed before and held again (the finalizer put back by hand or a restore
		// from backup): release it, never route it twice.
		return ctrl.Result{}, r.acknowledge(ctx, &plr, plr.Annotations[konflux.AnnotationNudgeRouted])
	}
	edges, err := r.edges(ctx, plr.Namespace, konflux.ComponentOf(plr.Labels))
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(edges) == 0 && Holds(&plr) && r.APIReader != nil {
		// The hold webhook read the edges live when it held this build; the cache
		// may not hold that NudgeConfig (or Component) yet. "no-edges" lets the build
		// go for good, so it is decided on a live read, never on a lagging cache.
		if edges, err = edgesOf(ctx, r.APIReader, plr.Namespace, konflux.ComponentOf(plr.Labels), r.Options.Peers.BuildService); err != nil {
			return ctrl.Result{}, err
		}
	}
	if len(edges) == 0 && !Holds(&plr) {
		// Not nudgeflow's: a build of a component without edges is never held or
		// annotated.
		return ctrl.Result{}, nil
	}
	markNewModel(&plr, edges)
	if !finished(&plr) {
		if Holds(&plr) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, r.hold(ctx, &plr)
	}
	routed, err := r.route(ctx, &plr, edges)
	if errors.Is(err, errAwaitingIS) {
		wait, err := r.awaitIS(ctx, &plr, buildEnd(&plr))
		return ctrl.Result{RequeueAfter: wait}, err
	}
	if err != nil {
		// The build stays held (the pruner waits) and the controller retries with
		// backoff; routing again is idempotent.
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.acknowledge(ctx, &plr, routed)
}

// route routes a finished build along its edges and returns the acknowledgement:
// the targets it routed, or why it routed none. An error means some edge could not
// be routed; the build must not be acknowledged then.
func (r *BuildReconciler) route(ctx context.Context, plr *tektonv1.PipelineRun, edges []Edge) (string, error) {
	if !renovaterun.StatusOf(plr).Succeeded {
		if plr.IsDone() {
			return RoutedFailed, nil
		}
		return RoutedDeletedUnfinished, nil
	}
	b, hasResults := konflux.BuildOf(plr)
	if !hasResults {
		log.FromContext(ctx).Info("succeeded build lacks IMAGE_URL or IMAGE_DIGEST; nothing to nudge")
		return RoutedNoResults, nil
	}
	if len(edges) == 0 {
		return RoutedNoEdges, nil
	}
	// A group holds the builds that finish while it is active: judged by when the
	// build finished, a resync after the group ended changes nothing.
	finishedAt := buildEnd(plr)
	is := verdictOf(plr)
	// The edges go to distinct workflows (a ValidatedNudge, Nudge or ChangeGroup per
	// target), so their Temporal calls go out at once rather than one round trip
	// after the other: a build's routing takes the slowest edge's time, not the sum.
	ok := make([]bool, len(edges))
	errs := make([]error, len(edges))
	sem := make(chan struct{}, maxEdgesInFlight)
	var wg sync.WaitGroup
	for i, e := range edges {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ok[i], errs[i] = r.nudge(ctx, plr, e, b, finishedAt, is)
			if errs[i] != nil && !errors.Is(errs[i], errAwaitingIS) {
				errs[i] = fmt.Errorf("edge %s: %w", nudgeapi.Edge(e.From, e.To), errs[i])
			}
		}()
	}
	wg.Wait()
	awaiting := false
	for i, err := range errs {
		if errors.Is(err, errAwaitingIS) {
			awaiting, errs[i] = true, nil
		}
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	if awaiting {
		// Every other edge is routed (routing again is idempotent); the build is
		// acknowledged once integration-service's verdict is in.
		return "", errAwaitingIS
	}
	routed := map[string]bool{}
	for i, e := range edges {
		if ok[i] {
			routed[e.To] = true
		}
	}
	return routedValue(routed), nil
}

// buildEnd is when the build ended (its creation when Tekton wrote no completion
// time).
func buildEnd(plr *tektonv1.PipelineRun) time.Time {
	if plr.Status.CompletionTime != nil {
		return plr.Status.CompletionTime.Time
	}
	return plr.CreationTimestamp.Time
}

// markNewModel marks the edges of a build no peer sees (Edge.NewModelBuild).
func markNewModel(plr *tektonv1.PipelineRun, edges []Edge) {
	if konflux.PeersSeeBuild(plr.Labels) {
		return
	}
	for i := range edges {
		edges[i].NewModelBuild = true
	}
}

// maxEdgesInFlight bounds one build's concurrent Temporal calls; with
// MaxConcurrentReconciles builds at once, the bridge has at most their product in
// flight.
const maxEdgesInFlight = 8

// Renudger nudges the targets of a nudge PipelineRun that a ChangeGroup cancelled
// but does not collect (its other targets, or a group that ended in between). The
// Nudge workflow's ID is the build's and the target's, so a target the build
// reconciler already nudges from the same build is not nudged twice.
type Renudger struct {
	Client  ctrlclient.Reader
	Options Options
}

// Renudge starts an immediate nudge of each target with the build the PipelineRun carried.
func (r *Renudger) Renudge(ctx context.Context, nudgePLR *tektonv1.PipelineRun, targets []string) error {
	name := konflux.NudgingPipelineKey.Get(nudgePLR.Annotations)
	var build tektonv1.PipelineRun
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: nudgePLR.Namespace, Name: name}, &build); err != nil {
		return fmt.Errorf("reading build %q of cancelled nudge %s: %w", name, nudgePLR.Name, err)
	}
	b, ok := konflux.BuildOf(&build)
	if !ok {
		return fmt.Errorf("build %s of cancelled nudge %s has no IMAGE_URL/IMAGE_DIGEST", name, nudgePLR.Name)
	}
	source := konflux.NudgingKey.Get(nudgePLR.Annotations)
	var errs []error
	for _, target := range targets {
		errs = append(errs, startNudge(ctx, r.Options, nudgeapi.Request{
			Namespace: nudgePLR.Namespace, Nudging: source, Nudged: target, Mode: string(konfluxv1alpha1.ModeImmediate),
			Build: b, Tuning: r.Options.Tuning,
		}))
	}
	return errors.Join(errs...)
}

func (r *BuildReconciler) edges(ctx context.Context, namespace, component string) ([]Edge, error) {
	return edgesOf(ctx, r.Client, namespace, component, r.Options.Peers.BuildService)
}

// edgesOf reads the nudge edges of component (EdgesFrom). With nudgesRef the
// Component is read even when a NudgeConfig exists: its build-nudges-ref says
// which edges build-service runs too (only who runs an edge needs it, not whether
// the component has edges: the hold webhook skips that read).
func edgesOf(ctx context.Context, c ctrlclient.Reader, namespace, component string, nudgesRef bool) ([]Edge, error) {
	nc, err := getNudgeConfig(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	if nc != nil && !nudgesRef {
		return EdgesFrom(nc, nil, component), nil
	}
	comp := &mirrorv1alpha1.Component{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: component}, comp); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading component %s/%s: %w", namespace, component, err)
		}
		if nc == nil {
			return nil, nil
		}
		comp = nil
	}
	return EdgesFrom(nc, comp, component), nil
}

// getNudgeConfig reads the namespace's NudgeConfig of either kind. A batching
// annotation that cannot be read only turns batching off (the NudgeConfig
// controller reports it): the edges still route.
func getNudgeConfig(ctx context.Context, c ctrlclient.Reader, namespace string) (*konfluxv1alpha1.NudgeConfig, error) {
	nc, err := nudgeconfigs.Get(ctx, c, namespace)
	return nc, nudgeconfigs.IgnoreBatchingError(err)
}

// nudge routes one build along one edge and reports whether the edge's target was
// routed (false: another Konflux service runs the edge). is is integration-
// service's verdict on the build. errAwaitingIS: the edge is integration-service's
// and its verdict is not in yet.
func (r *BuildReconciler) nudge(ctx context.Context, plr *tektonv1.PipelineRun, e Edge, b validatednudge.Build, finishedAt time.Time, is isVerdict) (bool, error) {
	namespace := plr.Namespace
	logger := log.FromContext(ctx).WithValues("edge", nudgeapi.Edge(e.From, e.To), "digest", b.Digest)
	cg, err := grouplookup.FindHoldingAt(ctx, r.Client, namespace, e.From, e.To, finishedAt)
	if err != nil {
		return false, err
	}
	if cg != nil {
		// Before the integration-service check: when a group holds the edge,
		// integration-service's nudge PipelineRun was cancelled at admission, so
		// its annotation lists a target it did not really nudge.
		held, err := r.deliverToGroup(ctx, cg, e, b)
		if err != nil || held {
			return held, err
		}
		logger.Info("the ChangeGroup that held this edge ended without the build; nudging it normally", "changeGroup", cg.Name)
	}
	if e.Mode == konfluxv1alpha1.ModeImmediate && r.Options.Peers.Executes(e) {
		held, err := r.batch(ctx, namespace, e, b)
		if err != nil || held {
			return held, err
		}
	}
	if runner := r.Options.Peers.RunnerOf(e); runner != RunnerNudgeflow {
		if runner != RunnerIntegrationService || is.nudged[e.To] {
			logger.V(1).Info("edge nudged by another Konflux service", "nudgedBy", runner, "source", e.Source, "mode", e.Mode)
			return false, nil
		}
		if !is.decided {
			return false, errAwaitingIS
		}
		// integration-service decided and left this target out: nudgeflow nudges it,
		// once (the Nudge's ID is the build's and the target's).
		logger.Info("integration-service left the target out; nudgeflow nudges it", "target", e.To,
			"integrationService", is.value)
		r.tellTakenOver(plr, e, is)
		return true, startNudge(ctx, r.Options, nudgeapi.Request{
			Namespace: namespace, Nudging: e.From, Nudged: e.To, Mode: string(konfluxv1alpha1.ModeImmediate),
			Build: b, Tuning: r.Options.Tuning,
		})
	}
	if e.Mode == konfluxv1alpha1.ModeValidated {
		return true, SignalValidated(ctx, r.Options, namespace, e, validatednudge.SignalBuild, b)
	}
	if is.nudged[e.To] {
		// integration-service acknowledged a nudge of this target from this build: a
		// second one would open a second PR. (If the interception webhook cancelled
		// it, the held-nudge reconciler hands it to the group or renudges it; that
		// path and ChangeGroup hand-backs never consult this annotation.)
		logger.Info("integration-service already nudged this target from this build; not nudging it again",
			"target", e.To, "annotation", konflux.AnnotationISNudgeProcessed)
		return true, nil
	}
	return true, startNudge(ctx, r.Options, nudgeapi.Request{
		Namespace: namespace, Nudging: e.From, Nudged: e.To, Mode: string(konfluxv1alpha1.ModeImmediate),
		Build: b, Tuning: r.Options.Tuning,
	})
}

// batch gives the build of an immediate edge to a batched target's automatic
// ChangeGroup, opening it when none is open (autogroups.Opener). Validated edges
// join a batch later, when their Snapshot passed (the ValidatedNudge workflow's
// batching activity). It reports false when the target is not batched, or the
// group ended without taking the build: then the edge is nudged normally.
func (r *BuildReconciler) batch(ctx context.Context, namespace string, e Edge, b validatednudge.Build) (bool, error) {
	if !e.Source.FromNudgeConfig() || r.Options.Batches == nil {
		return false, nil
	}
	nc, err := getNudgeConfig(ctx, r.Client, namespace)
	if err != nil || nc == nil || nc.Spec.BatchingFor(e.To) == nil {
		return false, err
	}
	cg, err := r.Options.Batches.Holder(ctx, nc, e.From, e.To)
	if err != nil || cg == nil {
		return false, err
	}
	return r.deliverToGroup(ctx, cg, e, b)
}

// deliverToGroup gives the build to the group that held the edge when it finished;
// the group's workflow decides whether it takes it (changegroupcontroller.Starter.Deliver).
func (r *BuildReconciler) deliverToGroup(ctx context.Context, cg *appstudiov1alpha1.ChangeGroup, e Edge, b validatednudge.Build) (bool, error) {
	took, err := r.Options.changeGroups().Deliver(ctx, cg, changegroupapi.ComponentBuilt{Component: e.From, Build: b})
	if took {
		log.FromContext(ctx).Info("edge held by a ChangeGroup; the group has the build", "edge", nudgeapi.Edge(e.From, e.To), "digest", b.Digest, "changeGroup", cg.Name)
	}
	return took, err
}

// startNudge starts the immediate nudge once (nudge.Start on the bridge's task queue).
func startNudge(ctx context.Context, o Options, req nudgeapi.Request) error {
	return nudgeapi.Start(ctx, o.Temporal, o.TaskQueue, req)
}

// SignalValidated delivers a build or Snapshot result to the edge's ValidatedNudge,
// starting it when it does not run.
func SignalValidated(ctx context.Context, o Options, namespace string, e Edge, signal string, arg any) error {
	id := validatednudge.WorkflowID(namespace, e.From, e.To)
	in := validatednudge.Input{Namespace: namespace, From: e.From, To: e.To, GatingGroup: e.GatingGroup, Tuning: o.Tuning, FailedSnapshotGrace: o.FailedSnapshotGrace}
	_, err := o.Temporal.SignalWithStartWorkflow(ctx, id, signal, arg, client.StartWorkflowOptions{
		ID:        id,
		TaskQueue: o.TaskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(nudgeapi.SearchAttributes(nudgeapi.Request{
			Namespace: namespace, Nudging: e.From, Nudged: e.To}, validatednudge.PhaseIdle)...),
		StaticSummary: fmt.Sprintf("validated nudges %s -> %s gated by %s", e.From, e.To, e.GatingGroup),
	}, validatednudge.WorkflowName, in)
	if err != nil {
		return fmt.Errorf("signalling %s to %s: %w", signal, id, err)
	}
	return nil
}

// RunReconciler signals a Nudge workflow when its Renovate run ends, and starts
// the next run waiting for the same branch (renovaterun.ReleaseNextOnBranch).
type RunReconciler struct {
	Client   ctrlclient.Client
	Temporal client.Client
}

// Reconcile handles one Renovate PipelineRun.
func (r *RunReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var plr tektonv1.PipelineRun
	if err := r.Client.Get(ctx, req.NamespacedName, &plr); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	if !isOurRenovateRun(&plr) {
		return ctrl.Result{}, nil
	}
	if renovaterun.Queued(&plr) {
		started, err := renovaterun.StartIfFree(ctx, r.Client, &plr)
		if started {
			log.FromContext(ctx).Info("started the Renovate run that waited for its branch", "pipelineRun", plr.Name)
		}
		return ctrl.Result{}, err
	}
	st := renovaterun.StatusOf(&plr)
	if !st.Done {
		return ctrl.Result{}, nil
	}
	// A run held at admission never started: its end frees no branch.
	if branch := plr.Annotations[renovaterun.AnnotationBranch]; branch != "" && plr.IsDone() {
		next, err := renovaterun.ReleaseNextOnBranch(ctx, r.Client, plr.Namespace, branch)
		if err != nil {
			return ctrl.Result{}, err
		}
		if next != "" {
			log.FromContext(ctx).Info("started the Renovate run waiting for the branch", "pipelineRun", next, "branch", branch, "after", plr.Name)
		}
	}
	id := plr.Annotations[konflux.AnnotationWorkflowID]
	err := r.Temporal.SignalWorkflow(ctx, id, "", nudgeapi.SignalRunFinished, st)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return ctrl.Result{}, nil // the nudge already ended
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("signalling %s to %s: %w", nudgeapi.SignalRunFinished, id, err)
	}
	return ctrl.Result{}, nil
}

// snapshotTestVerdict reads AppStudioTestSucceeded (or the legacy type): passed, and whether
// testing finished at all.
func snapshotTestVerdict(s *mirrorv1alpha1.Snapshot) (passed, finished bool) {
	if s == nil {
		return false, false
	}
	for _, t := range []string{mirrorv1alpha1.SnapshotTestSucceeded, mirrorv1alpha1.LegacySnapshotTestSucceeded} {
		for _, c := range s.Status.Conditions {
			if c.Type == t && (c.Status == "True" || c.Status == "False") {
				return c.Status == "True", true
			}
		}
	}
	return false, false
}
