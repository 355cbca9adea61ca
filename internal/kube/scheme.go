// Package kube holds what every Kubernetes client of nudgeflow shares: the scheme.
package kube

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
	mirrorkonfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/konflux/v1alpha1"
	pacv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/pipelinesascode/v1alpha1"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
)

// NewScheme returns a scheme with the built-in kinds, nudgeflow's kinds and the
// mirrors of the Konflux kinds nudgeflow reads (Pipelines as Code's Repository among
// them: it says which namespace owns a repository; both Component kinds, the
// appstudio one and the new-model konflux-ci.dev one).
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(appstudiov1alpha1.AddToScheme(s))
	utilruntime.Must(konfluxv1alpha1.AddToScheme(s))
	utilruntime.Must(mirrorv1alpha1.AddToScheme(s))
	utilruntime.Must(mirrorv1beta2.AddToScheme(s))
	utilruntime.Must(mirrorkonfluxv1alpha1.AddToScheme(s))
	utilruntime.Must(pacv1alpha1.AddToScheme(s))
	utilruntime.Must(tektonv1.AddToScheme(s))
	return s
}
