package devenv

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/ociregistry"
)

// The dev stack's image registry: the builds `nudgeflow-dev dev build` simulates
// push real images there, and the Renovate runs look their tags up there, over TLS
// with a CA the stack makes at each start.
const (
	// fileRegistryCA is that CA, for `nudgeflow-dev dev build` in another process.
	fileRegistryCA = "registry-ca.pem"
	// annotationImageSeed on a simulated build names its image (ociregistry.SeededImage),
	// so a restarted stack pushes it again: the registry keeps images in memory.
	annotationImageSeed = "nudgeflow.dev/image-seed"
	// OperatorNamespace is the worker's own namespace in the dev stack, where the
	// registry's CA waits, labelled as OpenShift labels the trusted CA bundle, for
	// the Renovate runs to mount.
	OperatorNamespace  = "nudgeflow-system"
	trustedCAConfigMap = "nudgeflow-dev-registry-ca"
)

// startRegistry serves the registry on 127.0.0.1:port with a new CA, written to
// home for the simulator's pushes.
func startRegistry(home string, port int) (*ociregistry.Registry, *ociregistry.CA, error) {
	reg, ca, err := ociregistry.StartWithNewCA(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(home, fileRegistryCA), ca.PEM, 0o600); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("writing the registry's CA: %w", err), reg.Close())
	}
	return reg, ca, nil
}

// RegistryClient pushes to the registry of the stack running in home.
func RegistryClient(home string) (*ociregistry.Registry, error) {
	r, err := ReadRunning(home)
	if err != nil {
		return nil, err
	}
	if r.Registry == "" {
		return nil, fmt.Errorf("the `nudgeflow-dev dev` running in %s has no image registry: restart it with `make run`", home)
	}
	pem, err := os.ReadFile(filepath.Join(home, fileRegistryCA))
	if err != nil {
		return nil, fmt.Errorf("reading the registry's CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", filepath.Join(home, fileRegistryCA))
	}
	return ociregistry.Dial(r.Registry, roots), nil
}

// pushBuiltImage pushes the image seed names to imageURL ("host/repo:tag") and
// returns its digest. An image outside reg (a component seeded before the stack
// had a registry), or no reg, gets the digest without a push.
func pushBuiltImage(ctx context.Context, reg *ociregistry.Registry, imageURL, seed string) (string, error) {
	if reg == nil {
		return seededDigest(seed), nil
	}
	repoTag, ok := strings.CutPrefix(imageURL, reg.Host+"/")
	if !ok {
		return seededDigest(seed), nil
	}
	return reg.PushSeeded(ctx, repoTag, seed)
}

// republishBuiltImages pushes again the image of every simulated build, so the
// tags Renovate looks up after a restart are there.
func republishBuiltImages(ctx context.Context, kube ctrlclient.Client, reg *ociregistry.Registry) error {
	var builds tektonv1.PipelineRunList
	if err := kube.List(ctx, &builds, ctrlclient.MatchingLabels{konflux.LabelPipelineType: "build"}); err != nil {
		return fmt.Errorf("listing the simulated builds: %w", err)
	}
	for i := range builds.Items {
		b := &builds.Items[i]
		seed := b.Annotations[annotationImageSeed]
		imageURL, _ := konflux.BuildResults(b)
		if seed == "" || imageURL == "" {
			continue
		}
		if _, err := pushBuiltImage(ctx, reg, imageURL, seed); err != nil {
			return fmt.Errorf("pushing the image of build %s/%s again: %w", b.Namespace, b.Name, err)
		}
	}
	return nil
}

// trustRegistry puts the registry's CA where the worker looks for the cluster's
// trusted CA bundle (its own namespace, the OpenShift injection label), so every
// Renovate run mounts it, as a cluster's trusted bundle reaches build-service's.
func trustRegistry(ctx context.Context, kube ctrlclient.Client, ca *ociregistry.CA) error {
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OperatorNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", OperatorNamespace, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: trustedCAConfigMap, Namespace: OperatorNamespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, kube, cm, func() error {
		cm.Labels = map[string]string{renovate.LabelInjectTrustedCABundle: "true"}
		cm.Data = map[string]string{renovate.CABundleKey: string(ca.PEM)}
		return nil
	}); err != nil {
		return fmt.Errorf("writing the registry's CA into %s/%s: %w", OperatorNamespace, trustedCAConfigMap, err)
	}
	return nil
}
