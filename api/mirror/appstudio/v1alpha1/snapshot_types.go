package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SnapshotTestSucceeded is the Snapshot condition integration-service sets when testing ends.
const (
	SnapshotTestSucceeded       = "AppStudioTestSucceeded"
	LegacySnapshotTestSucceeded = "HACBSStudioTestSucceeded"
)

// SnapshotComponent is one image of a Snapshot.
type SnapshotComponent struct {
	Name string `json:"name"`
	// +optional
	Version string `json:"version,omitempty"`
	// ContainerImage is repo@sha256:digest.
	ContainerImage string `json:"containerImage"`
	// +optional
	Source ComponentSource `json:"source,omitempty"`
}

// SnapshotSpec mirrors the fields of Konflux's SnapshotSpec that nudgeflow reads.
type SnapshotSpec struct {
	// +optional
	Application string `json:"application,omitempty"`
	// +optional
	ComponentGroup string `json:"componentGroup,omitempty"`
	// +optional
	Components []SnapshotComponent `json:"components,omitempty"`
}

// SnapshotStatus mirrors Konflux's SnapshotStatus.
type SnapshotStatus struct {
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Snapshot is a set of images tested together (mirror).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type Snapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SnapshotSpec   `json:"spec,omitempty"`
	Status SnapshotStatus `json:"status,omitempty"`
}

// SnapshotList is a list of Snapshots.
// +kubebuilder:object:root=true
type SnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Snapshot `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Snapshot{}, &SnapshotList{})
}
