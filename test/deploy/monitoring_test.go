package deploy_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// kubePrometheus is the feature of the variant with components/kube-prometheus:
// the Role that lets kube-prometheus's Prometheus discover nudgeflow's targets.
const kubePrometheus = "kube-prometheus"

// Prometheus as kube-prometheus runs it, and nudgeflow's own scraper.
const (
	prometheusK8s   = "system:serviceaccount:monitoring:prometheus-k8s"
	scraperAccount  = "nudgeflow-metrics-scraper"
	scraperSecret   = "nudgeflow-metrics-scraper-token"
	metricsReader   = "nudgeflow-metrics-reader"
	serviceCAInject = "service.beta.openshift.io/inject-cabundle"
	// discoveryBinding binds kube-prometheus's Prometheus, in its own namespace.
	discoveryBinding = "nudgeflow-prometheus-discovery"
)

// servingCertDirFlag is the flag that points each process's metrics server at its
// certificate folder: the bridge and the worker serve metrics with
// controller-runtime (--metrics-cert-dir), the receiver with the certificate of
// its endpoint (--tls-cert-dir).
var servingCertDirFlag = map[string]string{
	"nudgeflow-bridge":   "metrics-cert-dir",
	"nudgeflow-worker":   "metrics-cert-dir",
	"nudgeflow-receiver": "tls-cert-dir",
}

// reviewsTokens are the processes whose metrics server has the API server review
// the scraper's token; the receiver holds no credential to, and is sent none.
var reviewsTokens = []string{"nudgeflow-bridge", "nudgeflow-worker"}

// serviceMonitorEndpoint is what the test reads of a ServiceMonitor's endpoint
// (the Prometheus operator's field names).
type serviceMonitorEndpoint struct {
	Scheme          string `json:"scheme"`
	BearerTokenFile string `json:"bearerTokenFile"`
	Authorization   *struct {
		Type        string `json:"type"`
		Credentials struct {
			Name string `json:"name"`
			Key  string `json:"key"`
		} `json:"credentials"`
	} `json:"authorization"`
	TLSConfig struct {
		InsecureSkipVerify bool   `json:"insecureSkipVerify"`
		ServerName         string `json:"serverName"`
		CAFile             string `json:"caFile"`
		CA                 struct {
			Secret *struct {
				Name string `json:"name"`
				Key  string `json:"key"`
			} `json:"secret"`
			ConfigMap *struct {
				Name string `json:"name"`
				Key  string `json:"key"`
			} `json:"configMap"`
		} `json:"ca"`
	} `json:"tlsConfig"`
}

type serviceMonitor struct {
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []serviceMonitorEndpoint `json:"endpoints"`
	} `json:"spec"`
}

// checkScrapeTrust: every ServiceMonitor verifies its process's certificate and
// sends the scraper's token only where it is reviewed. Prometheus reads nothing
// from its file system (OpenShift's user workload monitoring refuses that) and
// skips no verification. The certificate the process serves its metrics with is
// the one of the Secret it mounts, issued for the ServiceMonitor's serverName by
// the overlay's CA (the service CA on OpenShift, nudgeflow-ca with cert-manager),
// and the ServiceMonitor trusts that CA. The token comes from the Secret the API
// server fills for a ServiceAccount bound to nudgeflow-metrics-reader.
func checkScrapeTrust(t *testing.T, v variant) {
	m := v.objs
	monitors := m.ofKind("ServiceMonitor")
	require.Len(t, monitors, 3, "one ServiceMonitor per process")
	for _, mon := range monitors {
		sm := get[serviceMonitor](t, m, "ServiceMonitor", mon.GetName())
		d := m.deployment(t, mon.GetName())
		require.Equal(t, d.Spec.Template.Labels["app.kubernetes.io/component"], sm.Spec.Selector.MatchLabels["app.kubernetes.io/component"],
			"ServiceMonitor %s scrapes its process's Service", mon.GetName())
		require.Len(t, sm.Spec.Endpoints, 1)
		e := sm.Spec.Endpoints[0]
		require.Equal(t, "https", e.Scheme)
		require.Empty(t, e.BearerTokenFile, "no file of Prometheus is read")
		require.Empty(t, e.TLSConfig.CAFile, "no file of Prometheus is read")
		require.False(t, e.TLSConfig.InsecureSkipVerify, "the token goes only to a verified peer")

		// The certificate the process serves.
		flag := servingCertDirFlag[d.Name]
		dir, ok := argValue(d.Spec.Template.Spec.Containers[0].Args, flag)
		require.True(t, ok, "%s serves its metrics with a certificate of its --%s", d.Name, flag)
		secret := secretMountedAt(t, d, dir)
		svcName, ok := strings.CutSuffix(e.TLSConfig.ServerName, "."+v.namespace+".svc")
		require.True(t, ok, "serverName %s is a Service of %s", e.TLSConfig.ServerName, v.namespace)
		svc := m.service(t, svcName)
		switch v.overlay {
		case "openshift":
			require.Equal(t, secret, svc.Annotations["service.beta.openshift.io/serving-cert-secret-name"],
				"service-ca issues %s's certificate for Service %s into the Secret it mounts", d.Name, svcName)
			require.Nil(t, e.TLSConfig.CA.Secret)
			require.NotNil(t, e.TLSConfig.CA.ConfigMap, "ServiceMonitor %s trusts the service CA", mon.GetName())
			require.Equal(t, "service-ca.crt", e.TLSConfig.CA.ConfigMap.Key)
			cm := m.find("ConfigMap", e.TLSConfig.CA.ConfigMap.Name)
			require.NotNil(t, cm, "the ConfigMap %s is shipped", e.TLSConfig.CA.ConfigMap.Name)
			require.Equal(t, "true", cm.GetAnnotations()[serviceCAInject], "service-ca injects its CA into %s", cm.GetName())
		case "cert-manager":
			cert, dns := certificateOf(t, m, secret)
			require.Contains(t, dns, e.TLSConfig.ServerName, "Certificate %s names the serverName", cert.GetName())
			checkCAChain(t, v, cert)
			require.NotNil(t, e.TLSConfig.CA.Secret, "ServiceMonitor %s trusts the issuing CA", mon.GetName())
			require.Equal(t, secret, e.TLSConfig.CA.Secret.Name, "the CA cert-manager writes beside the process's certificate")
			require.Equal(t, "ca.crt", e.TLSConfig.CA.Secret.Key)
		default:
			t.Fatalf("variant %s: monitoring without an overlay's CA", v.name)
		}

		// The credential.
		if !slices.Contains(reviewsTokens, d.Name) {
			require.Nil(t, e.Authorization, "%s reviews no token: it is sent none", d.Name)
			continue
		}
		require.NotNil(t, e.Authorization, "%s is scraped with a token", d.Name)
		require.Equal(t, "Bearer", e.Authorization.Type)
		require.Equal(t, "token", e.Authorization.Credentials.Key)
		tok := get[corev1.Secret](t, m, "Secret", e.Authorization.Credentials.Name)
		require.Equal(t, corev1.SecretTypeServiceAccountToken, tok.Type)
		sa := tok.Annotations[corev1.ServiceAccountNameKey]
		require.NotNil(t, m.find("ServiceAccount", sa), "the token's ServiceAccount %s is shipped", sa)
		require.Equal(t, scraperAccount, sa)
		bound := false
		for _, o := range m.ofKind("ClusterRoleBinding") {
			b := get[rbacv1.ClusterRoleBinding](t, m, "ClusterRoleBinding", o.GetName())
			for _, s := range b.Subjects {
				if s.Kind == rbacv1.ServiceAccountKind && s.Name == sa && s.Namespace == v.namespace {
					require.Equal(t, metricsReader, b.RoleRef.Name, "%s is bound to %s and nothing else", sa, metricsReader)
					bound = true
				}
			}
		}
		require.True(t, bound, "%s/%s is bound to %s", v.namespace, sa, metricsReader)
	}
	if slices.Contains(v.features, kubePrometheus) {
		checkDiscoveryRole(t, v)
	} else {
		require.Nil(t, m.find("RoleBinding", discoveryBinding))
	}
}

// checkDiscoveryRole: kube-prometheus's Prometheus may list and watch what its
// service discovery reads in nudgeflow's namespace, and nothing else.
func checkDiscoveryRole(t *testing.T, v variant) {
	b := get[rbacv1.RoleBinding](t, v.objs, "RoleBinding", discoveryBinding)
	require.Equal(t, []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus-k8s", Namespace: "monitoring"}}, b.Subjects)
	r := get[rbacv1.Role](t, v.objs, "Role", b.RoleRef.Name)
	for _, rule := range r.Rules {
		require.ElementsMatch(t, []string{"get", "list", "watch"}, rule.Verbs)
		require.NotContains(t, rule.Resources, "secrets")
	}
}

// secretMountedAt is the Secret d mounts at dir, required (a pod does not start
// without it, so it never serves a certificate of its own making).
func secretMountedAt(t *testing.T, d *appsv1.Deployment, dir string) string {
	t.Helper()
	for _, vm := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
		if vm.MountPath != dir {
			continue
		}
		for _, vol := range d.Spec.Template.Spec.Volumes {
			if vol.Name == vm.Name && vol.Secret != nil {
				require.False(t, vol.Secret.Optional != nil && *vol.Secret.Optional, "%s's Secret %s is required", d.Name, vol.Secret.SecretName)
				return vol.Secret.SecretName
			}
		}
	}
	t.Fatalf("%s mounts no Secret at %s", d.Name, dir)
	return ""
}

// checkCAChain: cert is issued by nudgeflow's CA Issuer, whose Secret a CA
// Certificate writes, signed by a self-signed Issuer; the CA keeps its key when it
// renews, so the trust root does not change. It returns the CA Certificate.
func checkCAChain(t *testing.T, v variant, cert *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	issuer := issuerOf(t, v, cert)
	caSecret, ok, _ := unstructured.NestedString(issuer.Object, "spec", "ca", "secretName")
	require.True(t, ok, "Certificate %s is issued by a CA Issuer, not %v", cert.GetName(), issuer.Object["spec"])
	ca, _ := certificateOf(t, v.objs, caSecret)
	isCA, _, _ := unstructured.NestedBool(ca.Object, "spec", "isCA")
	require.True(t, isCA, "Certificate %s is a CA", ca.GetName())
	policy, _, _ := unstructured.NestedString(ca.Object, "spec", "privateKey", "rotationPolicy")
	require.Equal(t, "Never", policy, "the CA keeps its key when it renews")
	root := issuerOf(t, v, ca)
	_, selfSigned, _ := unstructured.NestedMap(root.Object, "spec", "selfSigned")
	require.True(t, selfSigned, "the CA is bootstrapped by a self-signed Issuer")
	return ca
}

func issuerOf(t *testing.T, v variant, cert *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	kind, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "kind")
	name, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	require.Equal(t, "Issuer", kind, "Certificate %s names its Issuer's kind", cert.GetName())
	issuer := v.objs.find("Issuer", name)
	require.NotNil(t, issuer, "Issuer %s of Certificate %s is shipped", name, cert.GetName())
	return issuer
}

// No variant scrapes with Prometheus's files or without verifying, and in the
// cert-manager overlay every Certificate but the CA is issued by the CA (none is a
// self-signed leaf whose renewal would change the trust root).
func TestNoVariantSkipsVerificationOrReadsPrometheusFiles(t *testing.T) {
	for _, set := range [][]variant{variants(t), renamespacedVariants(t)} {
		for _, v := range set {
			t.Run(v.name, func(t *testing.T) {
				for _, field := range []string{"insecureSkipVerify", "bearerTokenFile", "caFile", "certFile", "keyFile"} {
					require.NotContains(t, string(v.raw), field+":")
				}
				if v.overlay != "cert-manager" {
					require.Empty(t, v.objs.ofKind("Certificate"))
					return
				}
				var cas int
				for _, c := range v.objs.ofKind("Certificate") {
					if isCA, _, _ := unstructured.NestedBool(c.Object, "spec", "isCA"); isCA {
						cas++
						continue
					}
					checkCAChain(t, v, c)
				}
				require.Equal(t, 1, cas, "one CA")
			})
		}
	}
}

// applyMonitoringRBAC applies, for real, the ServiceAccounts, Secrets, roles and
// bindings of the kube-prometheus variant in ns (v: that variant), beside the
// installed cert-manager overlay, and removes them after the test.
func applyMonitoringRBAC(t *testing.T, v variant) {
	t.Helper()
	applied(t)
	var objs manifests
	for _, o := range v.objs {
		switch o.GetKind() {
		case "ServiceAccount", "Secret", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
			objs = append(objs, o)
		}
	}
	t.Cleanup(func() {
		out, err := kubectl(t, nil, "-n", v.namespace, "delete", "--ignore-not-found", "secret/"+scraperSecret, "serviceaccount/"+scraperAccount,
			"rolebinding/"+discoveryBinding, "role/"+discoveryBinding)
		require.NoError(t, err, out)
		out, err = kubectl(t, nil, "delete", "--ignore-not-found", "clusterrolebinding/nudgeflow-metrics-scraper")
		require.NoError(t, err, out)
	})
	out, err := kubectl(t, objs.yaml(t), "apply", "--server-side", "--force-conflicts", "--field-manager", "deploy-test", "-f", "-")
	require.NoError(t, err, "kubectl apply: %s", out)
	for _, name := range []string{"secret/" + scraperSecret, "serviceaccount/" + scraperAccount,
		"rolebinding.rbac.authorization.k8s.io/" + discoveryBinding, "clusterrolebinding.rbac.authorization.k8s.io/nudgeflow-metrics-scraper"} {
		require.Contains(t, out, name+" serverside-applied")
	}
}

// serviceAccountClient is a client of the real API server impersonating a
// ServiceAccount by its user name (the API server adds its groups, as it does
// when it authenticates the ServiceAccount's token), and its configuration for
// raw requests.
func serviceAccountClient(t *testing.T, user string) (ctrlclient.Client, *rest.Config) {
	t.Helper()
	cfg := world.Get(t).Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := ctrlclient.New(cfg, ctrlclient.Options{Scheme: kube.NewScheme()})
	require.NoError(t, err)
	return c, cfg
}

// rawGet is a GET of path on the API server as cfg's user: its status code.
func rawGet(t *testing.T, cfg *rest.Config, path string) int {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	resp, err := hc.Get(strings.TrimSuffix(cfg.Host, "/") + path)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}

// The scraper's long-lived token grants reading metrics and nothing more, and the
// people of a tenant namespace cannot read it, on the real API server with the
// shipped RBAC: as the scraper, GET /metrics is allowed (the API server's own,
// which the same non-resource rule covers, stands in for nudgeflow's: both ask
// the same SubjectAccessReview), Secrets and Pods are refused. A tenant's namespace
// admin, and a user with nudgeflow-edit, try to read the token Secret and are
// refused. The readers deploy/monitoring/scraper.yaml names (the worker, the
// bridge) can, as it says.
func TestScraperTokenIsReadOnlyByOperators(t *testing.T) {
	v := findVariant(t, variants(t), "cert-manager+monitoring+kube-prometheus")
	applyMonitoringRBAC(t, v)
	ctx := context.Background()

	scraper, cfg := serviceAccountClient(t, fmt.Sprintf("system:serviceaccount:%s:%s", v.namespace, scraperAccount))
	require.Equal(t, http.StatusOK, rawGet(t, cfg, "/metrics"), "the scraper may get /metrics")
	require.Equal(t, http.StatusForbidden, rawGet(t, cfg, "/api/v1/namespaces/"+v.namespace+"/secrets"), "the scraper lists no Secret")
	err := scraper.Get(ctx, ctrlclient.ObjectKey{Namespace: v.namespace, Name: scraperSecret}, &corev1.Secret{})
	require.True(t, apierrors.IsForbidden(err), "the scraper reads no Secret, not even its own: %v", err)
	require.True(t, apierrors.IsForbidden(scraper.List(ctx, &corev1.PodList{})), "the scraper lists no Pod")

	aggregateClusterRoles(t)
	tenant := world.Get(t).Namespace(t)
	bindUser(t, tenant, "admin", "tenant-admin")
	bindUser(t, tenant, "nudgeflow-edit", "tenant-editor")
	for _, user := range []string{"tenant-admin", "tenant-editor"} {
		c := asUser(t, user)
		err := c.Get(ctx, ctrlclient.ObjectKey{Namespace: v.namespace, Name: scraperSecret}, &corev1.Secret{})
		require.True(t, apierrors.IsForbidden(err), "%s cannot read the scraper's token: %v", user, err)
		err = c.List(ctx, &corev1.SecretList{}, ctrlclient.InNamespace(v.namespace))
		require.True(t, apierrors.IsForbidden(err), "%s cannot list nudgeflow's Secrets: %v", user, err)
	}

	worker, _ := serviceAccountClient(t, fmt.Sprintf("system:serviceaccount:%s:nudgeflow-worker", v.namespace))
	require.NoError(t, worker.Get(ctx, ctrlclient.ObjectKey{Namespace: v.namespace, Name: scraperSecret}, &corev1.Secret{}),
		"the worker reads Secrets cluster-wide (tenants' Renovate credentials): scraper.yaml names it a reader")
	bridge, _ := serviceAccountClient(t, fmt.Sprintf("system:serviceaccount:%s:nudgeflow-bridge", v.namespace))
	require.NoError(t, bridge.List(ctx, &corev1.SecretList{}, ctrlclient.InNamespace(v.namespace)),
		"the bridge lists its namespace's Secrets: scraper.yaml names it a reader")
}

// kube-prometheus's Prometheus (monitoring:prometheus-k8s) discovers nudgeflow's
// targets with the shipped Role, on the real API server: it lists and watches the
// Services, Endpoints, EndpointSlices and Pods of nudgeflow's namespace, reads no
// Secret there, and lists nothing in another namespace.
func TestKubePrometheusDiscoversNudgeflow(t *testing.T) {
	v := findVariant(t, variants(t), "cert-manager+monitoring+kube-prometheus")
	ctx := context.Background()
	prom, _ := serviceAccountClient(t, prometheusK8s)
	in := ctrlclient.InNamespace(v.namespace)
	require.True(t, apierrors.IsForbidden(prom.List(ctx, &corev1.ServiceList{}, in)), "without the component, Prometheus discovers nothing here")

	applyMonitoringRBAC(t, v)
	var svcs corev1.ServiceList
	require.NoError(t, prom.List(ctx, &svcs, in), "Prometheus lists nudgeflow's Services")
	require.NotEmpty(t, svcs.Items, "the installed overlay's Services")
	require.NoError(t, prom.List(ctx, &corev1.EndpointsList{}, in))
	require.NoError(t, prom.List(ctx, &discoveryv1.EndpointSliceList{}, in))
	require.NoError(t, prom.List(ctx, &corev1.PodList{}, in))
	require.True(t, apierrors.IsForbidden(prom.List(ctx, &corev1.SecretList{}, in)), "Prometheus reads no Secret of nudgeflow's")
	require.True(t, apierrors.IsForbidden(prom.List(ctx, &corev1.ServiceList{}, ctrlclient.InNamespace(world.Get(t).Namespace(t)))),
		"nor another namespace's Services")
}
