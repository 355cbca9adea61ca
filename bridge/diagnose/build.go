package diagnose

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	"github.com/nudgeflow/nudgeflow/workflows/validatednudge"
)

// BuildReport says where one build is in nudgeflow's hands and, per nudge edge of
// its component, what it waits for.
type BuildReport struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Component string    `json:"component"`
	Created   time.Time `json:"created"`
	// PushBuild: a push build of a component, the only builds that nudge.
	PushBuild  bool `json:"pushBuild"`
	MergeQueue bool `json:"mergeQueue,omitempty"`
	Held       bool `json:"held"`
	// Routed is the bridge's acknowledgement (targets, or why none); "" with
	// RoutedSet false: not routed yet.
	Routed    string `json:"routed,omitempty"`
	RoutedSet bool   `json:"routedSet"`
	Deleting  bool   `json:"deleting,omitempty"`
	PaCState  string `json:"pacState,omitempty"`
	// ISVerdict is integration-service's acknowledgement, when written.
	ISVerdict *string `json:"isVerdict,omitempty"`
	// Summary is where the build is, in one sentence.
	Summary string       `json:"summary"`
	Edges   []EdgeReport `json:"edges"`
	// NudgeRuns are the nudge PipelineRuns made from this build (anyone's).
	NudgeRuns []NudgeRun `json:"nudgeRuns,omitempty"`
}

// EdgeReport is one edge of the build's component.
type EdgeReport struct {
	Edge        string `json:"edge"`
	Target      string `json:"target"`
	Mode        string `json:"mode"`
	Source      string `json:"source"`
	GatingGroup string `json:"gatingGroup,omitempty"`
	// Runner is who nudges the edge beside the peers given (build-service,
	// integration-service, nudgeflow).
	Runner string `json:"runner"`
	// Group is the ChangeGroup holding the edge, if one does.
	Group *GroupRef `json:"group,omitempty"`
	// WorkflowID is the Temporal workflow that carries the nudge, when nudgeflow
	// runs it (temporal workflow describe -w <id>).
	WorkflowID string `json:"workflowID,omitempty"`
	// Runs are the nudge PipelineRuns of this target made from the build.
	Runs []string `json:"runs,omitempty"`
	// WaitingFor says what the edge waits for: a peer's verdict, a group's other
	// members, a held or queued run; "" when nothing (done as far as the
	// cluster shows).
	WaitingFor string `json:"waitingFor,omitempty"`
	// State says what the cluster shows of the edge.
	State string `json:"state"`
}

// GroupRef is a ChangeGroup as one edge sees it.
type GroupRef struct {
	Name  string `json:"name"`
	Phase string `json:"phase"`
	Ready string `json:"ready,omitempty"`
	// SourceState is the edge source's state in the group (Waiting: no build of
	// it yet); SourceBuild the digest the group holds of it, and SourceRun the
	// nudge PipelineRun that carried it (empty when the bridge delivered the build
	// itself).
	SourceState string `json:"sourceState,omitempty"`
	SourceBuild string `json:"sourceBuild,omitempty"`
	SourceRun   string `json:"sourceRun,omitempty"`
	// HasBuild: the run the status names is this build or one of its nudge runs.
	// False says nothing when SourceRun is empty: metadata carries no digest to
	// compare SourceBuild with (the build's IMAGE_DIGEST result does).
	HasBuild bool `json:"hasBuild"`
	// Waiting are the members with no new build yet.
	Waiting []string `json:"waiting,omitempty"`
	PR      string   `json:"pullRequest,omitempty"`
}

// NudgeRun is a nudge PipelineRun's metadata, as far as nudgeflow writes and reads it.
type NudgeRun struct {
	Name    string   `json:"name"`
	Targets []string `json:"targets"`
	// ByNudgeflow: nudgeflow's own Renovate run (else build-service's or
	// integration-service's).
	ByNudgeflow bool   `json:"byNudgeflow"`
	WorkflowID  string `json:"workflowID,omitempty"`
	// HeldBy are target=ChangeGroup pairs that held (cancelled) it at admission.
	HeldBy       string `json:"heldBy,omitempty"`
	HeldForBatch string `json:"heldForBatch,omitempty"`
	HeldSettled  string `json:"heldSettled,omitempty"`
	HeldOutcome  string `json:"heldOutcome,omitempty"`
	Renudge      string `json:"renudge,omitempty"`
	// QueuedBehind is the run it waits for on its branch.
	QueuedBehind string `json:"queuedBehind,omitempty"`
	SupersededBy string `json:"supersededBy,omitempty"`
	// KueueQueue is the queue tekton-kueue pended it in.
	KueueQueue string `json:"kueueQueue,omitempty"`
	PaCState   string `json:"pacState,omitempty"`
}

// ExplainBuild reads one build's metadata, its component's edges (the namespace's
// NudgeConfig, the Component), the ChangeGroups of its targets, and the metadata of
// the namespace's nudge PipelineRuns, and says what each edge waits for. peers are
// the services nudging beside nudgeflow, as the bridge was told (--nudging-peers).
func ExplainBuild(ctx context.Context, r Reader, namespace, name string, peers builds.Peers, chunk int64, now time.Time) (*BuildReport, error) {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(tektonv1.SchemeGroupVersion.WithKind("PipelineRun"))
	if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, m); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("build PipelineRun %s/%s does not exist (pruned, or another name): %w", namespace, name, err)
		}
		return nil, fmt.Errorf("reading build PipelineRun %s/%s: %w", namespace, name, err)
	}
	plr := asRun(m)
	rep := &BuildReport{
		Namespace: namespace, Name: name, Component: konflux.ComponentOf(m.Labels), Created: m.CreationTimestamp.Time,
		PushBuild: builds.IsPushBuild(plr), MergeQueue: builds.IsMergeQueueBuild(plr), Held: builds.Holds(plr),
		Deleting: !m.DeletionTimestamp.IsZero(), PaCState: pacState(m),
	}
	rep.Routed, rep.RoutedSet = m.Annotations[konflux.AnnotationNudgeRouted]
	decided, verdict, isNudged := builds.IsVerdict(m.ObjectMeta)
	if decided {
		rep.ISVerdict = &verdict
	}
	switch {
	case !rep.PushBuild:
		rep.Summary = "not a push build of a component (pipeline type, component label or event type): nudgeflow never routes it"
		return rep, nil
	case rep.MergeQueue && !rep.Held:
		rep.Summary = "a merge-queue build: speculative, never nudged (the push build of the merged commit is)"
		return rep, nil
	}
	edges, err := builds.EdgesOfBuild(ctx, r, m.ObjectMeta, peers)
	if err != nil {
		return nil, fmt.Errorf("reading the nudge edges of %s: %w", rep.Component, err)
	}
	runs, err := nudgeRunsOf(ctx, r, namespace, name, chunk)
	if err != nil {
		return nil, err
	}
	rep.NudgeRuns = runs
	rep.Summary = summary(rep, len(edges))
	// A group holds the builds that finish while it is active; metadata has no end
	// time, so the deletion (an end) or now stands for it.
	at := now
	if rep.Deleting {
		at = m.DeletionTimestamp.Time
	}
	routed := routedTargets(rep)
	var awaitingIS []string
	for _, e := range edges {
		er := EdgeReport{Edge: nudgeapi.Edge(e.From, e.To), Target: e.To, Mode: string(e.Mode), Source: string(e.Source),
			GatingGroup: e.GatingGroup, Runner: string(peers.RunnerOf(e))}
		for _, run := range runs {
			if slices.Contains(run.Targets, e.To) {
				er.Runs = append(er.Runs, run.Name)
			}
		}
		cg, err := grouplookup.FindHoldingAt(ctx, r, namespace, e.From, e.To, at)
		if err != nil {
			return nil, fmt.Errorf("reading the ChangeGroups of %s: %w", e.To, err)
		}
		if cg != nil {
			er.Group = groupRef(cg, e.From, name, runs)
		}
		explainEdge(&er, e, rep, plr, decided, verdict, isNudged, routed, runs)
		if er.Group == nil && er.Runner == string(builds.RunnerIntegrationService) && !decided && !rep.RoutedSet {
			awaitingIS = append(awaitingIS, er.Edge)
		}
		rep.Edges = append(rep.Edges, er)
	}
	if len(awaitingIS) > 0 && rep.Held {
		// An ended build's other edges are routed at once; the build is acknowledged
		// and released only when the verdict is in (builds.BuildReconciler.route).
		rep.Summary = "held, not acknowledged yet: once the build ended, the bridge routes its edges and releases it when integration-service's verdict is in (edges " +
			strings.Join(awaitingIS, ", ") + ")" + pacHint(rep.PaCState)
		for i := range rep.Edges {
			if er := &rep.Edges[i]; er.Group == nil && !slices.Contains(awaitingIS, er.Edge) && er.State == stateNotRouted {
				er.WaitingFor = "the build's end: the bridge routes this edge then, without waiting for integration-service"
			}
		}
	}
	return rep, nil
}

// summary is where the build is, before its edges.
func summary(rep *BuildReport, edges int) string {
	switch {
	case rep.RoutedSet && rep.Held:
		return "routed (" + rep.Routed + ") but still held: the bridge releases it on its next pass"
	case rep.RoutedSet:
		return "routed and released by nudgeflow (" + rep.Routed + ")"
	case rep.Held && rep.Deleting:
		return "deleted while held, not routed yet: the bridge routes it as an ended build (a build deleted unfinished is acknowledged deleted-unfinished)"
	case rep.Held:
		return "held, not routed yet: the bridge routes it when Tekton ends it" + pacHint(rep.PaCState)
	case edges == 0:
		return "neither held nor routed: its component has no nudge edges, so nudgeflow leaves it alone"
	default:
		return "neither held nor routed although its component has edges: the hold webhook skipped it (it fails open) and no bridge has seen it yet; a running bridge holds or routes it on its next pass"
	}
}

func pacHint(state string) string {
	if state == "" {
		return ""
	}
	return " (Pipelines as Code says " + state + ")"
}

// routedTargets are the targets the acknowledgement names (none for a reason).
func routedTargets(rep *BuildReport) map[string]bool {
	out := map[string]bool{}
	switch rep.Routed {
	case "", builds.RoutedNoEdges, builds.RoutedFailed, builds.RoutedDeletedUnfinished, builds.RoutedNoResults,
		builds.RoutedExecutedElsewhere, builds.RoutedMergeQueue:
		return out
	}
	for _, t := range strings.Split(rep.Routed, ",") {
		out[strings.TrimSpace(t)] = true
	}
	return out
}

func groupRef(cg *appstudiov1alpha1.ChangeGroup, source, build string, runs []NudgeRun) *GroupRef {
	g := &GroupRef{Name: cg.Name, Phase: string(cg.Status.Phase), Ready: cg.Status.Ready, PR: cg.Status.PullRequestURL, Waiting: waitingMembers(cg)}
	for _, c := range cg.Status.Components {
		if c.Name != source {
			continue
		}
		g.SourceState, g.SourceBuild, g.SourceRun = string(c.State), c.NewBuild, c.BuildPipelineRun
		g.HasBuild = c.BuildPipelineRun != "" && (c.BuildPipelineRun == build ||
			slices.ContainsFunc(runs, func(r NudgeRun) bool { return r.Name == c.BuildPipelineRun }))
	}
	return g
}

// which says which build of source the group holds.
func (g *GroupRef) which(source string) string {
	switch {
	case g.HasBuild:
		return "this build"
	case g.SourceRun != "":
		return "a build of " + source + " carried by " + g.SourceRun + " (" + orDash(g.SourceBuild) + "), not this one"
	}
	return "a build of " + source + " (" + orDash(g.SourceBuild) + "; this build's if that is its IMAGE_DIGEST)"
}

// explainEdge fills State and WaitingFor from what the cluster shows, in the order
// the bridge decides (builds.BuildReconciler.nudge): a holding group first, then
// who runs the edge, then integration-service's verdict, then nudgeflow's own runs.
func explainEdge(er *EdgeReport, e builds.Edge, rep *BuildReport, plr *tektonv1.PipelineRun, decided bool, verdict string,
	isNudged, routed map[string]bool, runs []NudgeRun) {
	if g := er.Group; g != nil {
		hasSource := g.SourceState != "" && g.SourceState != string(appstudiov1alpha1.ComponentWaiting)
		switch {
		case (g.HasBuild || (hasSource && rep.RoutedSet)) && g.Phase == string(appstudiov1alpha1.PhaseReady):
			er.State = "ChangeGroup " + g.Name + " holds " + g.which(e.From) + " and released CI"
			er.WaitingFor = "the group's pull request to merge (" + orDash(g.PR) + ")"
		case g.HasBuild || (hasSource && rep.RoutedSet):
			er.State = "ChangeGroup " + g.Name + " (" + orDash(g.Phase) + ", ready " + orDash(g.Ready) + ") holds " + g.which(e.From)
			er.WaitingFor = "the group's other members: " + orNone(g.Waiting)
		case !rep.RoutedSet:
			er.State = "held by ChangeGroup " + g.Name + " (" + orDash(g.Phase) + ")"
			if hasSource {
				er.State += ", which holds " + g.which(e.From)
			}
			er.WaitingFor = "the build's end: the bridge then delivers it to the group"
		default:
			er.State = "routed while ChangeGroup " + g.Name + " holds the edge; its status lists no build of " + e.From + " yet"
			er.WaitingFor = "the group's workflow to take the build: nudgeflow changegroup status " + g.Name + " -n " + rep.Namespace
		}
		addHeldRuns(er, runs)
		return
	}
	runner := builds.Runner(er.Runner)
	switch {
	case runner == builds.RunnerBuildService:
		er.State = "build-service runs this edge (it is in " + e.From + "'s build-nudges-ref)"
		if len(er.Runs) == 0 {
			er.WaitingFor = "build-service's nudge PipelineRun"
		}
		addHeldRuns(er, runs)
		return
	case runner == builds.RunnerIntegrationService && !decided:
		er.State = "integration-service runs this edge and has not written its verdict (" + konflux.AnnotationISNudgeProcessed + ")"
		er.WaitingFor = "integration-service's verdict; nudgeflow takes the edge over --integration-service-deadline (default " +
			builds.DefaultISDecisionDeadline.String() + ") after the build ended"
		return
	case runner == builds.RunnerIntegrationService && isNudged[e.To]:
		er.State = "nudged by integration-service (verdict " + verdict + ")"
		addHeldRuns(er, runs)
		return
	}
	if !rep.RoutedSet {
		er.State = stateNotRouted
		if rep.Held {
			er.WaitingFor = "the build's end: the bridge routes it then" + pacHint(rep.PaCState)
		} else {
			er.WaitingFor = "a bridge to see the build (it is not held)"
		}
		if runner == builds.RunnerIntegrationService {
			er.State += "; integration-service left the target out (" + verdict + "): nudgeflow nudges it"
		}
		return
	}
	if !routed[e.To] {
		er.State = "routed without this target (" + rep.Routed + ")"
		return
	}
	if e.Mode == konfluxv1alpha1.ModeValidated {
		er.WorkflowID = validatednudge.WorkflowID(rep.Namespace, e.From, e.To)
		er.State = "given to its ValidatedNudge workflow"
		er.WaitingFor = "ComponentGroup " + orDash(e.GatingGroup) + "'s Snapshot to pass its tests"
		return
	}
	er.WorkflowID = nudgeapi.WorkflowID(rep.Namespace, string(plr.UID), e.To)
	er.State = "nudged by nudgeflow's Nudge workflow"
	if runner == builds.RunnerIntegrationService {
		er.State += " (integration-service left the target out: " + verdict + ")"
	}
	for _, run := range runs {
		if !run.ByNudgeflow || !slices.Contains(run.Targets, e.To) {
			continue
		}
		switch {
		case run.SupersededBy != "":
			er.State = "its Renovate run " + run.Name + " was superseded by " + run.SupersededBy
		case run.QueuedBehind != "":
			er.WaitingFor = "Renovate run " + run.QueuedBehind + " on the same branch (" + run.Name + " is queued behind it)"
		case run.KueueQueue != "" && run.PaCState == "":
			er.WaitingFor = "admission by Kueue queue " + run.KueueQueue + " (run " + run.Name + ", if still pending)"
		}
	}
	if er.WaitingFor == "" && len(er.Runs) == 0 {
		er.WaitingFor = "its Renovate run: none exists yet (the workflow's retry backoff, or the worker): see the workflow"
	}
}

// stateNotRouted is an edge's state while the build carries no acknowledgement.
const stateNotRouted = "not routed yet"

// addHeldRuns names the runs of the edge's target a group held at admission.
func addHeldRuns(er *EdgeReport, runs []NudgeRun) {
	for _, run := range runs {
		if !slices.Contains(run.Targets, er.Target) {
			continue
		}
		if run.HeldBy != "" || run.HeldForBatch != "" {
			er.State += "; nudge run " + run.Name + " held at admission (" + orDash(run.HeldBy+run.HeldForBatch) + ")"
		}
	}
}

// nudgeRunsOf lists, as metadata, the namespace's nudge PipelineRuns made from the
// build (their nudging-pipeline names it).
func nudgeRunsOf(ctx context.Context, r Reader, namespace, build string, chunk int64) ([]NudgeRun, error) {
	var out []NudgeRun
	err := eachRunMeta(ctx, r, namespace, chunk, nudgeRunSelectors(), func(m *metav1.PartialObjectMetadata) {
		if konflux.NudgingPipelineKey.Get(m.Annotations) != build {
			return
		}
		a := m.Annotations
		run := NudgeRun{
			Name: m.Name, ByNudgeflow: m.Labels[renovaterun.LabelManagedBy] == renovaterun.ManagedByNudgeflow,
			WorkflowID: a[konflux.AnnotationWorkflowID], HeldBy: a[konflux.AnnotationHeldBy], HeldForBatch: a[konflux.AnnotationHeldForBatch],
			HeldSettled: a[konflux.AnnotationHeldSettled], HeldOutcome: a[konflux.AnnotationHeldOutcome], Renudge: a[konflux.AnnotationRenudge],
			QueuedBehind: a[renovaterun.AnnotationQueuedForBranch], SupersededBy: a[renovaterun.AnnotationSupersededBy],
			KueueQueue: m.Labels[renovaterun.LabelKueueQueue], PaCState: pacState(m),
		}
		for _, t := range strings.Split(konflux.NudgedKey.Get(a), ",") {
			if t = strings.TrimSpace(t); t != "" {
				run.Targets = append(run.Targets, t)
			}
		}
		out = append(out, run)
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none (it waits for its timeout, a release or the pull request)"
	}
	return strings.Join(s, ", ")
}
