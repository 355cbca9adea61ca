package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ComponentVersionRef names a version of a component.
type ComponentVersionRef struct {
	Name string `json:"name"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Context string `json:"context,omitempty"`
}

// ComponentGroupMember is one member of a ComponentGroup.
type ComponentGroupMember struct {
	Name string `json:"name"`
	// +optional
	Kind string `json:"kind,omitempty"`
	// +optional
	ComponentVersion *ComponentVersionRef `json:"componentVersion,omitempty"`
}

// ComponentGroupSpec mirrors the fields nudgeflow reads.
type ComponentGroupSpec struct {
	// +optional
	Components []ComponentGroupMember `json:"components,omitempty"`
}

// GlobalCandidate is one entry of the group's Global Candidate List.
type GlobalCandidate struct {
	Name string `json:"name"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	URL string `json:"url,omitempty"`
	// +optional
	LastPromotedImage string `json:"lastPromotedImage,omitempty"`
	// +optional
	LastPromotedCommit string `json:"lastPromotedCommit,omitempty"`
	// +optional
	LastPromotedBuildTime *metav1.Time `json:"lastPromotedBuildTime,omitempty"`
}

// ComponentGroupStatus mirrors the fields nudgeflow reads.
type ComponentGroupStatus struct {
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	GlobalCandidateList []GlobalCandidate `json:"globalCandidateList,omitempty"`
}

// ComponentGroup is a set of components tested and released together (mirror).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cg
type ComponentGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ComponentGroupSpec   `json:"spec,omitempty"`
	Status ComponentGroupStatus `json:"status,omitempty"`
}

// ComponentGroupList is a list of ComponentGroups.
// +kubebuilder:object:root=true
type ComponentGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ComponentGroup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ComponentGroup{}, &ComponentGroupList{})
}
