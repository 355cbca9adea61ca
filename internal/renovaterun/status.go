// Package renovaterun is what a Renovate PipelineRun of a nudge says once it
// exists, read alike by the bridge and the activities: nudgeflow's keys on it,
// how it ended (StatusOf, the step's outcome, the forge's delivery verdict), and
// the branch queue that starts one run per nudge branch and stops superseded ones.
// Launching a run is activities/renovate's.
package renovaterun

import (
	"fmt"
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"knative.dev/pkg/apis"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// Keys nudgeflow writes on its Renovate PipelineRuns, beside Konflux's (internal/konflux).
const (
	// LabelManagedBy marks nudgeflow's own runs (ManagedByNudgeflow).
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelKueueQueue is the queue tekton-kueue's webhook assigns a PipelineRun it
	// pends (tekton-kueue pkg/common QueueLabel).
	LabelKueueQueue    = "kueue.x-k8s.io/queue-name"
	ManagedByNudgeflow = "nudgeflow"
	// AnnotationBuiltAt is the start of the build a run nudges (RFC 3339).
	AnnotationBuiltAt = "nudgeflow.konflux-ci.dev/built-at"
	// AnnotationSupersededBy names the run for a newer build that stopped this one.
	AnnotationSupersededBy = "nudgeflow.konflux-ci.dev/superseded-by"
)

// RunStatus is how a Renovate run ended, as far as Kubernetes knows.
type RunStatus struct {
	Name      string `json:"name"`
	Done      bool   `json:"done"`
	Succeeded bool   `json:"succeeded"`
	// Gone means the run no longer exists (pruned or deleted) before it ended.
	Gone    bool   `json:"gone,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// HeldBy is the ChangeGroup that held the run at admission and collects its
	// build: the nudge goes on in that group's pull request.
	HeldBy string `json:"heldBy,omitempty"`
	// Cancelled: someone other than nudgeflow cancelled or stopped the run (a
	// person with tkn or the console, spec.status), and no ChangeGroup held it.
	// The nudge ends there; it is not a failure to retry.
	Cancelled bool `json:"cancelled,omitempty"`
	// SupersededBy names the run for a newer build of the same edge that stopped
	// this one (supersede.go): the nudge ends there, the newer one carries it.
	SupersededBy string `json:"supersededBy,omitempty"`
	// ExitedZero: Renovate ended with exit code 0 (Tekton's Succeeded condition
	// True), whatever the step read in its log: whether it delivered is the
	// forge's to say (CheckDelivery).
	ExitedZero bool `json:"exitedZero,omitempty"`
}

// RunStatus.Reason of a run a ChangeGroup held at admission: the group took its
// build, or it did not (it ended in between): the run failed, but the build was never tried.
const (
	ReasonHeldByChangeGroup = "HeldByChangeGroup"
	ReasonHeldReturned      = "HeldAndReturned"
)

// StatusOf reads a PipelineRun's Succeeded condition. A run a ChangeGroup held at
// admission ends when the bridge has written where its build went
// (konflux.AnnotationHeldOutcome), not when Tekton marks it cancelled: only then
// does the Nudge workflow know whether to stop or to try again.
func StatusOf(plr *tektonv1.PipelineRun) RunStatus {
	s := RunStatus{Name: plr.Name}
	if plr.Annotations[konflux.AnnotationHeldBy] != "" {
		outcome := plr.Annotations[konflux.AnnotationHeldOutcome]
		if group, ok := strings.CutPrefix(outcome, konflux.HeldOutcomeDeliveredPrefix); ok {
			s.Done, s.HeldBy, s.Reason = true, group, ReasonHeldByChangeGroup
			s.Message = fmt.Sprintf("ChangeGroup %s held the run and collects its build", group)
			return s
		}
		if outcome == konflux.HeldOutcomeReturned {
			// Cancelled at creation, the run never starts, whatever Tekton writes.
			s.Done, s.Reason = true, ReasonHeldReturned
			s.Message = "a ChangeGroup held the run but no longer collects its build"
		}
		return s
	}
	if c := plr.Status.GetCondition(apis.ConditionSucceeded); c != nil && !c.IsUnknown() {
		s.Done, s.Succeeded, s.Reason, s.Message = true, c.IsTrue(), c.Reason, c.Message
		s.Cancelled = !s.Succeeded && cancelledByRequest(plr, c.Reason)
		s.ExitedZero = s.Succeeded
		if s.Succeeded {
			switch outcomeOf(plr) {
			case OutcomeRegistryAuthFailed:
				s.Succeeded, s.Reason, s.Message = false, ReasonRegistryAuthFailed, registryAuthMessage(plr)
			case OutcomeImageLookupFailed:
				s.Succeeded, s.Reason, s.Message = false, ReasonImageLookupFailed, imageLookupMessage(plr)
			case OutcomeRepositoryNotUpdated:
				s.Succeeded, s.Reason, s.Message = false, ReasonRepositoryNotUpdated, repositoryNotUpdatedMessage(plr)
			case OutcomePRNotOpened:
				s.Succeeded, s.Reason, s.Message = false, ReasonPRNotOpened, prNotOpenedMessage(plr)
			default:
				if ok, by := supersededOnBranch(outcomeOf(plr)); ok {
					// The step found a newer build on the nudge branch and wrote nothing.
					s.Succeeded, s.Reason, s.SupersededBy = false, ReasonSupersededOnBranch, by
					s.Message = "the nudge branch already carries a newer build's digest (run " + by + "): the step did not run Renovate"
				}
			}
		}
		if by := plr.Annotations[AnnotationSupersededBy]; by != "" && !s.Succeeded {
			s.SupersededBy, s.Cancelled = by, false
		}
	}
	return s
}

// cancelledByRequest: the run ended because its spec.status asked it to stop
// (Cancelled, CancelledRunFinally, StoppedRunFinally; nudgeflow only writes that on
// the runs a ChangeGroup holds, which carry AnnotationHeldBy), or Tekton says it was
// cancelled. A timeout or a failed task is not a cancel.
func cancelledByRequest(plr *tektonv1.PipelineRun, reason string) bool {
	switch plr.Spec.Status {
	case tektonv1.PipelineRunSpecStatusCancelled, tektonv1.PipelineRunSpecStatusCancelledRunFinally,
		tektonv1.PipelineRunSpecStatusStoppedRunFinally:
		return true
	}
	return reason == tektonv1.PipelineRunReasonCancelled.String()
}
