package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ComponentVersion is one version of a new-model Component: a branch it builds.
type ComponentVersion struct {
	// Name is the user's name of the version; builds carry it in
	// build.konflux-ci.dev/version.
	Name string `json:"name"`
	// Revision is the git branch of the version.
	Revision string `json:"revision"`
	// +optional
	Context string `json:"context,omitempty"`
	// +optional
	SkipBuilds bool `json:"skip-builds,omitempty"`
}

// ComponentSource is where a new-model Component's source lives.
type ComponentSource struct {
	// URL is the git repository (https).
	URL string `json:"url"`
	// +optional
	Versions []ComponentVersion `json:"versions,omitempty"`
}

// ComponentSpec mirrors the fields of Konflux's new-model ComponentSpec that
// nudgeflow reads. It has no build-nudges-ref: new-model nudges are NudgeConfig
// edges only (ADR 56, ADR 67).
type ComponentSpec struct {
	Source ComponentSource `json:"source"`
	// ContainerImage is the image repository of every version (no tag).
	// +optional
	ContainerImage string `json:"containerImage,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=cmp;comp

// Component is a new-model Konflux Component (a mirror, not owned by nudgeflow).
type Component struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ComponentSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// ComponentList is a list of new-model Components.
type ComponentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Component `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Component{}, &ComponentList{})
}
