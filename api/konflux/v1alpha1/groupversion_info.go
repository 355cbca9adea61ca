// Package v1alpha1 holds the NudgeConfig API (ADR 67) of group konflux-ci.dev.
// +kubebuilder:object:generate=true
// +groupName=konflux-ci.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the NudgeConfig API.
	GroupVersion = schema.GroupVersion{Group: "konflux-ci.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
