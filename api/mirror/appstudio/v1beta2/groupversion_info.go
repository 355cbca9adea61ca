// Package v1beta2 mirrors the fields nudgeflow reads of integration-service's
// ComponentGroup (appstudio.redhat.com/v1beta2, ADR 60). The CRD generated from
// this package is for tests only.
// +kubebuilder:object:generate=true
// +groupName=appstudio.redhat.com
package v1beta2

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is integration-service's appstudio.redhat.com/v1beta2.
	GroupVersion = schema.GroupVersion{Group: "appstudio.redhat.com", Version: "v1beta2"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
