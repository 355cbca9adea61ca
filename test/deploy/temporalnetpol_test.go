package deploy_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nudgeflow/nudgeflow/test/world"
)

// source is a pod that opens a connection: its labels and namespace.
type source struct {
	namespace string
	labels    map[string]string
}

// admits says whether the NetworkPolicies of m, in their namespace, let from
// reach a pod labelled target in that namespace on the named port (the
// Kubernetes semantics: a pod selected by no policy takes everything; else the
// union of the rules of the policies that select it; a peer with both selectors
// needs both). The test world has no CNI: this is how the rendered policies are
// read.
func admits(t *testing.T, m manifests, target map[string]string, port string, from source) bool {
	t.Helper()
	selected := false
	for _, o := range m.ofKind("NetworkPolicy") {
		np := get[networkingv1.NetworkPolicy](t, m, "NetworkPolicy", o.GetName())
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		require.NoError(t, err)
		if !sel.Matches(labels.Set(target)) {
			continue
		}
		selected = true
		for _, rule := range np.Spec.Ingress {
			portOK := len(rule.Ports) == 0
			for _, p := range rule.Ports {
				portOK = portOK || p.Port.String() == port
			}
			if !portOK {
				continue
			}
			if len(rule.From) == 0 {
				return true
			}
			for _, peer := range rule.From {
				if peerMatches(t, peer, np.Namespace, from) {
					return true
				}
			}
		}
	}
	return !selected
}

func peerMatches(t *testing.T, peer networkingv1.NetworkPolicyPeer, policyNamespace string, from source) bool {
	if peer.IPBlock != nil {
		return false // pods are matched by selectors here
	}
	if peer.NamespaceSelector == nil {
		if from.namespace != policyNamespace {
			return false
		}
	} else {
		sel, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
		require.NoError(t, err)
		if !sel.Matches(labels.Set{corev1.LabelMetadataName: from.namespace}) {
			return false
		}
	}
	if peer.PodSelector == nil {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
	require.NoError(t, err)
	return sel.Matches(labels.Set(from.labels))
}

// temporalPolicies builds components/temporal-network-policy inside the
// kustomization of a Temporal install in namespace "temporal", with extra (a
// patches: block) appended.
func temporalPolicies(t *testing.T, extra string) ([]byte, manifests) {
	t.Helper()
	scratch := t.TempDir()
	rel, err := filepath.Rel(scratch, deployDir("components", "temporal-network-policy"))
	require.NoError(t, err)
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: temporal\ncomponents:\n  - " + rel + "\n" + extra
	require.NoError(t, os.WriteFile(filepath.Join(scratch, "kustomization.yaml"), []byte(k), 0o600))
	return kustomize(t, scratch)
}

// The NetworkPolicies of components/temporal-network-policy, as rendered for a
// Temporal install in namespace "temporal" and as the real API server accepts
// them (server-side dry run): the frontend's gRPC port admits nudgeflow's bridge,
// worker and setup Job (their pod templates, in nudgeflow's namespace) and the
// Temporal Web UI and admin tools, and nobody else: not a tenant's pod, not a
// tenant's pod wearing nudgeflow's labels, not the forge receiver; history and
// matching admit Temporal's own server pods only; the documented patch for a
// re-namespaced nudgeflow admits that install's pods instead.
func TestTemporalNetworkPolicyComponent(t *testing.T) {
	w := world.Get(t)
	raw, m := temporalPolicies(t, "")
	require.Len(t, m.ofKind("NetworkPolicy"), 2)
	for _, o := range m {
		require.Equal(t, "temporal", o.GetNamespace(), "%s %s lives in Temporal's namespace", o.GetKind(), o.GetName())
	}
	if err := w.Kube.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "temporal"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	out, err := kubectl(t, raw, "apply", "--server-side", "--dry-run=server", "--field-manager", "deploy-test", "-f", "-")
	require.NoError(t, err, "%s", out)

	frontend := map[string]string{"app.kubernetes.io/name": "temporal", "app.kubernetes.io/instance": "temporal", "app.kubernetes.io/component": "frontend"}
	history := map[string]string{"app.kubernetes.io/name": "temporal", "app.kubernetes.io/instance": "temporal", "app.kubernetes.io/component": "history"}
	temporalPod := func(component string) source {
		return source{"temporal", map[string]string{"app.kubernetes.io/name": "temporal", "app.kubernetes.io/component": component}}
	}
	// nudgeflow's pods as the shipped manifests label them.
	clients := func(v variant) []source {
		var out []source
		for name, spec := range map[string]map[string]string{
			"nudgeflow-bridge":         v.objs.deployment(t, "nudgeflow-bridge").Spec.Template.Labels,
			"nudgeflow-worker":         v.objs.deployment(t, "nudgeflow-worker").Spec.Template.Labels,
			"nudgeflow-temporal-setup": setupJob(t, v.objs).Spec.Template.Labels,
		} {
			require.NotEmpty(t, spec, name)
			out = append(out, source{v.namespace, spec})
		}
		return out
	}
	shipped := findVariant(t, variants(t), "cert-manager")
	for _, c := range clients(shipped) {
		require.True(t, admits(t, m, frontend, "rpc", c), "the frontend admits %v", c)
		require.False(t, admits(t, m, frontend, "http", c), "the frontend's HTTP API is closed to %v", c)
		require.False(t, admits(t, m, history, "rpc", c), "history is Temporal's own: %v", c)
		tenant := c
		tenant.namespace = "tenant-a"
		require.False(t, admits(t, m, frontend, "rpc", tenant), "a tenant's pod wearing nudgeflow's labels is refused: %v", tenant)
	}
	for _, refused := range []source{
		{"tenant-a", map[string]string{"app": "anything"}},
		{systemNamespace, map[string]string{"app.kubernetes.io/name": "nudgeflow", "app.kubernetes.io/component": "receiver"}},
		{"temporal", map[string]string{"app": "something-else"}},
	} {
		require.False(t, admits(t, m, frontend, "rpc", refused), "%v is refused", refused)
		require.False(t, admits(t, m, history, "rpc", refused), "%v is refused", refused)
	}
	for _, ok := range []string{"web", "admintools", "database"} {
		require.True(t, admits(t, m, frontend, "rpc", temporalPod(ok)), "Temporal's %s reaches the frontend", ok)
	}
	for _, server := range []string{"frontend", "history", "matching", "worker", "internal-frontend"} {
		require.True(t, admits(t, m, history, "membership", temporalPod(server)), "Temporal's %s reaches history", server)
	}
	require.True(t, admits(t, m, history, "metrics", source{"monitoring", map[string]string{"app": "prometheus"}}))

	// The documented patch for a nudgeflow in another namespace.
	doc, err := os.ReadFile(deployDir("components", "temporal-network-policy", "kustomization.yaml"))
	require.NoError(t, err)
	path := "/spec/ingress/0/from/0/namespaceSelector/matchLabels/kubernetes.io~1metadata.name"
	require.Contains(t, string(doc), path, "the component documents its parameter")
	_, moved := temporalPolicies(t, "patches:\n  - target:\n      kind: NetworkPolicy\n      name: temporal-frontend-clients\n"+
		"    patch: |-\n      - op: replace\n        path: "+path+"\n        value: "+otherNamespace+"\n")
	renamespaced := findVariant(t, renamespacedVariants(t), "cert-manager")
	for _, c := range clients(renamespaced) {
		require.True(t, admits(t, moved, frontend, "rpc", c), "re-namespaced: the frontend admits %v", c)
		require.False(t, admits(t, m, frontend, "rpc", c), "without the patch: %v is refused", c)
	}
}

// The shipped manifests never talk to Temporal in plaintext: their worker, pointed
// at the plaintext dev server itself, fails the TLS handshake and stays not ready,
// alive; the same worker with components/insecure-temporal (the explicit opt-out,
// TEMPORAL_TLS=false) polls that server.
func TestTemporalConnectionIsMutualTLSUnlessOptedOut(t *testing.T) {
	w := world.Get(t)
	shipped := findVariant(t, variants(t), "cert-manager")
	prepared(t, shipped)
	secure := startPod(t, shipped.objs, deploymentPod(shipped.objs.deployment(t, "nudgeflow-worker")),
		podOptions{temporalAddress: w.Temporal.Address, withoutTLSFront: true})
	world.Eventually(t, startupTimeout, "the shipped worker's TLS handshake with a plaintext server fails", func() (bool, error) {
		if secure.exited() {
			t.Fatalf("the worker exited; its log:\n%s", secure.logs())
		}
		return strings.Contains(secure.logs(), "handshake"), nil
	})
	code, body, err := secure.probe(secure.container.ReadinessProbe)
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, code, "not ready: %s", body)

	insecure := findVariant(t, variants(t), "cert-manager+insecure-temporal+webhook-from-control-plane")
	plain := startPod(t, insecure.objs, deploymentPod(insecure.objs.deployment(t, "nudgeflow-worker")),
		podOptions{temporalAddress: w.Temporal.Address})
	require.Nil(t, plain.temporal, "no TLS front: plaintext, as opted out")
	plain.waitReady(startupTimeout)
	require.Equal(t, "false", plain.env["TEMPORAL_TLS"])
}
