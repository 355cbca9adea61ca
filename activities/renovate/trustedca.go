package renovate

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// The cluster's trusted CA bundle, as build-service hands it to Renovate: a
// ConfigMap labelled for OpenShift's CA injection in the operator's namespace, its
// ca-bundle.crt copied beside the run and mounted where the Renovate image's
// system trust store reads it.
const (
	LabelInjectTrustedCABundle = "config.openshift.io/inject-trusted-cabundle"
	CABundleKey                = "ca-bundle.crt"
	CAMountPath                = "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"
	caFileName                 = "tls-ca-bundle.pem"
	caVolumeName               = "trusted-ca"
)

// CAConfigMapName is the run's copy of the CA bundle, deterministic from the run's
// name (renovate-nudge-<hash>-<attempt> → renovate-ca-<hash>-<attempt>).
func CAConfigMapName(runName string) string {
	return "renovate-ca-" + strings.TrimPrefix(runName, "renovate-nudge-")
}

// trustedCA returns the bundle of the first labelled ConfigMap (by name, so every
// retry picks the same one) that has one, and that ConfigMap's name; "" when
// nudgeflow's namespace is unknown or holds none.
func (a *Activities) trustedCA(ctx context.Context) (bundle, source string, err error) {
	if a.OperatorNamespace == "" {
		return "", "", nil
	}
	var list corev1.ConfigMapList
	if err := a.Kube.List(ctx, &list, ctrlclient.InNamespace(a.OperatorNamespace),
		ctrlclient.MatchingLabels{LabelInjectTrustedCABundle: "true"}); err != nil {
		return "", "", fmt.Errorf("listing ConfigMaps labelled %s=true in %s: %w", LabelInjectTrustedCABundle, a.OperatorNamespace, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	for _, cm := range list.Items {
		if b := cm.Data[CABundleKey]; b != "" {
			return b, cm.Name, nil
		}
	}
	return "", "", nil
}
