// Package v1alpha1 mirrors the one field nudgeflow reads of Pipelines as Code's
// Repository (pipelinesascode.tekton.dev/v1alpha1, openshift-pipelines/
// pipelines-as-code pkg/apis/pipelinesascode/v1alpha1/types.go and
// config/300-repositories.yaml at c6397d3): spec.url, the repository a tenant
// namespace owns (internal/ownership). nudgeflow does not own this kind: the CRD
// generated from this package is for tests only.
// +kubebuilder:object:generate=true
// +groupName=pipelinesascode.tekton.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is Pipelines as Code's pipelinesascode.tekton.dev/v1alpha1.
	GroupVersion = schema.GroupVersion{Group: "pipelinesascode.tekton.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
