package nudgeconfigs

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
)

// ShippedCRD is the name of integration-service's NudgeConfig CRD.
const ShippedCRD = "nudgeconfigs.appstudio.redhat.com"

// Limit is the most edges integration-service's NudgeConfig holds, and where that
// number comes from (for messages).
type Limit struct {
	Max  int
	From string
}

// defaultShippedLimit is nudgeflow's copy of the limit (the mirror CRD's), used
// when the served CRD cannot be read.
var defaultShippedLimit = Limit{Max: mirrorv1beta2.MaxNudges,
	From: fmt.Sprintf("nudgeflow's copy of %s's maxItems", ShippedCRD)}

// ShippedLimit reads the limit from the CRD the API server serves now:
// spec.versions[v1beta2].schema.openAPIV3Schema.properties.spec.properties.nudges.maxItems
// of nudgeconfigs.appstudio.redhat.com. integration-service has changed it between
// releases (256, then 360 in IS 2db9714), and the API server enforces the served one,
// so a constant would refuse configs it admits or write ones it refuses.
//
// One GET, uncached: its only caller is `nudgeflow migrate`, a command that runs for
// seconds and reads it once per run, so every run follows the CRD as it is served
// then; an informer (a watch and a cache) would cost more and see nothing a run does
// not. Reading a CustomResourceDefinition needs get on
// customresourcedefinitions (resourceName nudgeconfigs.appstudio.redhat.com),
// which cluster administrators who migrate hold. When the CRD cannot be read (not
// installed, forbidden, no maxItems) the result is DefaultShippedLimit and the
// reason is in From.
func ShippedLimit(ctx context.Context, c ctrlclient.Reader) Limit {
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := c.Get(ctx, types.NamespacedName{Name: ShippedCRD}, crd); err != nil {
		fallback := defaultShippedLimit
		reason := err.Error()
		if apierrors.IsNotFound(err) {
			reason = "the CRD is not served"
		}
		fallback.From += " (" + reason + ")"
		return fallback
	}
	if max, ok := crdMaxNudges(crd); ok {
		return Limit{Max: max, From: fmt.Sprintf("maxItems of the served CustomResourceDefinition %s", ShippedCRD)}
	}
	fallback := defaultShippedLimit
	fallback.From += fmt.Sprintf(" (the served %s has no maxItems for %s spec.nudges)", ShippedCRD, mirrorv1beta2.GroupVersion.Version)
	return fallback
}

// crdMaxNudges is spec.nudges' maxItems in the CRD's v1beta2 schema.
func crdMaxNudges(crd *unstructured.Unstructured) (int, bool) {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if !ok || m["name"] != mirrorv1beta2.GroupVersion.Version {
			continue
		}
		max, found, err := unstructured.NestedInt64(m, "schema", "openAPIV3Schema", "properties", "spec", "properties", "nudges", "maxItems")
		if err != nil || !found || max <= 0 {
			return 0, false
		}
		return int(max), true
	}
	return 0, false
}
