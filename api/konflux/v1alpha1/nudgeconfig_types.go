package v1alpha1

import (
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
	// source's build has passed its integration tests.
	ModeValidated NudgeMode = "validated"
)

// Condition types and reasons of a NudgeConfig (ADR 67).
const (
	ConditionValid           = "Valid"
	ReasonAllComponentsExist = "AllComponentsExist"
	ReasonStaleReferences    = "StaleReferences"
)

// NudgeRelationship is one directed edge: builds of From nudge To.
// +kubebuilder:validation:XValidation:rule="self.from != self.to",messageExpression="'component ' + self.from + ' cannot nudge itself (from and to are equal)'"
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'validated' || (has(self.gatingGroup) && size(self.gatingGroup) > 0)",messageExpression="'nudge ' + self.from + ' -> ' + self.to + ' has mode validated and needs a gatingGroup: the ComponentGroup whose Snapshot must pass'"
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
	// GatingGroup is the ComponentGroup whose Snapshot must pass; required when mode is validated.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`
	GatingGroup string `json:"gatingGroup,omitempty"`
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
