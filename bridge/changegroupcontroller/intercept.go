package changegroupcontroller

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
)

// InterceptPath serves the mutating webhook on nudge PipelineRun creation.
const InterceptPath = "/mutate-tekton-dev-v1-pipelinerun-nudge"

// Interceptor cancels, at admission, a nudge PipelineRun whose source is held by an
// active ChangeGroup for its target (ADR 59). failurePolicy is Ignore: when
// nudgeflow is down nudging proceeds as it does today.
//
// A nudge PipelineRun may nudge several targets, of which only some are held.
// Renovate runs every target from one command, so the run cannot be trimmed; it is
// cancelled as a whole, and the targets no ChangeGroup holds are listed in the
// renudge annotation: nudgeflow nudges those itself, so no nudge is lost.
type Interceptor struct {
	// Index reads the groups from the informer cache; a group created a moment ago
	// holds already because the validating webhook told the Index (see
	// grouplookup.Index).
	Index *grouplookup.Index
	// Batches tells which edges NudgeConfig batches (nil: none). Another service's
	// nudge of a batched target that no group holds yet is cancelled too: its build
	// opens the batch (HeldReconciler), rather than being nudged alone while the
	// batch opens for the next one. This is what batches immediate edges under the
	// exclusive executor, where integration-service, not nudgeflow, runs them.
	Batches BatchedEdges
	// Gates tells which edges NudgeConfig gates (validated; nil: none). Another
	// service's nudge of a validated target is cancelled: build-service nudges
	// every build-nudges-ref target at build time, ungated, and a Component may
	// list a target there after the NudgeConfig made the edge validated (admission
	// refuses only the other order). nudgeflow nudges that target after the tests
	// pass (the build's routing signals the edge's ValidatedNudge); the run's other
	// targets are renudged.
	Gates GatedEdges
	// Builds reads the build a nudge PipelineRun names (informer cache; nil: not
	// read). A nudge of a merge-queue build is cancelled (speculativeNudge).
	// BuildsLive, when set, reads a build the cache does not have yet (a nudge run
	// created a moment after its build).
	Builds, BuildsLive ctrlclient.Reader
}

// BatchedEdges answers which of source's targets NudgeConfig batches.
type BatchedEdges interface {
	BatchedTargets(ctx context.Context, namespace, source string, targets []string) (map[string]bool, error)
}

// GatedEdges answers which of source's targets NudgeConfig gates on tests.
type GatedEdges interface {
	GatedTargets(ctx context.Context, namespace, source string, targets []string) (map[string]bool, error)
}

// GatedTargets implements GatedEdges: the validated edges source -> target of the
// namespace's NudgeConfig (either kind).
func (b NudgeConfigBatches) GatedTargets(ctx context.Context, namespace, source string, targets []string) (map[string]bool, error) {
	nc, err := nudgeConfigOf(ctx, b.Reader, namespace)
	if err != nil || nc == nil {
		return nil, err
	}
	gated := map[string]bool{}
	for _, n := range nc.Spec.Nudges {
		if n.From == source && n.EffectiveMode() == konfluxv1alpha1.ModeValidated && slices.Contains(targets, n.To) {
			gated[n.To] = true
		}
	}
	return gated, nil
}

// NudgeConfigBatches reads the namespace's NudgeConfig (from the informer cache):
// an immediate edge source -> target whose target has a batching policy. A
// validated edge is never another service's to run, and a NudgeConfig written a
// moment ago and not cached yet batches from its next nudge: this one runs
// unbatched, nothing is lost.
type NudgeConfigBatches struct{ Reader ctrlclient.Reader }

// BatchedTargets implements BatchedEdges, reading the NudgeConfig once.
func (b NudgeConfigBatches) BatchedTargets(ctx context.Context, namespace, source string, targets []string) (map[string]bool, error) {
	nc, err := nudgeConfigOf(ctx, b.Reader, namespace)
	if err != nil || nc == nil {
		return nil, err
	}
	batched := map[string]bool{}
	for _, t := range targets {
		batched[t] = batchesEdge(nc, source, t)
	}
	return batched, nil
}

// nudgeConfigOf reads the namespace's NudgeConfig of either kind; nil when it has
// none. A batching annotation that cannot be read means no batching (the
// NudgeConfig controller reports it).
func nudgeConfigOf(ctx context.Context, r ctrlclient.Reader, namespace string) (*konfluxv1alpha1.NudgeConfig, error) {
	nc, err := nudgeconfigs.Get(ctx, r, namespace)
	return nc, nudgeconfigs.IgnoreBatchingError(err)
}

// batchesEdge: nc has the immediate edge source -> target and batches target.
func batchesEdge(nc *konfluxv1alpha1.NudgeConfig, source, target string) bool {
	if nc.Spec.BatchingFor(target) == nil {
		return false
	}
	for _, n := range nc.Spec.Nudges {
		if n.From == source && n.To == target && n.EffectiveMode() == konfluxv1alpha1.ModeImmediate {
			return true
		}
	}
	return false
}

// reinvocationPolicy is IfNeeded because a mutating webhook called after this one
// may undo the cancel: tekton-kueue's (its configuration's name sorts after
// nudgeflow's, and the API server calls configurations in name order) sets
// spec.status PipelineRunPending on every PipelineRun it admits. Reinvoked, the
// interceptor puts Cancelled back before the run is stored (see Handle); the
// held-nudge reconciler covers what reinvocation cannot (Kueue admitting the run
// later by clearing spec.status, a reinvocation that failed open).
//
// +kubebuilder:webhook:path=/mutate-tekton-dev-v1-pipelinerun-nudge,mutating=true,failurePolicy=ignore,sideEffects=None,groups=tekton.dev,resources=pipelineruns,verbs=create,versions=v1,name=nudge-pipelinerun.nudgeflow.konflux-ci.dev,admissionReviewVersions=v1,timeoutSeconds=5,reinvocationPolicy=IfNeeded
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=changegroups,verbs=get;list;watch

// nudgeRun is what the interceptor reads of a PipelineRun. Decoding into it skips
// the rest of the object (a nudge's spec embeds its whole pipeline) without
// building a map of it, and the patch is written from what changes, not computed by
// diffing two encodings of the whole object.
type nudgeRun struct {
	Metadata struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec runSpec `json:"spec"`
}

// runSpec records whether spec is an object and its status; the rest of the spec
// is skipped, not decoded.
type runSpec struct {
	present   bool
	status    string
	managedBy string
}

func (s *runSpec) UnmarshalJSON(b []byte) error {
	*s = runSpec{}
	if len(b) == 0 || b[0] != '{' {
		return nil
	}
	// any, not string: a status of another type is the API server's schema
	// validation to refuse, not a reason for this webhook to refuse the run.
	var v struct {
		Status    any `json:"status"`
		ManagedBy any `json:"managedBy"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	s.present = true
	s.status, _ = v.Status.(string)
	s.managedBy, _ = v.ManagedBy.(string)
	return nil
}

// Handle decides on one PipelineRun.
func (i *Interceptor) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("only creation is intercepted")
	}
	var run nudgeRun
	if err := json.Unmarshal(req.Object.Raw, &run); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding PipelineRun: %w", err))
	}
	labels, annotations := run.Metadata.Labels, run.Metadata.Annotations
	if !konflux.IsNudgeRun(labels) {
		return admission.Allowed("not a nudge PipelineRun")
	}
	if konflux.HeldAtAdmission(annotations) {
		// The run carries this webhook's decision: this is its reinvocation after a
		// later webhook changed the run (tekton-kueue setting PipelineRunPending).
		// The decision stands as written. Classifying again could answer otherwise
		// (a group created or ended a moment ago) and leave annotations that say
		// something else than the first call's, which a later webhook may already
		// have seen; only the cancel is put back.
		local := stayOnThisCluster(&run, true)
		if run.Spec.status == string(tektonv1.PipelineRunSpecStatusCancelled) {
			if len(local) > 0 {
				return admission.Patched("held by nudgeflow: kept on this cluster", local...)
			}
			return admission.Allowed("already cancelled by nudgeflow")
		}
		log.FromContext(ctx).Info("nudge PipelineRun held at admission was changed by a later webhook; cancelling it again",
			"namespace", req.Namespace, "name", req.Name, "specStatus", run.Spec.status, "managedBy", run.Spec.managedBy)
		return admission.Patched("", append(cancelPatch(true, run.Spec.present, nil), local...)...)
	}
	// allow lets a run go that nudgeflow does not hold; nudgeflow's own run (seen
	// with MultiKueue's managedBy on the reinvocation after tekton-kueue) stays
	// on this cluster.
	allow := func(reason string) admission.Response {
		if local := stayOnThisCluster(&run, false); len(local) > 0 {
			log.FromContext(ctx).Info("nudgeflow's own Renovate run kept on this cluster: its Secret and ConfigMap are here",
				"namespace", req.Namespace, "name", req.Name, "managedBy", run.Spec.managedBy)
			return admission.Patched(reason+"; nudgeflow's own run kept on this cluster", local...)
		}
		return admission.Allowed(reason)
	}
	source := konflux.NudgingKey.Get(annotations)
	targets := strings.Fields(konflux.NudgedKey.Get(annotations))
	if source == "" || len(targets) == 0 {
		return allow("nudge PipelineRun without source or targets")
	}
	if build := i.speculativeNudge(ctx, req.Namespace, annotations); build != "" {
		// No group or batch gets it either: no held-by, no renudge; the held-nudge
		// reconciler only keeps it cancelled.
		log.FromContext(ctx).Info("cancelling a nudge of a merge-queue build: its image is speculative; the build of the merged commit is nudged",
			"namespace", req.Namespace, "name", req.Name, "source", source, "build", build)
		return admission.Patched("", append(cancelPatch(annotations != nil, run.Spec.present, [][2]string{{konflux.AnnotationCancelReason,
			fmt.Sprintf("cancelled because build %s is a merge-queue build (%s): its image is speculative, the push build of the merged commit is nudged", build, konflux.MergeQueueBranchPrefix)}}),
			stayOnThisCluster(&run, true)...)...)
	}
	// nudgeflow's own Renovate runs are never held for a batch: the bridge offered
	// their build to the batch before it started the Nudge (or the batch handed
	// it back), so they are normal nudging.
	own := annotations[konflux.AnnotationWorkflowID] != ""
	held, batched, free, err := i.classify(ctx, req.Namespace, source, targets, annotations[konflux.AnnotationHandedBackBy], own)
	if err != nil {
		// Failing open keeps today's behaviour; the error is logged for operators.
		log.FromContext(ctx).Error(err, "cannot tell whether the nudge is held; letting it run", "namespace", req.Namespace, "source", source)
		metrics.CountFailOpen(metrics.WebhookNudgePipelineRun, metrics.FailOpenChangeGroupsUnread)
		return allow("ChangeGroups could not be read")
	}
	var gated []string
	if !own && i.Gates != nil && len(free) > 0 {
		isGated, err := i.Gates.GatedTargets(ctx, req.Namespace, source, free)
		if err != nil {
			log.FromContext(ctx).Error(err, "cannot tell whether the nudge's targets are gated on tests; letting them run", "namespace", req.Namespace, "source", source)
			metrics.CountFailOpen(metrics.WebhookNudgePipelineRun, metrics.FailOpenGatingUnread)
		}
		var rest []string
		for _, t := range free {
			if isGated[t] {
				gated = append(gated, t)
			} else {
				rest = append(rest, t)
			}
		}
		free = rest
	}
	if len(held) == 0 && len(batched) == 0 && len(gated) == 0 {
		return allow("no active ChangeGroup holds this nudge")
	}
	var set [][2]string
	var why []string
	if len(held) > 0 {
		groups := map[string]bool{}
		for _, g := range held {
			groups[g] = true
		}
		set = append(set, [2]string{konflux.AnnotationHeldBy, FormatHeldBy(held)})
		why = append(why, "ChangeGroup "+strings.Join(sortedKeys(groups), ", "))
	}
	if len(batched) > 0 {
		set = append(set, [2]string{konflux.AnnotationHeldForBatch, strings.Join(batched, " ")})
		why = append(why, "the batch of "+strings.Join(batched, ", ")+" (NudgeConfig batching)")
	}
	if len(gated) > 0 {
		why = append(why, "the validated edges to "+strings.Join(gated, ", ")+" (NudgeConfig: nudged by nudgeflow once the build's tests pass)")
	}
	set = append(set, [2]string{konflux.AnnotationCancelReason, "cancelled by " + strings.Join(why, " and ")})
	if len(free) > 0 {
		set = append(set, [2]string{konflux.AnnotationRenudge, strings.Join(free, " ")})
	}
	return admission.Patched("", append(cancelPatch(annotations != nil, run.Spec.present, set), stayOnThisCluster(&run, true)...)...)
}

// speculativeNudge names the build of a nudge PipelineRun when it is a GitHub
// merge-queue build (konflux.MergeQueueBuild), else "". build-service nudges from
// every push build and does not check; integration-service and nudgeflow refuse
// these. Cancelling is the safer answer: the run would put a digest in the
// targets' pull requests that the queue may never merge, while nothing is lost by
// cancelling, since the queue's merge pushes the base branch and that push build
// is nudged. A build that cannot be read (not cached, gone) lets the run go, as
// every other failure of this webhook does.
func (i *Interceptor) speculativeNudge(ctx context.Context, namespace string, annotations map[string]string) string {
	name := konflux.NudgingPipelineKey.Get(annotations)
	if i.Builds == nil || name == "" {
		return ""
	}
	var build tektonv1.PipelineRun
	key := ctrlclient.ObjectKey{Namespace: namespace, Name: name}
	err := i.Builds.Get(ctx, key, &build)
	if apierrors.IsNotFound(err) && i.BuildsLive != nil {
		err = i.BuildsLive.Get(ctx, key, &build)
	}
	if err != nil {
		if !apierrors.IsNotFound(err) {
			log.FromContext(ctx).Error(err, "cannot read the nudging build; not checking it for a merge-queue branch", "namespace", namespace, "build", name)
			metrics.CountFailOpen(metrics.WebhookNudgePipelineRun, metrics.FailOpenBuildUnread)
		}
		return ""
	}
	if !konflux.MergeQueueBuild(build.Annotations) {
		return ""
	}
	return name
}

// cancelPatch is the JSON patch that sets the annotations and cancels the run
// (spec.status Cancelled). "add" replaces a member that exists, so the patch holds
// whatever the run carried before.
func cancelPatch(hasAnnotations, hasSpec bool, annotations [][2]string) []jsonpatch.JsonPatchOperation {
	ops := make([]jsonpatch.JsonPatchOperation, 0, len(annotations)+1)
	if hasAnnotations {
		for _, a := range annotations {
			ops = append(ops, jsonpatch.NewOperation("add", "/metadata/annotations/"+escapePointer(a[0]), a[1]))
		}
	} else {
		all := make(map[string]any, len(annotations))
		for _, a := range annotations {
			all[a[0]] = a[1]
		}
		ops = append(ops, jsonpatch.NewOperation("add", "/metadata/annotations", all))
	}
	if hasSpec {
		ops = append(ops, jsonpatch.NewOperation("add", "/spec/status", "Cancelled"))
	} else {
		ops = append(ops, jsonpatch.NewOperation("add", "/spec", map[string]any{"status": "Cancelled"}))
	}
	return ops
}

// escapePointer escapes a key for a JSON pointer (RFC 6901): "~" and "/".
func escapePointer(key string) string { return pointerEscaper.Replace(key) }

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// classify maps each held target to its ChangeGroup, lists the targets no group
// holds yet but NudgeConfig batches (never for nudgeflow's own runs, own), and the
// rest. A hand-back nudge is never held by the group that handed it back (its CR
// may still say it collects while it ends): that would return the build to a group
// that has let it go.
func (i *Interceptor) classify(ctx context.Context, ns, source string, targets []string, handedBackBy string, own bool) (held map[string]string, batched, free []string, err error) {
	held = map[string]string{}
	var rest []string
	for _, t := range targets {
		cg, err := i.Index.FindHolding(ctx, ns, source, t)
		if err != nil {
			return nil, nil, nil, err
		}
		if cg != nil && (handedBackBy == "" || cg.Name != handedBackBy) {
			held[t] = cg.Name
		} else {
			rest = append(rest, t)
		}
	}
	var isBatched map[string]bool
	if !own && i.Batches != nil && len(rest) > 0 {
		if isBatched, err = i.Batches.BatchedTargets(ctx, ns, source, rest); err != nil {
			// The groups' holds stand; only batching is skipped for this nudge
			// (its targets run unbatched, as when nudgeflow is down).
			log.FromContext(ctx).Error(err, "cannot tell whether the nudge's targets are batched; not holding it for a batch", "namespace", ns, "source", source)
			metrics.CountFailOpen(metrics.WebhookNudgePipelineRun, metrics.FailOpenBatchingUnread)
		}
	}
	for _, t := range rest {
		if isBatched[t] {
			batched = append(batched, t)
		} else {
			free = append(free, t)
		}
	}
	return held, batched, free, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// FormatHeldBy writes the held-by annotation: target=ChangeGroup pairs, by target.
func FormatHeldBy(held map[string]string) string {
	pairs := make([]string, 0, len(held))
	for _, t := range sortedKeys(held) {
		pairs = append(pairs, t+"="+held[t])
	}
	return strings.Join(pairs, ",")
}

// ParseHeldBy reads the held-by annotation back: target -> ChangeGroup.
func ParseHeldBy(v string) map[string]string {
	out := map[string]string{}
	for _, pair := range strings.Split(v, ",") {
		if t, g, ok := strings.Cut(strings.TrimSpace(pair), "="); ok && t != "" && g != "" {
			out[t] = g
		}
	}
	return out
}
