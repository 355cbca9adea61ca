package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations on Components (Konflux's renamed keys are internal/konflux's).
const (
	// AnnotationGitProvider on a Component overrides provider detection from the URL host.
	AnnotationGitProvider = "git-provider"
)

// GitSource is where a component's source lives.
type GitSource struct {
	URL string `json:"url"`
	// +optional
	Revision string `json:"revision,omitempty"`
	// +optional
	Context string `json:"context,omitempty"`
	// +optional
	DockerfileURL string `json:"dockerfileUrl,omitempty"`
}

// ComponentSource is the source of a component (old model).
type ComponentSource struct {
	// +optional
	GitSource *GitSource `json:"git,omitempty"`
}

// ComponentSpec mirrors the fields of Konflux's ComponentSpec that nudgeflow reads.
type ComponentSpec struct {
	// +optional
	ComponentName string `json:"componentName,omitempty"`
	// +optional
	Application string `json:"application,omitempty"`
	// +optional
	Source ComponentSource `json:"source,omitempty"`
	// ContainerImage is the image repository without tag.
	// +optional
	ContainerImage string `json:"containerImage,omitempty"`
	// BuildNudgesRef names the components this component's builds nudge (ADR 29).
	// +optional
	BuildNudgesRef []string `json:"build-nudges-ref,omitempty"`
}

// ComponentStatus mirrors the fields of Konflux's ComponentStatus that nudgeflow reads.
type ComponentStatus struct {
	// LastPromotedImage is repo@sha256:digest of the last promoted push build.
	// +optional
	LastPromotedImage string `json:"lastPromotedImage,omitempty"`
	// +optional
	LastBuiltCommit string `json:"lastBuiltCommit,omitempty"`
	// +optional
	BuildNudgedBy []string `json:"build-nudged-by,omitempty"`
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Component is a Konflux component (mirror).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type Component struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ComponentSpec   `json:"spec,omitempty"`
	Status ComponentStatus `json:"status,omitempty"`
}

// ComponentList is a list of Components.
// +kubebuilder:object:root=true
type ComponentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Component `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Component{}, &ComponentList{})
}
