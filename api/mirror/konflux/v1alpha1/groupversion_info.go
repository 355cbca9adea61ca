// Package v1alpha1 mirrors the few fields nudgeflow reads of Konflux's new-model
// Component (konflux-ci.dev/v1alpha1, ADR 56: konflux-ci/application-api
// api/konflux/v1alpha1 at 2999a91451c6, the version build-service ccde63a requires
// in go.mod and reads in component_build_controller_v2.go: spec.source.url,
// spec.source.versions[].revision, spec.containerImage). nudgeflow does not own this
// kind: the CRD generated from this package is for tests only.
//
// The group is the one nudgeflow's own NudgeConfig uses (api/konflux/v1alpha1):
// two Go packages, one group version, distinct kinds; the scheme holds both.
// +kubebuilder:object:generate=true
// +groupName=konflux-ci.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is Konflux's konflux-ci.dev/v1alpha1.
	GroupVersion = schema.GroupVersion{Group: "konflux-ci.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
