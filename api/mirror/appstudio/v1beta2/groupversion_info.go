// Package v1beta2 mirrors integration-service's appstudio.redhat.com/v1beta2 kinds
// nudgeflow reads: the fields it reads of ComponentGroup (ADR 60), and NudgeConfig
// (ADR 67 as integration-service ships it) whole. The CRDs generated from this
// package are for tests only.
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
