package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ReleasePlanAdmissionSpec mirrors the fields of release-service's
// ReleasePlanAdmissionSpec that nudgeflow reads.
type ReleasePlanAdmissionSpec struct {
	// Origin is the tenant namespace whose releases this admission accepts.
	Origin string `json:"origin"`
	// +optional
	Applications []string `json:"applications,omitempty"`
	// Data is free-form release data; nudgeflow reads only
	// mapping.components[].{name, repositories[].url}.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Data *runtime.RawExtension `json:"data,omitempty"`
}

// ReleasePlanAdmission is a managed namespace's admission of a tenant's releases
// (mirror of release-service's kind). Its mapping names the repositories a
// component's images are released to.
// +kubebuilder:object:root=true
type ReleasePlanAdmission struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ReleasePlanAdmissionSpec `json:"spec,omitempty"`
}

// ReleasePlanAdmissionList is a list of ReleasePlanAdmissions.
// +kubebuilder:object:root=true
type ReleasePlanAdmissionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ReleasePlanAdmission `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ReleasePlanAdmission{}, &ReleasePlanAdmissionList{})
}
