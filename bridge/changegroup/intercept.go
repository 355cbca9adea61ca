package changegroup

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/nudgeflow/nudgeflow/internal/changegroups"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
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
	// changegroups.Index).
	Index *changegroups.Index
}

// +kubebuilder:webhook:path=/mutate-tekton-dev-v1-pipelinerun-nudge,mutating=true,failurePolicy=ignore,sideEffects=None,groups=tekton.dev,resources=pipelineruns,verbs=create,versions=v1,name=nudge-pipelinerun.nudgeflow.konflux-ci.dev,admissionReviewVersions=v1,timeoutSeconds=5
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=changegroups,verbs=get;list;watch

// Handle decides on one PipelineRun.
func (i *Interceptor) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("only creation is intercepted")
	}
	var obj map[string]any
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding PipelineRun: %w", err))
	}
	meta, _ := obj["metadata"].(map[string]any)
	labels := stringMap(meta["labels"])
	annotations := stringMap(meta["annotations"])
	if labels[konflux.LabelNudgeType] != konflux.NudgeTypeValue {
		return admission.Allowed("not a nudge PipelineRun")
	}
	source := annotations[konflux.AnnotationNudging]
	targets := strings.Fields(annotations[konflux.AnnotationNudged])
	if source == "" || len(targets) == 0 {
		return admission.Allowed("nudge PipelineRun without source or targets")
	}
	held, free, err := i.classify(ctx, req.Namespace, source, targets, annotations[konflux.AnnotationHandedBackBy])
	if err != nil {
		// Failing open keeps today's behaviour; the error is logged for operators.
		log.FromContext(ctx).Error(err, "cannot tell whether the nudge is held; letting it run", "namespace", req.Namespace, "source", source)
		return admission.Allowed("ChangeGroups could not be read")
	}
	if len(held) == 0 {
		return admission.Allowed("no active ChangeGroup holds this nudge")
	}
	pairs := make([]string, 0, len(held))
	groups := map[string]bool{}
	for _, t := range sortedKeys(held) {
		pairs = append(pairs, t+"="+held[t])
		groups[held[t]] = true
	}
	setAnnotation(obj, konflux.AnnotationHeldBy, strings.Join(pairs, ","))
	setAnnotation(obj, konflux.AnnotationCancelReason, "cancelled by ChangeGroup "+strings.Join(sortedKeys(groups), ", "))
	if len(free) > 0 {
		setAnnotation(obj, konflux.AnnotationRenudge, strings.Join(free, " "))
	}
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		obj["spec"] = spec
	}
	spec["status"] = "Cancelled"
	mutated, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, mutated)
}

// classify maps each held target to its ChangeGroup and lists the targets no group
// holds. A hand-back nudge is never held by the group that handed it back (its CR
// may still say it collects while it ends): that would return the build to a group
// that has let it go.
func (i *Interceptor) classify(ctx context.Context, ns, source string, targets []string, handedBackBy string) (map[string]string, []string, error) {
	held := map[string]string{}
	var free []string
	for _, t := range targets {
		cg, err := i.Index.FindHolding(ctx, ns, source, t)
		if err != nil {
			return nil, nil, err
		}
		if cg != nil && (handedBackBy == "" || cg.Name != handedBackBy) {
			held[t] = cg.Name
		} else {
			free = append(free, t)
		}
	}
	return held, free, nil
}

func stringMap(v any) map[string]string {
	out := map[string]string{}
	m, _ := v.(map[string]any)
	for k, val := range m {
		if s, ok := val.(string); ok {
			out[k] = s
		}
	}
	return out
}

func setAnnotation(obj map[string]any, key, value string) {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		meta["annotations"] = ann
	}
	ann[key] = value
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
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
