package v1alpha1

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NudgeConfigName is the only name a NudgeConfig may have: one per namespace.
const NudgeConfigName = "nudge-config"

// MaxNudges is the most edges one NudgeConfig holds (ADR 67: within the 1 MB object limit).
const MaxNudges = 5000

// NudgeMode says when a nudge fires.
// +kubebuilder:validation:Enum=immediate;validated
type NudgeMode string

const (
	// ModeImmediate nudges as soon as the source's push build succeeds.
	ModeImmediate NudgeMode = "immediate"
	// ModeValidated nudges once a Snapshot of the gating ComponentGroup holding the
	// source's build has passed its integration tests (any Snapshot holding it for an
	// edge stored without a gatingGroup).
	ModeValidated NudgeMode = "validated"
)

// Condition types and reasons of a NudgeConfig (ADR 67).
const (
	ConditionValid           = "Valid"
	ReasonAllComponentsExist = "AllComponentsExist"
	ReasonStaleReferences    = "StaleReferences"
)

// ImmediateWriter says who writes an immediate nudge's pull request.
// +kubebuilder:validation:Enum=auto;direct;renovate
type ImmediateWriter string

const (
	// WriterAuto: nudgeflow writes the pull request itself (the direct writer)
	// wherever it does everything the tenant's Renovate configuration asks, and
	// launches a Renovate PipelineRun where it does not, or where the direct
	// writer could not write (the forge failed): the default.
	WriterAuto ImmediateWriter = "auto"
	// WriterDirect: only the direct writer; no Renovate PipelineRun is launched for
	// the edge. What the writer cannot do ends the nudge Failed with a Warning
	// Event that says why.
	WriterDirect ImmediateWriter = "direct"
	// WriterRenovate: a Renovate PipelineRun, as before the direct writer (ADR 67).
	WriterRenovate ImmediateWriter = "renovate"
)

// ParseImmediateWriter reads a writer setting (any case; empty is empty).
func ParseImmediateWriter(s string) (ImmediateWriter, error) {
	switch w := ImmediateWriter(strings.ToLower(strings.TrimSpace(s))); w {
	case "", WriterAuto, WriterDirect, WriterRenovate:
		return w, nil
	}
	return "", fmt.Errorf("immediate writer %q: want %s, %s or %s", s, WriterAuto, WriterDirect, WriterRenovate)
}

// NudgeRelationship is one directed edge: builds of From nudge To.
// +kubebuilder:validation:XValidation:rule="self.from != self.to",messageExpression="'component ' + self.from + ' cannot nudge itself (from and to are equal)'"
// +kubebuilder:validation:XValidation:rule="!has(self.immediateWriter) || !has(self.mode) || self.mode == 'immediate'",messageExpression="'edge ' + self.from + ' -> ' + self.to + ' sets immediateWriter, which only immediate edges use: a validated edge is nudged by a Renovate PipelineRun once its Snapshot passed; remove immediateWriter or set mode: immediate'"
type NudgeRelationship struct {
	// From is the source component whose build triggers the nudge.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	From string `json:"from"`
	// To is the target component that is nudged.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	To string `json:"to"`
	// Mode is immediate (default) or validated.
	// +optional
	// +kubebuilder:default=immediate
	Mode NudgeMode `json:"mode,omitempty"`
	// GatingGroup is the ComponentGroup whose Snapshot must pass for a validated
	// nudge: required when mode is validated (ADR 67). The admission webhook refuses
	// a validated edge without one when a create or update adds it; one stored before
	// that rule stays (as in integration-service's NudgeConfig, any Snapshot holding
	// the build gates it, its application's or any ComponentGroup's). A build that
	// failed is dropped only when no Snapshot holding it passed within the grace
	// after its first failure (the bridge's --failed-snapshot-grace, 10 minutes).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`
	GatingGroup string `json:"gatingGroup,omitempty"`
	// ImmediateWriter overrides spec.immediateWriter for this edge (immediate
	// edges only): auto, direct or renovate. Unset: the namespace's.
	// +optional
	ImmediateWriter ImmediateWriter `json:"immediateWriter,omitempty"`
}

// EffectiveMode is the mode with the API default applied.
func (n NudgeRelationship) EffectiveMode() NudgeMode {
	if n.Mode == "" {
		return ModeImmediate
	}
	return n.Mode
}

// NudgeConfigSpec holds every nudge edge of a namespace.
type NudgeConfigSpec struct {
	// Nudges are the directed edges. Duplicate pairs and cycles are rejected by the
	// admission webhook (cheaper there than in CEL at 5000 entries).
	// +optional
	// +kubebuilder:validation:MaxItems=5000
	// +listType=atomic
	Nudges []NudgeRelationship `json:"nudges,omitempty"`

	// Batching makes targets batched (ADR 67 Phase 2): the first build of any
	// component nudging a batched target opens an automatic ChangeGroup that collects
	// the target's nudgers into one pull request and releases it by the policy.
	// Targets without an entry are nudged build by build, as before.
	// +optional
	// +listType=map
	// +listMapKey=target
	// +kubebuilder:validation:MaxItems=500
	Batching []BatchingPolicy `json:"batching,omitempty"`

	// ImmediateWriter is who writes the pull requests of the namespace's immediate
	// nudges: auto (nudgeflow writes them itself where it does everything the
	// tenant's Renovate configuration asks, else a Renovate PipelineRun), direct
	// (only nudgeflow's writer) or renovate (a Renovate PipelineRun, as ADR 67 has
	// it). An edge's immediateWriter overrides it; unset, the worker's
	// --immediate-writer decides (auto by default).
	// +optional
	ImmediateWriter ImmediateWriter `json:"immediateWriter,omitempty"`
}

// WriterOf is the writer the NudgeConfig sets for the edge from -> to: the
// edge's own, else the namespace's, else "" (the worker's default decides).
func (s NudgeConfigSpec) WriterOf(from, to string) (ImmediateWriter, string) {
	for _, n := range s.Nudges {
		if n.From == from && n.To == to && n.ImmediateWriter != "" {
			return n.ImmediateWriter, "edge " + from + " -> " + to + " of NudgeConfig " + NudgeConfigName
		}
	}
	if s.ImmediateWriter != "" {
		return s.ImmediateWriter, "spec.immediateWriter of NudgeConfig " + NudgeConfigName
	}
	return "", ""
}

// BatchRelease says what a quiet window may release.
// +kubebuilder:validation:Enum=all;quorum;window
type BatchRelease string

const (
	// ReleaseWindow: a window with no new build releases what is ready.
	ReleaseWindow BatchRelease = "window"
	// ReleaseQuorum: a quiet window releases only when at least quorum members are ready.
	ReleaseQuorum BatchRelease = "quorum"
	// ReleaseAll: only every member ready (or maxWait) releases; the window is not used.
	ReleaseAll BatchRelease = "all"
)

// Defaults of a BatchingPolicy.
const (
	DefaultBatchWindow  = "30m"
	DefaultBatchMaxWait = "24h"
)

// BatchingPolicy batches the nudges of one target. Every batch releases when all
// its members have a new build, and at the latest maxWait after it opened (with
// what is ready); release says what a window with no new build releases.
// +kubebuilder:validation:XValidation:rule="!has(self.release) || self.release != 'quorum' || has(self.quorum)",messageExpression="'batching of ' + self.target + ' has release quorum and needs quorum: the number of members that must be ready when the window passes'"
// +kubebuilder:validation:XValidation:rule="!has(self.quorum) || (has(self.release) && self.release == 'quorum')",messageExpression="'batching of ' + self.target + ' sets quorum, which only release: quorum uses; set release: quorum or remove quorum'"
// +kubebuilder:validation:XValidation:rule="!has(self.window) || !has(self.maxWait) || duration(self.window) <= duration(self.maxWait)",messageExpression="'batching of ' + self.target + ': window ' + self.window + ' is longer than maxWait ' + self.maxWait + '; the window could never pass before maxWait releases the batch'"
type BatchingPolicy struct {
	// Target is the batched component (for example the operator bundle).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Target string `json:"target"`
	// Window is the quiet period: when no new build joined the batch for this long,
	// the release policy decides whether to release. Default 30m.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$')",message="window must be a duration such as 30m, 2h or 1h30m"
	Window *metav1.Duration `json:"window,omitempty"`
	// MaxWait releases the batch with what is ready this long after it opened,
	// whatever the policy. Default 24h.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$')",message="maxWait must be a duration such as 24h or 90m"
	MaxWait *metav1.Duration `json:"maxWait,omitempty"`
	// Release is what a quiet window releases: window (what is ready, the default),
	// quorum (only when at least quorum members are ready) or all (nothing: only
	// every member ready, or maxWait, releases).
	// +optional
	Release BatchRelease `json:"release,omitempty"`
	// Quorum is the number of members that must be ready for a quiet window to
	// release the batch; required with release: quorum, and at most the number of
	// components nudging the target (the webhook checks).
	// +optional
	// +kubebuilder:validation:Minimum=1
	Quorum *int32 `json:"quorum,omitempty"`
}

// EffectiveRelease is the release policy with the default applied.
func (b BatchingPolicy) EffectiveRelease() BatchRelease {
	if b.Release == "" {
		return ReleaseWindow
	}
	return b.Release
}

// BatchingFor returns the policy of target, or nil when the target is not batched.
func (s NudgeConfigSpec) BatchingFor(target string) *BatchingPolicy {
	for i := range s.Batching {
		if s.Batching[i].Target == target {
			return &s.Batching[i]
		}
	}
	return nil
}

// NudgersOf lists the components with an edge to target, in spec order, once each.
func (s NudgeConfigSpec) NudgersOf(target string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range s.Nudges {
		if n.To == target && !seen[n.From] {
			seen[n.From] = true
			out = append(out, n.From)
		}
	}
	return out
}

// NudgeConfigStatus reports whether every referenced component still exists.
type NudgeConfigStatus struct {
	// Conditions: Valid.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastValidationTime is when references were last checked.
	// +optional
	LastValidationTime *metav1.Time `json:"lastValidationTime,omitempty"`
}

// NudgeConfig is the namespace's single store of nudge edges (ADR 67).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=nc,categories=konflux
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'nudge-config'",message="NudgeConfig must be named 'nudge-config': there is one per namespace (singleton)"
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NudgeConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NudgeConfigSpec   `json:"spec,omitempty"`
	Status NudgeConfigStatus `json:"status,omitempty"`
}

// NudgeConfigList is a list of NudgeConfigs.
// +kubebuilder:object:root=true
type NudgeConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NudgeConfig `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NudgeConfig{}, &NudgeConfigList{})
}
