package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RepositorySpec mirrors the field of Pipelines as Code's RepositorySpec that
// nudgeflow reads. The others (git_provider, settings, params, incoming,
// concurrency_limit) are kept as written, unread.
// +kubebuilder:pruning:PreserveUnknownFields
type RepositorySpec struct {
	// URL of the repository we are building. Must be a valid HTTP/HTTPS Git
	// repository URL (Pipelines as Code's admission webhook refuses a second
	// Repository with the same URL, compared as written).
	// +optional
	URL string `json:"url"`
}

// Repository is the representation of a Git repository from a Git provider
// platform (mirror of Pipelines as Code's kind). A Repository in a namespace
// whose spec.url names a repository is how Konflux says the namespace owns it;
// build-service creates one when it onboards a Component.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=repo
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
type Repository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	Spec RepositorySpec `json:"spec"`
}

// RepositoryList is a list of Repositories.
// +kubebuilder:object:root=true
type RepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Repository `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Repository{}, &RepositoryList{})
}
