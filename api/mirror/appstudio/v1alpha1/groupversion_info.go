// Package v1alpha1 mirrors the few fields nudgeflow reads of Konflux's Component
// and Snapshot (appstudio.redhat.com/v1alpha1, konflux-ci/application-api). nudgeflow
// does not own these kinds: the CRDs generated from this package are for tests only.
// +kubebuilder:object:generate=true
// +groupName=appstudio.redhat.com
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is Konflux's appstudio.redhat.com/v1alpha1.
	GroupVersion = schema.GroupVersion{Group: "appstudio.redhat.com", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
