// Package konflux names the labels and annotations Konflux services put on
// PipelineRuns (build-service, integration-service, Pipelines as Code) and the
// ones nudgeflow adds, in one place.
package konflux

import "strings"

// Konflux's keys on build and nudge PipelineRuns (reference §1, §2).
const (
	LabelComponent       = "appstudio.openshift.io/component"
	LabelPipelineType    = "pipelines.appstudio.openshift.io/type"
	LabelNudgeType       = "build.appstudio.redhat.com/type"
	NudgeTypeValue       = "nudge"
	AnnotationEventType  = "pipelinesascode.tekton.dev/event-type"
	AnnotationNudged     = "build.appstudio.redhat.com/nudged-components"
	AnnotationNudging    = "build.appstudio.redhat.com/nudging-component"
	AnnotationNudgingImg = "build.appstudio.redhat.com/nudging-image"
	AnnotationNudgingPLR = "build.appstudio.redhat.com/nudging-pipeline"
	AnnotationNudgingSHA = "build.appstudio.redhat.com/nudging-commit"
	AnnotationNudgeFiles = "build.appstudio.openshift.io/build-nudge-files"
	AnnotationRepo       = "build.appstudio.openshift.io/repo"
	// AnnotationSourceBranch is Pipelines as Code's source branch of the event that
	// started a build: for a push, the branch pushed to, with or without
	// GitRefBranchPrefix.
	AnnotationSourceBranch = "pipelinesascode.tekton.dev/source-branch"
	GitRefBranchPrefix     = "refs/heads/"
	// MergeQueueBranchPrefix starts the temporary branches GitHub's merge queue
	// pushes (gh-readonly-queue/<base>/pr-<n>-<sha>): a push build of one is a
	// speculative image, never nudged (integration-service's
	// IsPLRCreatedByPACPushEvent, IS:tekton/build_pipeline.go:120-130 at 2ae2878).
	MergeQueueBranchPrefix = "gh-readonly-queue/"
	ResultImageURL         = "IMAGE_URL"
	ResultImageDigest      = "IMAGE_DIGEST"
)

// integration-service's keys on build PipelineRuns (reference §6.4).
const (
	// AnnotationISNudgeProcessed is integration-service's acknowledgement of a push
	// build it processed for NudgeConfig immediate edges: the comma-joined targets it
	// nudged, or one of the ISNudge* reasons when it nudged none. It has its own key
	// because build-service sets build.appstudio.openshift.io/component-nudge-processed
	// on every build, nudged or not.
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
// GitRefBranchPrefix, starts with MergeQueueBranchPrefix. Its image is speculative
// (the queue may drop the candidate commit), so nothing nudges from it; the push
// build of the commit once merged is the one nudged. This is integration-service's
// test, character for character (IS:tekton/build_pipeline.go:120-130 at 2ae2878:
// the annotation only, case-sensitive), so the two never disagree on a build.
func MergeQueueBuild(annotations map[string]string) bool {
	branch, ok := annotations[AnnotationSourceBranch]
	return ok && strings.HasPrefix(strings.TrimPrefix(branch, GitRefBranchPrefix), MergeQueueBranchPrefix)
}
