package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ChangeGroupPhase is where a ChangeGroup is in its life (ADR 59).
// +kubebuilder:validation:Enum=Initialized;Waiting;Ready;Completed;Cancelled;Failed
type ChangeGroupPhase string

const (
	// PhaseInitialized: the group exists, no nudging component has a new build yet.
	PhaseInitialized ChangeGroupPhase = "Initialized"
	// PhaseWaiting: a draft PR collects the builds that are ready; others are awaited.
	PhaseWaiting ChangeGroupPhase = "Waiting"
	// PhaseReady: every component is ready (or a person released early); CI was released once.
	PhaseReady ChangeGroupPhase = "Ready"
	// PhaseCompleted: the PR was merged.
	PhaseCompleted ChangeGroupPhase = "Completed"
	// PhaseCancelled: the PR was closed, the group was cancelled or it timed out.
	PhaseCancelled ChangeGroupPhase = "Cancelled"
	// PhaseFailed: the group could not do its job (for example the forge refused a write).
	PhaseFailed ChangeGroupPhase = "Failed"
)

// IsFinal reports whether no further transition can happen from the phase.
func (p ChangeGroupPhase) IsFinal() bool {
	return p == PhaseCompleted || p == PhaseCancelled || p == PhaseFailed
}

// ComponentState is the state of one nudging component inside a ChangeGroup.
// +kubebuilder:validation:Enum=Waiting;Ready;NotReferenced;Dropped
type ComponentState string

const (
	// ComponentWaiting: no new build of the component has arrived yet.
	ComponentWaiting ComponentState = "Waiting"
	// ComponentReady: a new build arrived; its digest is in the PR.
	ComponentReady ComponentState = "Ready"
	// ComponentDropped: a person removed the component; it is no longer awaited.
	ComponentDropped ComponentState = "Dropped"
	// ComponentNotReferenced: a new build arrived, but no file of the nudged
	// component matched by the file patterns references its image (by the
	// repository it was built in or one it is released to): the PR cannot carry it.
	ComponentNotReferenced ComponentState = "NotReferenced"
)

// ConditionAllComponentsReady is the aggregated condition of a ChangeGroup.
const ConditionAllComponentsReady = "AllComponentsReady"

// ConditionCIStarted says, once CI is released, whether a pipeline started for the
// released head commit. It is a warning, never a failure of the group: the builds
// are delivered in the pull request either way.
const ConditionCIStarted = "CIStarted"

// Reasons of ConditionCIStarted.
const (
	// CIReasonWaiting (Unknown): released; within the grace period, nothing reported yet.
	CIReasonWaiting = "WaitingForPipeline"
	// CIReasonStarted (True): a check run or commit status appeared on the commit.
	CIReasonStarted = "PipelineStarted"
	// CIReasonAwaitingApproval (False): Pipelines as Code waits for an `/ok-to-test`
	// from a trusted person (the pull request's author is not trusted).
	CIReasonAwaitingApproval = "AwaitingApproval"
	// CIReasonNoPipelineStarted (False): nothing reported within the grace period
	// (Pipelines as Code ignores an untrusted bot without a word).
	CIReasonNoPipelineStarted = "NoPipelineStarted"
)

// NudgingComponentRef names one component whose builds nudge the nudged component.
type NudgingComponentRef struct {
	// Name of a Component in the ChangeGroup's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
}

// ChangeGroupSpec is what a person asks for: collect the builds of the nudging
// components into one pull request against the nudged component.
type ChangeGroupSpec struct {
	// NudgedComponent is the component that will be nudged (for example the bundle image).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	NudgedComponent string `json:"nudgedComponent"`

	// NudgingComponents are the components whose builds are collected. When empty,
	// every component that nudges the nudged component is filled in by the controller.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=500
	NudgingComponents []NudgingComponentRef `json:"nudgingComponents,omitempty"`

	// Timeout ends the group if it has not completed in time, as a Go duration (24h, 90m).
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$')",message="timeout must be a duration such as 24h, 90m or 1h30m"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// AutoRelease lets the workflow release CI on its own (ADR 67 Phase 2 batching):
	// when no new build arrived for window (as the policy allows), or maxWait after
	// the group started, with what is ready. Automatic groups carry their
	// NudgeConfig's batching policy here; a person may set it on a manual group too.
	// +optional
	AutoRelease *AutoRelease `json:"autoRelease,omitempty"`
}

// AutoReleasePolicy says what a quiet window releases.
// +kubebuilder:validation:Enum=all;quorum;window
type AutoReleasePolicy string

const (
	// AutoReleaseWindow: a window with no new build releases what is ready.
	AutoReleaseWindow AutoReleasePolicy = "window"
	// AutoReleaseQuorum: a quiet window releases when at least quorum members are ready.
	AutoReleaseQuorum AutoReleasePolicy = "quorum"
	// AutoReleaseAll: only every member ready, or maxWait, releases.
	AutoReleaseAll AutoReleasePolicy = "all"
)

// AutoRelease is enforced durably by the group's workflow (absolute timers that
// survive continue-as-new and worker restarts).
// +kubebuilder:validation:XValidation:rule="!has(self.policy) || self.policy != 'quorum' || has(self.quorum)",message="policy quorum needs quorum: the number of members that must be ready when the window passes"
type AutoRelease struct {
	// Window: release (as policy allows) once no new build arrived for this long.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$')",message="window must be a duration such as 30m, 2h or 1h30m"
	Window *metav1.Duration `json:"window,omitempty"`
	// MaxWait: release with what is ready this long after the group started.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$')",message="maxWait must be a duration such as 24h or 90m"
	MaxWait *metav1.Duration `json:"maxWait,omitempty"`
	// Policy: window (default), quorum or all.
	// +optional
	Policy AutoReleasePolicy `json:"policy,omitempty"`
	// Quorum: members that must be ready for a quiet window to release (policy quorum).
	// +optional
	// +kubebuilder:validation:Minimum=1
	Quorum *int32 `json:"quorum,omitempty"`
}

// ComponentStatus is the projection of one nudging component's progress.
type ComponentStatus struct {
	// Name of the nudging component.
	Name string `json:"name"`
	// OriginalBuild is the digest the component was at when the group was created.
	// +optional
	OriginalBuild string `json:"originalBuild,omitempty"`
	// NewBuild is the digest of the newest build collected for the component.
	// +optional
	NewBuild string `json:"newBuild,omitempty"`
	// NewBuildPullSpec is the full pull spec (repo@digest) of NewBuild.
	// +optional
	NewBuildPullSpec string `json:"newBuildPullSpec,omitempty"`
	// State of the component in this group.
	State ComponentState `json:"state"`
	// LastUpdateTime is when NewBuild last changed.
	// +optional
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`
	// BuildPipelineRun is the nudge PipelineRun that carried the newest build.
	// +optional
	BuildPipelineRun string `json:"buildPipelineRun,omitempty"`
	// HandedBackBuild is the newest digest of this component the group held but did
	// not deliver and handed back to normal nudging (an immediate nudge): the
	// component was dropped, or the group ended without it in a merged PR.
	// +optional
	HandedBackBuild string `json:"handedBackBuild,omitempty"`
	// References are the image repositories by which the nudged component's files
	// reference this component (the repository it is built in, the ones it is
	// released to): the references the PR rewrites.
	// +optional
	References []string `json:"references,omitempty"`
}

// ChangeGroupStatus is written by nudgeflow from the ChangeGroup workflow's state.
type ChangeGroupStatus struct {
	// Phase of the group.
	// +optional
	Phase ChangeGroupPhase `json:"phase,omitempty"`
	// PullRequestURL is the one pull request that collects the builds.
	// +optional
	PullRequestURL string `json:"pullRequestURL,omitempty"`
	// StartTime is when the group started collecting.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// ReadyTime is when all components became ready (or the group was released early).
	// +optional
	ReadyTime *metav1.Time `json:"readyTime,omitempty"`
	// CompletionTime is when the PR was merged, or the group was cancelled or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Ready counts ready components of those awaited, as "ready/total".
	// +optional
	Ready string `json:"ready,omitempty"`
	// WorkflowID is the Temporal workflow that owns this group, for the Web UI.
	// +optional
	WorkflowID string `json:"workflowID,omitempty"`
	// Components is filled by the controller at creation time.
	// +optional
	// +listType=map
	// +listMapKey=name
	Components []ComponentStatus `json:"components,omitempty"`
	// Conditions: AllComponentsReady; CIStarted once CI is released (reasons
	// WaitingForPipeline, PipelineStarted, AwaitingApproval, NoPipelineStarted).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ChangeGroup collects the builds of N nudging components into one pull request
// against the nudged component, holds CI until all are ready and releases it once.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=chg,categories=konflux
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Nudged",type=string,JSONPath=`.spec.nudgedComponent`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="PR",type=string,JSONPath=`.status.pullRequestURL`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ChangeGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ChangeGroupSpec   `json:"spec"`
	Status ChangeGroupStatus `json:"status,omitempty"`
}

// ChangeGroupList is a list of ChangeGroups.
// +kubebuilder:object:root=true
type ChangeGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ChangeGroup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ChangeGroup{}, &ChangeGroupList{})
}
