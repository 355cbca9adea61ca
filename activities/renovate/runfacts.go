package renovate

import (
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// What a Renovate PipelineRun says once it exists (its keys, its outcome, how
// it ended, its place in the branch queue) lives in internal/renovaterun, where
// the bridge reads it too; the launch here writes it under these names.
const (
	ResultOutcome               = renovaterun.ResultOutcome
	OutcomeOK                   = renovaterun.OutcomeOK
	OutcomeRegistryAuthFailed   = renovaterun.OutcomeRegistryAuthFailed
	OutcomeImageLookupFailed    = renovaterun.OutcomeImageLookupFailed
	OutcomeRepositoryNotUpdated = renovaterun.OutcomeRepositoryNotUpdated
	OutcomePRNotOpened          = renovaterun.OutcomePRNotOpened
	OutcomeSuperseded           = renovaterun.OutcomeSuperseded
	ReasonRegistryAuthFailed    = renovaterun.ReasonRegistryAuthFailed
	ReasonImageLookupFailed     = renovaterun.ReasonImageLookupFailed
	ReasonRepositoryNotUpdated  = renovaterun.ReasonRepositoryNotUpdated
	ReasonPRNotOpened           = renovaterun.ReasonPRNotOpened
	ReasonSupersededOnBranch    = renovaterun.ReasonSupersededOnBranch
	ReasonHeldByChangeGroup     = renovaterun.ReasonHeldByChangeGroup
	ReasonHeldReturned          = renovaterun.ReasonHeldReturned
	AnnotationBranch            = renovaterun.AnnotationBranch
	AnnotationQueuedForBranch   = renovaterun.AnnotationQueuedForBranch
	AnnotationBuiltAt           = renovaterun.AnnotationBuiltAt
	AnnotationSupersededBy      = renovaterun.AnnotationSupersededBy
	DeliveredOnBase             = renovaterun.DeliveredOnBase
	DeliveredInPullRequest      = renovaterun.DeliveredInPullRequest
	DeliveredByRunLog           = renovaterun.DeliveredByRunLog
	DeliveredNotReferenced      = renovaterun.DeliveredNotReferenced
	ReasonNotDelivered          = renovaterun.ReasonNotDelivered
	ReasonDeliveryUnknown       = renovaterun.ReasonDeliveryUnknown
)

// RunStatus is how a Renovate run ended (renovaterun.RunStatus); the Nudge
// workflow's RenovateRunStatus activity returns it.
type RunStatus = renovaterun.RunStatus

// DeliveryVerdict is what the forge says of a run (renovaterun.DeliveryVerdict).
type DeliveryVerdict = renovaterun.DeliveryVerdict

// Read and queue a run as the bridge does.
var (
	StatusOf                = renovaterun.StatusOf
	BranchKey               = renovaterun.BranchKey
	BranchName              = renovaterun.BranchName
	ReleaseNextOnBranch     = renovaterun.ReleaseNextOnBranch
	StartIfFree             = renovaterun.StartIfFree
	releasable              = renovaterun.Releasable
	nudgeRuns               = renovaterun.NudgeRuns
	startOrQueue            = renovaterun.StartOrQueue
	stopIfSupersededInKueue = renovaterun.StopIfSupersededInKueue
)
