// Package konflux names the labels and annotations Konflux services put on
// PipelineRuns, Components and Secrets (build-service, integration-service,
// Pipelines as Code) and the ones nudgeflow adds, in one place: no other package
// spells a Konflux key.
//
// Konflux is renaming its keys (ADR 69, konflux-ci/architecture PR #367 at
// e5133f8, "Accepted"): phase 1 writes both the appstudio key and its konflux-ci.dev
// twin, controllers read the new one first and fall back to the old one, and phase
// 4 drops the old ones. ADR 69 has no per-key table (it says "the exact inventory
// ... will be maintained in a tracking document separate from this ADR"); its rule
// is that only the prefix changes, service-specific keys keep their service
// (build.konflux-ci.dev, integration.konflux-ci.dev). So each Key below names its
// new form either as build-service already writes it for konflux-ci.dev Components
// (BS:internal/controller/component_build_controller_v2.go:54-65 at ccde63a) or,
// where no Konflux service writes one yet, by that rule; docs/konflux.md lists which.
// Readers use Key.Get (new first); nudgeflow's own runs are written with Key.Set
// (both forms); lists and informers select either form (Key.Selectors, ListRuns).
package konflux

import (
	"strings"
)

// Key is one Konflux label or annotation key in its ADR 69 forms.
type Key struct {
	// New is the konflux-ci.dev form, read first.
	New string
	// Old is the appstudio form, read when the new one is absent or empty.
	Old string
}

// Get is the key's value in m: the new form's when set, else the old form's.
func (k Key) Get(m map[string]string) string {
	v, _ := k.Lookup(m)
	return v
}

// Lookup is Get, and whether either form is present at all.
func (k Key) Lookup(m map[string]string) (string, bool) {
	if v, ok := m[k.New]; ok && v != "" {
		return v, true
	}
	if v, ok := m[k.Old]; ok {
		return v, true
	}
	v, ok := m[k.New]
	return v, ok
}

// Set writes value under both forms (ADR 69 phase 1: a reader of either finds it)
// and returns m, made when nil.
func (k Key) Set(m map[string]string, value string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k.New] = value
	m[k.Old] = value
	return m
}

// Forms are the key's spellings, new first.
func (k Key) Forms() []string { return []string{k.New, k.Old} }

// The old (appstudio) spellings, as Konflux's old-model services write them alone
// today. Read them through the Keys below; they stay exported for the stand-ins in
// tests that play an old-model service, which write them alone.
const (
	LabelComponent       = "appstudio.openshift.io/component"
	LabelPipelineType    = "pipelines.appstudio.openshift.io/type"
	LabelNudgeType       = "build.appstudio.redhat.com/type"
	AnnotationNudged     = "build.appstudio.redhat.com/nudged-components"
	AnnotationNudging    = "build.appstudio.redhat.com/nudging-component"
	AnnotationNudgingImg = "build.appstudio.redhat.com/nudging-image"
	AnnotationNudgingPLR = "build.appstudio.redhat.com/nudging-pipeline"
	AnnotationNudgingSHA = "build.appstudio.redhat.com/nudging-commit"
	AnnotationNudgeFiles = "build.appstudio.openshift.io/build-nudge-files"
	AnnotationRepo       = "build.appstudio.openshift.io/repo"
	AnnotationCommitSHA  = "build.appstudio.redhat.com/commit_sha"
	AnnotationPRNumber   = "build.appstudio.redhat.com/pull_request_number"
	// On a Component: one Renovate branch per nudging component, and a ConfigMap
	// that replaces the namespace-wide Renovate configuration.
	AnnotationNudgeSimpleBranch      = "build.appstudio.openshift.io/build-nudge-simple-branch"
	AnnotationNudgeRenovateConfigMap = "build.appstudio.openshift.io/nudge_renovate_config_map"
	// On SCM credential Secrets (build-service pkg/git/credentials).
	LabelCredentials        = "appstudio.redhat.com/credentials"
	LabelSCMHost            = "appstudio.redhat.com/scm.host"
	AnnotationSCMRepository = "appstudio.redhat.com/scm.repository"
)

// Konflux's keys in both forms. "BS v2" marks a new form build-service writes on
// the builds of konflux-ci.dev Components (component_build_controller_v2.go:54-65
// at ccde63a); "rule" a new form derived by ADR 69's prefix rule that no Konflux
// service writes yet at the snapshots read (BS ccde63a, IS 2ae2878).
var (
	// On build PipelineRuns (BS v2) and in .tekton/ PipelineRun definitions.
	ComponentKey    = Key{New: "build.konflux-ci.dev/component", Old: LabelComponent}
	PipelineTypeKey = Key{New: "pipelines.konflux-ci.dev/type", Old: LabelPipelineType}
	RepoKey         = Key{New: "build.konflux-ci.dev/repo", Old: AnnotationRepo}
	CommitSHAKey    = Key{New: "build.konflux-ci.dev/commit_sha", Old: AnnotationCommitSHA}
	PRNumberKey     = Key{New: "build.konflux-ci.dev/pull_request_number", Old: AnnotationPRNumber}
	// NudgeFilesKey on a build (rule).
	NudgeFilesKey = Key{New: "build.konflux-ci.dev/build-nudge-files", Old: AnnotationNudgeFiles}
	// On nudge (Renovate) PipelineRuns (rule).
	NudgeTypeKey       = Key{New: "build.konflux-ci.dev/type", Old: LabelNudgeType}
	NudgedKey          = Key{New: "build.konflux-ci.dev/nudged-components", Old: AnnotationNudged}
	NudgingKey         = Key{New: "build.konflux-ci.dev/nudging-component", Old: AnnotationNudging}
	NudgingImageKey    = Key{New: "build.konflux-ci.dev/nudging-image", Old: AnnotationNudgingImg}
	NudgingPipelineKey = Key{New: "build.konflux-ci.dev/nudging-pipeline", Old: AnnotationNudgingPLR}
	NudgingCommitKey   = Key{New: "build.konflux-ci.dev/nudging-commit", Old: AnnotationNudgingSHA}
	// On Components (rule).
	NudgeSimpleBranchKey      = Key{New: "build.konflux-ci.dev/build-nudge-simple-branch", Old: AnnotationNudgeSimpleBranch}
	NudgeRenovateConfigMapKey = Key{New: "build.konflux-ci.dev/nudge_renovate_config_map", Old: AnnotationNudgeRenovateConfigMap}
	// On SCM credential Secrets (rule: ADR 69's own example maps appstudio.redhat.com/
	// to konflux-ci.dev/).
	CredentialsKey   = Key{New: "konflux-ci.dev/credentials", Old: LabelCredentials}
	SCMHostKey       = Key{New: "konflux-ci.dev/scm.host", Old: LabelSCMHost}
	SCMRepositoryKey = Key{New: "konflux-ci.dev/scm.repository", Old: AnnotationSCMRepository}
	// ISNudgeProcessedKey: integration-service's acknowledgement (below), rule.
	ISNudgeProcessedKey = Key{New: "test.konflux-ci.dev/component-nudge-processed", Old: AnnotationISNudgeProcessed}
)

// Values and keys that ADR 69 does not rename.
const (
	PipelineTypeBuild = "build"
	NudgeTypeValue    = "nudge"
	// AnnotationVersion on a new-model build names the Component version it built
	// (BS v2; no old form).
	AnnotationVersion = "build.konflux-ci.dev/version"
	// Pipelines as Code's keys are Tekton's, not Konflux's: ADR 69 leaves them.
	AnnotationEventType = "pipelinesascode.tekton.dev/event-type"
	// AnnotationSourceBranch is Pipelines as Code's source branch of the event that
	// started a build: for a push, the branch pushed to, with or without
	// gitRefBranchPrefix.
	AnnotationSourceBranch = "pipelinesascode.tekton.dev/source-branch"
	AnnotationPullRequest  = "pipelinesascode.tekton.dev/pull-request"
	AnnotationPaCRepoURL   = "pipelinesascode.tekton.dev/repo-url"
	AnnotationPaCSHA       = "pipelinesascode.tekton.dev/sha"
	AnnotationOnCEL        = "pipelinesascode.tekton.dev/on-cel-expression"
	AnnotationOnEvent      = "pipelinesascode.tekton.dev/on-event"
	gitRefBranchPrefix     = "refs/heads/"
	// MergeQueueBranchPrefix starts the temporary branches GitHub's merge queue
	// pushes (gh-readonly-queue/<base>/pr-<n>-<sha>): a push build of one is a
	// speculative image, never nudged (integration-service's
	// IsPLRCreatedByPACPushEvent, IS:tekton/build_pipeline.go:120-130 at 2ae2878).
	MergeQueueBranchPrefix = "gh-readonly-queue/"
	ResultImageURL         = "IMAGE_URL"
	ResultImageDigest      = "IMAGE_DIGEST"
)

// LabelPaCState is Pipelines as Code's state of a run it started (queued,
// started, completed), a label and an annotation: the only hint of a run's end
// in its metadata.
const LabelPaCState = "pipelinesascode.tekton.dev/state"

// ComponentOf is the component a build PipelineRun's labels name, new form first.
func ComponentOf(labels map[string]string) string { return ComponentKey.Get(labels) }

// PipelineTypeOf is a PipelineRun's Konflux pipeline type (build, test, ...).
func PipelineTypeOf(labels map[string]string) string { return PipelineTypeKey.Get(labels) }

// PeersSeeBuild reports whether Konflux's nudging services see a build PipelineRun
// at the snapshots read: both select builds by the old keys only
// (build-service's IsBuildPushPipelineRun: appstudio.openshift.io/component and
// pipelines.appstudio.openshift.io/type, BS ccde63a; integration-service's
// IsBuildPipelineRun: pipelines.appstudio.openshift.io/type, IS 2ae2878). A
// konflux-ci.dev Component's build (new keys only) is nudged by nobody else.
func PeersSeeBuild(labels map[string]string) bool {
	return labels[ComponentKey.Old] != "" && labels[PipelineTypeKey.Old] == PipelineTypeBuild
}

// IsNudgeRun reports whether labels mark a nudge (Renovate) PipelineRun, whoever
// created it.
func IsNudgeRun(labels map[string]string) bool { return NudgeTypeKey.Get(labels) == NudgeTypeValue }

// EventType is Pipelines as Code's event type of a PipelineRun: PaC writes it as
// an annotation and a label (PAC:pkg/kubeinteraction/labels.go).
func EventType(labels, annotations map[string]string) string {
	if ev := annotations[AnnotationEventType]; ev != "" {
		return ev
	}
	return labels[AnnotationEventType]
}

// IsPushEvent: push, or incoming (a re-run of a push), case-insensitive (GitLab
// writes Push).
func IsPushEvent(labels, annotations map[string]string) bool {
	ev := EventType(labels, annotations)
	return strings.EqualFold(ev, "push") || strings.EqualFold(ev, "incoming")
}

// integration-service's keys on build PipelineRuns (reference §6.4).
const (
	// AnnotationISNudgeProcessed is integration-service's acknowledgement of a push
	// build it processed for NudgeConfig immediate edges: the comma-joined targets it
	// nudged, or one of the ISNudge* reasons when it nudged none. It has its own key
	// because build-service sets build.appstudio.openshift.io/component-nudge-processed
	// on every build, nudged or not.
	// Its old form; read it with ISNudgeProcessedKey.
	AnnotationISNudgeProcessed = "test.appstudio.openshift.io/component-nudge-processed"
	// The values of AnnotationISNudgeProcessed that name no target.
	ISNudgeNoMatchingEdges  = "no-matching-edges"
	ISNudgeNoValidTargets   = "no-valid-targets"
	ISNudgeBuildResultError = "build-result-error"
	ISNudgeCredentialsError = "credentials-error"
	ISNudgeNoCredentials    = "no-credentials"
)

// nudgeflow's own keys.
const (
	// AnnotationHeldBy on a nudge PipelineRun lists target=ChangeGroup pairs that held it.
	AnnotationHeldBy = "nudgeflow.konflux-ci.dev/held-by"
	// AnnotationHandedBackBy on nudgeflow's Renovate PipelineRun names the
	// ChangeGroup that handed the build back: that group never intercepts it again
	// (another group, a manual one taking over, may).
	AnnotationHandedBackBy = "nudgeflow.konflux-ci.dev/handed-back-by"
	// AnnotationWorkflowID on nudgeflow's Renovate PipelineRun names the Nudge
	// workflow that launched it.
	AnnotationWorkflowID = "nudgeflow.konflux-ci.dev/workflow-id"
	// AnnotationHeldOutcome on nudgeflow's own Renovate PipelineRun that a
	// ChangeGroup held at admission says where its build went, so the Nudge workflow
	// that launched the run can tell: HeldOutcomeDeliveredPrefix+<group> (the group
	// collects it: the nudge is done, in the group's pull request) or
	// HeldOutcomeReturned (no group took it: the nudge tries again, without using up
	// an attempt). Until the bridge writes it, the run has not ended for the workflow.
	AnnotationHeldOutcome = "nudgeflow.konflux-ci.dev/held-outcome"
	// AnnotationHeldForBatch on another service's nudge PipelineRun lists the
	// targets nudgeflow cancelled it for because NudgeConfig batches them: the
	// held-nudge reconciler gives the build to the target's automatic ChangeGroup
	// (opening it) and moves each target to AnnotationHeldBy, or to
	// AnnotationRenudge when the target is no longer batched, so a resync never
	// opens a second batch for the same build.
	AnnotationHeldForBatch = "nudgeflow.konflux-ci.dev/held-for-batch"
	// AnnotationHeldSettled on another service's nudge PipelineRun that nudgeflow
	// held says that every target was given to a group or nudged again:
	// "delivered=<target>=<group>,... renudged=<target> ...". From then on the run
	// is never looked at again, so a resync or a restart long after its group ended
	// (or its workflow passed retention) cannot nudge the old build a second time.
	AnnotationHeldSettled = "nudgeflow.konflux-ci.dev/held-settled"
	// AnnotationCancelReason says why nudgeflow cancelled the PipelineRun.
	AnnotationCancelReason = "nudgeflow.konflux-ci.dev/cancel-reason"
	// AnnotationRenudge lists targets of a cancelled PipelineRun that no ChangeGroup
	// holds: nudgeflow nudges them itself so their nudges are not lost.
	AnnotationRenudge = "nudgeflow.konflux-ci.dev/renudge"
	// AnnotationAction on a ChangeGroup requests an override: release-now, cancel,
	// rebase or drop=<component>. Kubernetes RBAC on the CR governs who may.
	AnnotationAction = "nudgeflow.konflux-ci.dev/action"
	// FinalizerChangeGroup lets nudgeflow cancel the workflow before the CR goes.
	FinalizerChangeGroup = "nudgeflow.konflux-ci.dev/changegroup"
	// FinalizerBuildRouting holds a push build PipelineRun of a component with nudge
	// edges until the bridge has routed it, so Tekton's pruner cannot delete a build
	// before nudgeflow saw it end (build-service and integration-service hold their
	// builds the same way). It is removed in the same write that adds
	// AnnotationNudgeRouted.
	FinalizerBuildRouting = "nudgeflow.konflux-ci.dev/build-routing"
	// AnnotationNudgeRouted acknowledges a push build the bridge routed: the sorted,
	// comma-joined targets it routed (a Nudge started, a ChangeGroup or ValidatedNudge
	// signalled, or integration-service had already nudged the target), or why it
	// routed none (no-edges, failed, deleted-unfinished, no-results,
	// executed-elsewhere, merge-queue). A build carrying it without the finalizer is never routed
	// again.
	AnnotationNudgeRouted = "nudgeflow.konflux-ci.dev/nudge-routed"
)

// Values of AnnotationHeldOutcome.
const (
	HeldOutcomeDeliveredPrefix = "delivered="
	HeldOutcomeReturned        = "returned"
)

// HeldAtAdmission reports whether nudgeflow's interceptor cancelled a nudge
// PipelineRun at admission: it writes AnnotationCancelReason in the same patch as
// AnnotationHeldBy or AnnotationHeldForBatch, and the held-nudge reconciler later
// moves targets between those and AnnotationRenudge but keeps the reason. Such a
// run must stay cancelled whoever touches it afterwards (tekton-kueue re-pends
// every PipelineRun at creation and Kueue clears spec.status to admit it), and
// nudgeflow's worker must not release it.
func HeldAtAdmission(annotations map[string]string) bool {
	return annotations[AnnotationHeldBy] != "" || annotations[AnnotationHeldForBatch] != "" || annotations[AnnotationCancelReason] != ""
}

// MergeQueueBuild reports whether a build PipelineRun's annotations say it ran for
// a push to a GitHub merge-queue branch: AnnotationSourceBranch, after an optional
// gitRefBranchPrefix, starts with MergeQueueBranchPrefix. Its image is speculative
// (the queue may drop the candidate commit), so nothing nudges from it; the push
// build of the commit once merged is the one nudged. This is integration-service's
// test, character for character (IS:tekton/build_pipeline.go:120-130 at 2ae2878:
// the annotation only, case-sensitive), so the two never disagree on a build.
func MergeQueueBuild(annotations map[string]string) bool {
	branch, ok := annotations[AnnotationSourceBranch]
	return ok && strings.HasPrefix(strings.TrimPrefix(branch, gitRefBranchPrefix), MergeQueueBranchPrefix)
}

// SourceLink is the link to the commit a build built, as build-service writes
// build.appstudio.openshift.io/repo ("<repository>?rev=<sha>"), for the nudge's
// texts and its nudging-commit annotation: the build's own annotation (new form
// first), else Pipelines as Code's sha on repoURL (the Component's repository),
// or on PaC's repo-url annotation when repoURL is "". Every build PaC starts
// carries the sha; a build whose runner wrote neither (a hand-made PipelineRun)
// gets "", which callers must not show as a source.
func SourceLink(annotations map[string]string, repoURL string) string {
	if link := RepoKey.Get(annotations); link != "" {
		return link
	}
	sha := annotations[AnnotationPaCSHA]
	if sha == "" {
		return ""
	}
	if repoURL == "" {
		repoURL = annotations[AnnotationPaCRepoURL]
	}
	if repoURL == "" {
		return ""
	}
	return strings.TrimSuffix(strings.TrimSuffix(repoURL, "/"), ".git") + "?rev=" + sha
}
