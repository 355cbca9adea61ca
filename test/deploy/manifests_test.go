package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/internal/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// variant is one way an operator deploys nudgeflow.
type variant struct {
	name     string
	raw      []byte
	objs     manifests
	overlay  string // "", "openshift" or "cert-manager"
	features []string
}

var (
	variantsOnce sync.Once
	allVariants  []variant
)

// variants builds the base, both overlays, and overlays with the Temporal
// components and monitoring, as an operator would compose them.
func variants(t *testing.T) []variant {
	variantsOnce.Do(func() {
		add := func(name, overlay string, raw []byte, objs manifests, features ...string) {
			allVariants = append(allVariants, variant{name: name, raw: raw, objs: objs, overlay: overlay, features: features})
		}
		raw, objs := kustomize(t, deployDir("base"))
		add("base", "", raw, objs)
		raw, objs = kustomize(t, deployDir("overlays", "openshift"))
		add("openshift", "openshift", raw, objs, "monitoring")
		raw, objs = kustomize(t, deployDir("overlays", "cert-manager"))
		add("cert-manager", "cert-manager", raw, objs)
		raw, objs = composed(t, "overlays/cert-manager", "components/temporal-mtls", "monitoring")
		add("cert-manager+temporal-mtls+monitoring", "cert-manager", raw, objs, "mtls", "monitoring")
		raw, objs = composed(t, "overlays/openshift", "components/temporal-cloud")
		add("openshift+temporal-cloud", "openshift", raw, objs, "monitoring", "cloud")
		raw, objs = composed(t, "overlays/openshift", "components/beside-integration-service")
		add("openshift+beside-integration-service", "openshift", raw, objs, "monitoring", besideIntegrationService)
	})
	return allVariants
}

// Every variant holds every generated object unchanged (CRDs, roles, webhooks from
// `make generate`), and its parts fit together: webhooks reach the bridge's webhook
// port through the Service, the certificate lands where the bridge reads it,
// ServiceAccounts are bound to their roles, Services and budgets select pods,
// probes name declared ports.
func TestEveryVariantIsConsistent(t *testing.T) {
	generated := generatedObjects(t)
	var baseDeployments [][]byte
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			checkGenerated(t, v.objs, generated, slices.Contains(v.features, besideIntegrationService))
			if slices.Contains(v.features, besideIntegrationService) {
				checkNoShortNameOf(t, v.objs, filepath.Join(localenv.RepoRoot(), "test", "crds"))
			}
			checkNamespaces(t, v.objs)
			bridge := v.objs.deployment(t, "nudgeflow-bridge")
			worker := v.objs.deployment(t, "nudgeflow-worker")
			for _, d := range []*appsv1.Deployment{bridge, worker} {
				checkDeployment(t, v.objs, d)
			}
			checkWebhooks(t, v.objs, bridge, slices.Contains(v.features, besideIntegrationService))
			checkServicesAndBudgets(t, v.objs, []*appsv1.Deployment{bridge, worker})
			checkCertificate(t, v, bridge)
			if slices.Contains(v.features, "monitoring") {
				checkMonitoring(t, v.objs)
			}
			checkTemporalEnv(t, v, []*appsv1.Deployment{bridge, worker})
			checkTrustedCA(t, v.objs, worker)
			if len(v.features) == 0 || v.name == "openshift" {
				// The overlays change no Deployment: what the program test runs is
				// what each overlay deploys.
				raw, err := json.Marshal([]any{bridge.Spec, worker.Spec})
				require.NoError(t, err)
				baseDeployments = append(baseDeployments, raw)
			}
		})
	}
	require.NotEmpty(t, baseDeployments, "the base was built")
	for _, d := range baseDeployments[1:] {
		require.JSONEq(t, string(baseDeployments[0]), string(d), "every overlay deploys the base's Deployments")
	}
}

type generatedObject struct {
	file string
	obj  *unstructured.Unstructured
}

// generatedObjects reads what `make generate` writes under deploy/ (and the
// handwritten NudgeConfig webhook beside it).
func generatedObjects(t *testing.T) []generatedObject {
	var out []generatedObject
	for _, dir := range []string{"crds", "rbac/bridge", "rbac/worker", "webhooks"} {
		files, err := filepath.Glob(deployDir(dir, "*.yaml"))
		require.NoError(t, err)
		for _, f := range files {
			if filepath.Base(f) == "kustomization.yaml" {
				continue
			}
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, o := range parseManifests(t, raw) {
				out = append(out, generatedObject{file: f, obj: o})
			}
		}
	}
	require.NotEmpty(t, out)
	return out
}

// renamed are the generated objects deploy/base renames.
var renamed = map[string]string{
	"MutatingWebhookConfiguration/mutating-webhook-configuration":     "nudgeflow-pipelinerun-interception",
	"ValidatingWebhookConfiguration/validating-webhook-configuration": "nudgeflow-changegroup",
}

// besideIntegrationService is the feature of the variant with the component of that
// name: nudgeflow's own NudgeConfig CRD and its webhook are left out there.
const besideIntegrationService = "beside-integration-service"

// leftOutBesideIntegrationService are the generated objects that variant omits:
// integration-service serves NudgeConfig (short name nc) and admits it.
var leftOutBesideIntegrationService = []string{
	"CustomResourceDefinition/nudgeconfigs.konflux-ci.dev",
	"ValidatingWebhookConfiguration/nudgeflow-nudgeconfig",
}

func checkGenerated(t *testing.T, m manifests, generated []generatedObject, besideIS bool) {
	for _, g := range generated {
		name := g.obj.GetName()
		if slices.Contains(leftOutBesideIntegrationService, g.obj.GetKind()+"/"+name) {
			if besideIS {
				require.Nil(t, m.find(g.obj.GetKind(), name), "%s %s is not installed beside integration-service", g.obj.GetKind(), name)
				continue
			}
		}
		if n, ok := renamed[g.obj.GetKind()+"/"+name]; ok {
			name = n
		}
		got := m.find(g.obj.GetKind(), name)
		require.NotNil(t, got, "%s %s from %s is deployed (is it listed in its folder's kustomization.yaml?)", g.obj.GetKind(), name, g.file)
		switch g.obj.GetKind() {
		case "CustomResourceDefinition":
			require.Equal(t, g.obj.Object["spec"], got.Object["spec"], "CRD %s is deployed as generated", name)
		case "ClusterRole":
			require.Equal(t, g.obj.Object["rules"], got.Object["rules"], "ClusterRole %s is deployed as generated", name)
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			want, _, _ := unstructured.NestedSlice(g.obj.Object, "webhooks")
			have, _, _ := unstructured.NestedSlice(got.Object, "webhooks")
			require.Len(t, have, len(want))
			for i := range want {
				w, h := want[i].(map[string]any), have[i].(map[string]any)
				for k := range w {
					if k != "clientConfig" {
						require.Equal(t, w[k], h[k], "%s %s webhook %d field %s is deployed as generated", g.obj.GetKind(), name, i, k)
					}
				}
			}
		}
	}
}

// checkNoShortNameOf: no CRD of m takes a short name one of the CRDs in dir (the
// Konflux services' kinds) declares, so `kubectl get nc` or `kubectl get cg` still
// names one kind beside integration-service.
func checkNoShortNameOf(t *testing.T, m manifests, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	theirs := map[string]string{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, o := range parseManifests(t, raw) {
			names, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "names", "shortNames")
			for _, n := range names {
				theirs[n] = o.GetName()
			}
		}
	}
	require.Contains(t, theirs, "nc", "integration-service's NudgeConfig CRD is among %s", dir)
	for _, o := range m {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		names, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "names", "shortNames")
		for _, n := range names {
			require.NotContains(t, theirs, n, "CRD %s takes the short name %s of %s", o.GetName(), n, theirs[n])
		}
	}
}

var clusterScoped = []string{"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
	"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}

func checkNamespaces(t *testing.T, m manifests) {
	require.NotNil(t, m.find("Namespace", systemNamespace))
	for _, o := range m {
		if slices.Contains(clusterScoped, o.GetKind()) {
			require.Empty(t, o.GetNamespace(), "%s %s is cluster-scoped", o.GetKind(), o.GetName())
			continue
		}
		require.Equal(t, systemNamespace, o.GetNamespace(), "%s %s lives in %s", o.GetKind(), o.GetName(), systemNamespace)
	}
}

// argValue is the value of --name=value in args.
func argValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func containerPort(c corev1.Container, port intstr.IntOrString) (corev1.ContainerPort, bool) {
	for _, p := range c.Ports {
		if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
			return p, true
		}
	}
	return corev1.ContainerPort{}, false
}

func checkDeployment(t *testing.T, m manifests, d *appsv1.Deployment) {
	spec := d.Spec.Template.Spec
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	require.Equal(t, "quay.io/konflux-ci/nudgeflow:latest", c.Image, "the image transformer names the image")
	require.Equal(t, []string{imageBinary}, c.Command, "the Containerfile installs the binary there")
	require.True(t, labels.SelectorFromSet(d.Spec.Selector.MatchLabels).Matches(labels.Set(d.Spec.Template.Labels)))
	require.GreaterOrEqual(t, *d.Spec.Replicas, int32(2), "%s survives a node drain", d.Name)

	// Its ServiceAccount is bound to the role generated for it.
	require.NotNil(t, m.find("ServiceAccount", spec.ServiceAccountName), "ServiceAccount %s", spec.ServiceAccountName)
	role := m.find("ClusterRole", d.Name)
	require.NotNil(t, role, "the generated ClusterRole %s", d.Name)
	bound := false
	for _, o := range m.ofKind("ClusterRoleBinding") {
		b := get[rbacv1.ClusterRoleBinding](t, m, "ClusterRoleBinding", o.GetName())
		for _, s := range b.Subjects {
			if b.RoleRef.Name == d.Name && s.Kind == "ServiceAccount" && s.Name == spec.ServiceAccountName && s.Namespace == systemNamespace {
				bound = true
			}
		}
	}
	require.True(t, bound, "%s's ServiceAccount is bound to ClusterRole %s", d.Name, d.Name)

	// Probes, resources, the restricted pod security profile.
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		require.NotNil(t, p)
		require.NotNil(t, p.HTTPGet)
		_, ok := containerPort(c, p.HTTPGet.Port)
		require.True(t, ok, "probe port %s is declared", p.HTTPGet.Port.String())
	}
	require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.False(t, c.Resources.Requests.Cpu().IsZero())
	require.False(t, c.Resources.Requests.Memory().IsZero())
	require.False(t, c.Resources.Limits.Memory().IsZero())
	require.True(t, *spec.SecurityContext.RunAsNonRoot)
	require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	require.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
	for _, ef := range c.EnvFrom {
		require.NotNil(t, m.find("ConfigMap", ef.ConfigMapRef.Name), "ConfigMap %s", ef.ConfigMapRef.Name)
	}
	// Every listen address flag names a declared port.
	for _, a := range c.Args {
		if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(v, ":") {
			_, declared := containerPort(c, intstr.Parse(v[1:]))
			require.True(t, declared, "%s: %s listens on a declared container port", d.Name, a)
		}
	}
	// Every mounted volume exists.
	for _, vm := range c.VolumeMounts {
		require.True(t, slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == vm.Name }), "volume %s", vm.Name)
	}
}

// checkTrustedCA: the worker knows its namespace from the downward API
// (POD_NAMESPACE, the default of --operator-namespace, which the args leave alone),
// where the ConfigMap labelled for OpenShift's CA injection lives, shipped without
// data; its own clients read that ConfigMap through SSL_CERT_DIR, the folder it is
// mounted at.
func checkTrustedCA(t *testing.T, m manifests, worker *appsv1.Deployment) {
	spec := worker.Spec.Template.Spec
	c := spec.Containers[0]
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	ns, ok := env["POD_NAMESPACE"]
	require.True(t, ok, "the worker sets POD_NAMESPACE")
	require.NotNil(t, ns.ValueFrom, "POD_NAMESPACE comes from the downward API")
	require.NotNil(t, ns.ValueFrom.FieldRef, "POD_NAMESPACE comes from the downward API")
	require.Equal(t, "metadata.namespace", ns.ValueFrom.FieldRef.FieldPath)
	_, set := argValue(c.Args, "operator-namespace")
	require.False(t, set, "--operator-namespace is left to default to $POD_NAMESPACE")

	dir := env["SSL_CERT_DIR"].Value
	require.NotEmpty(t, dir, "the worker's own clients read the trusted CA folder")
	i := slices.IndexFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.MountPath == dir })
	require.GreaterOrEqual(t, i, 0, "SSL_CERT_DIR %s is a mount", dir)
	j := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == c.VolumeMounts[i].Name })
	require.GreaterOrEqual(t, j, 0)
	vol := spec.Volumes[j]
	require.NotNil(t, vol.ConfigMap, "SSL_CERT_DIR mounts a ConfigMap")
	require.True(t, *vol.ConfigMap.Optional, "the worker starts before (or without) a bundle")
	cm := m.find("ConfigMap", vol.ConfigMap.Name)
	require.NotNil(t, cm, "ConfigMap %s is deployed", vol.ConfigMap.Name)
	require.Equal(t, "true", cm.GetLabels()[renovate.LabelInjectTrustedCABundle], "OpenShift injects the bundle into it")
	require.NotContains(t, cm.Object, "data", "an apply never removes an injected bundle")
}

// webhookService resolves a webhook's clientConfig to the bridge's container port.
func checkWebhooks(t *testing.T, m manifests, bridge *appsv1.Deployment, besideIS bool) {
	c := bridge.Spec.Template.Spec.Containers[0]
	port, ok := argValue(c.Args, "webhook-port")
	require.True(t, ok, "the bridge's --webhook-port")
	count := 0
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		for _, o := range m.ofKind(kind) {
			hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			for _, h := range hooks {
				count++
				svc, _, _ := unstructured.NestedMap(h.(map[string]any), "clientConfig", "service")
				require.Equal(t, systemNamespace, svc["namespace"], "%s %s", kind, o.GetName())
				s := m.service(t, svc["name"].(string))
				want := int64(443)
				if p, ok := svc["port"]; ok {
					want = p.(int64)
				}
				var target corev1.ContainerPort
				found := false
				for _, sp := range s.Spec.Ports {
					if int64(sp.Port) == want {
						target, found = containerPort(c, sp.TargetPort)
					}
				}
				require.True(t, found, "%s %s: Service %s port %d targets a bridge port", kind, o.GetName(), s.Name, want)
				require.Equal(t, port, fmt.Sprint(target.ContainerPort), "%s %s reaches --webhook-port", kind, o.GetName())
				require.True(t, labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(bridge.Spec.Template.Labels)), "Service %s selects the bridge", s.Name)
			}
		}
	}
	want := generatedWebhooks(t)
	if besideIS {
		want-- // nudgeflow's NudgeConfig webhook: integration-service admits its own kind
	}
	require.Equal(t, want, count, "every webhook of deploy/webhooks is deployed")
}

// generatedWebhooks counts the webhooks the code declares (deploy/webhooks, generated
// from the markers plus the handwritten NudgeConfig one).
func generatedWebhooks(t *testing.T) int {
	t.Helper()
	n := 0
	for _, f := range []string{"manifests.yaml", "nudgeconfig.yaml"} {
		raw, err := os.ReadFile(deployDir("webhooks", f))
		require.NoError(t, err)
		for _, o := range parseManifests(t, raw) {
			hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			n += len(hooks)
		}
	}
	require.GreaterOrEqual(t, n, 4, "the nudge interception, build routing, ChangeGroup and NudgeConfig webhooks at least")
	return n
}

func checkServicesAndBudgets(t *testing.T, m manifests, deployments []*appsv1.Deployment) {
	for _, o := range m.ofKind("Service") {
		s := m.service(t, o.GetName())
		var d *appsv1.Deployment
		for _, dd := range deployments {
			if labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(dd.Spec.Template.Labels)) {
				require.Nil(t, d, "Service %s selects one Deployment", s.Name)
				d = dd
			}
		}
		require.NotNil(t, d, "Service %s selects a Deployment", s.Name)
		for _, p := range s.Spec.Ports {
			_, ok := containerPort(d.Spec.Template.Spec.Containers[0], p.TargetPort)
			require.True(t, ok, "Service %s port %s targets a declared port of %s", s.Name, p.Name, d.Name)
		}
	}
	budgets := m.ofKind("PodDisruptionBudget")
	require.Len(t, budgets, len(deployments))
	for _, d := range deployments {
		covered := false
		for _, o := range budgets {
			pdb := get[policyv1.PodDisruptionBudget](t, m, "PodDisruptionBudget", o.GetName())
			if labels.SelectorFromSet(pdb.Spec.Selector.MatchLabels).Matches(labels.Set(d.Spec.Template.Labels)) {
				covered = true
			}
		}
		require.True(t, covered, "a PodDisruptionBudget covers %s", d.Name)
	}
}

// webhookCertSecret is the Secret mounted where the bridge reads its serving certificate.
func webhookCertSecret(t *testing.T, bridge *appsv1.Deployment) string {
	c := bridge.Spec.Template.Spec.Containers[0]
	dir, ok := argValue(c.Args, "webhook-cert-dir")
	require.True(t, ok)
	for _, vm := range c.VolumeMounts {
		if vm.MountPath == dir {
			for _, v := range bridge.Spec.Template.Spec.Volumes {
				if v.Name == vm.Name && v.Secret != nil {
					return v.Secret.SecretName
				}
			}
		}
	}
	t.Fatalf("no Secret is mounted at --webhook-cert-dir %s", dir)
	return ""
}

func checkCertificate(t *testing.T, v variant, bridge *appsv1.Deployment) {
	secret := webhookCertSecret(t, bridge)
	svc := v.objs.service(t, "nudgeflow-bridge-webhook")
	hooks := append(v.objs.ofKind("MutatingWebhookConfiguration"), v.objs.ofKind("ValidatingWebhookConfiguration")...)
	switch v.overlay {
	case "openshift":
		require.Equal(t, secret, svc.Annotations["service.beta.openshift.io/serving-cert-secret-name"],
			"service-ca writes the webhook Service's certificate into the Secret the bridge mounts")
		for _, h := range hooks {
			require.Equal(t, "true", h.GetAnnotations()["service.beta.openshift.io/inject-cabundle"], "%s %s gets the service CA", h.GetKind(), h.GetName())
		}
	case "cert-manager":
		var cert *unstructured.Unstructured
		for _, c := range v.objs.ofKind("Certificate") {
			if name, _, _ := unstructured.NestedString(c.Object, "spec", "secretName"); name == secret {
				cert = c
			}
		}
		require.NotNil(t, cert, "a Certificate writes Secret %s", secret)
		dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
		require.Contains(t, dns, fmt.Sprintf("%s.%s.svc", svc.Name, systemNamespace), "the name the API server calls")
		issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
		require.NotNil(t, v.objs.find("Issuer", issuer))
		for _, h := range hooks {
			require.Equal(t, systemNamespace+"/"+cert.GetName(), h.GetAnnotations()["cert-manager.io/inject-ca-from"], "%s %s gets the Certificate's CA", h.GetKind(), h.GetName())
		}
	default:
		require.Empty(t, svc.Annotations, "the base leaves the certificate to an overlay")
	}
}

func checkMonitoring(t *testing.T, m manifests) {
	monitors := m.ofKind("ServiceMonitor")
	require.Len(t, monitors, 1)
	sel, _, _ := unstructured.NestedStringMap(monitors[0].Object, "spec", "selector", "matchLabels")
	endpoints, _, _ := unstructured.NestedSlice(monitors[0].Object, "spec", "endpoints")
	require.Len(t, endpoints, 1)
	port := endpoints[0].(map[string]any)["port"]
	var scraped []string
	for _, o := range m.ofKind("Service") {
		s := m.service(t, o.GetName())
		if labels.SelectorFromSet(sel).Matches(labels.Set(s.Labels)) {
			require.True(t, slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == port }), "Service %s has port %s", s.Name, port)
			scraped = append(scraped, s.Name)
		}
	}
	require.ElementsMatch(t, []string{"nudgeflow-bridge-metrics", "nudgeflow-worker-metrics"}, scraped)
	// The metrics Services reach /metrics: each process's --metrics-bind-address,
	// served over HTTPS to a bearer token, as the ServiceMonitor scrapes it.
	for _, e := range get[monitoringv1ServiceMonitor](t, m, "ServiceMonitor", "nudgeflow").Spec.Endpoints {
		require.Equal(t, "https", e.Scheme)
		require.Equal(t, "/var/run/secrets/kubernetes.io/serviceaccount/token", e.BearerTokenFile, "Prometheus presents its ServiceAccount's token")
	}
	for svc, flag := range map[string]string{"nudgeflow-bridge-metrics": "metrics-bind-address", "nudgeflow-worker-metrics": "metrics-bind-address"} {
		s := m.service(t, svc)
		d := m.deployment(t, strings.TrimSuffix(svc, "-metrics"))
		c := d.Spec.Template.Spec.Containers[0]
		p, ok := containerPort(c, s.Spec.Ports[0].TargetPort)
		require.True(t, ok)
		addr, ok := argValue(c.Args, flag)
		require.True(t, ok)
		require.Equal(t, fmt.Sprintf(":%d", p.ContainerPort), addr, "%s scrapes %s's --%s", svc, d.Name, flag)
	}
	dash := get[corev1.ConfigMap](t, m, "ConfigMap", "nudgeflow-dashboard")
	raw, err := os.ReadFile(deployDir("monitoring", "nudgeflow.json"))
	require.NoError(t, err)
	require.JSONEq(t, string(raw), dash.Data["nudgeflow.json"])
	require.Equal(t, "1", dash.Labels["grafana_dashboard"])
}

// monitoringv1ServiceMonitor is what the test reads of a ServiceMonitor.
type monitoringv1ServiceMonitor struct {
	Spec struct {
		Endpoints []struct {
			Scheme          string `json:"scheme"`
			BearerTokenFile string `json:"bearerTokenFile"`
		} `json:"endpoints"`
	} `json:"spec"`
}

var (
	helpOnce sync.Once
	helpText string
)

// checkTemporalEnv: every Temporal variable a Deployment sets is one the binary
// reads (its --help names each), and the components set what they promise.
func checkTemporalEnv(t *testing.T, v variant, deployments []*appsv1.Deployment) {
	helpOnce.Do(func() {
		bin := nudgeflowBinary(t)
		for _, sub := range []string{"worker", "bridge"} {
			out, err := exec.Command(bin, sub, "--help").CombinedOutput()
			require.NoError(t, err, "%s", out)
			helpText += string(out)
		}
	})
	cm := get[corev1.ConfigMap](t, v.objs, "ConfigMap", "nudgeflow-temporal")
	for _, d := range deployments {
		c := d.Spec.Template.Spec.Containers[0]
		names := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			names[e.Name] = e
		}
		for k := range cm.Data {
			names[k] = corev1.EnvVar{Name: k}
		}
		for name := range names {
			if strings.HasPrefix(name, "TEMPORAL_") {
				require.Contains(t, helpText, "$"+name, "%s sets %s, which nudgeflow reads", d.Name, name)
			}
		}
		if slices.Contains(v.features, "mtls") {
			for _, k := range []string{"TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_SERVER_CA_CERT_PATH"} {
				require.Contains(t, names, k)
				require.True(t, strings.HasPrefix(names[k].Value, "/etc/nudgeflow/temporal-tls/"))
			}
			require.True(t, slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
				return v.Secret != nil && v.Secret.SecretName == "nudgeflow-temporal-tls"
			}))
		}
		if slices.Contains(v.features, "cloud") {
			// The API key comes from a Secret, never a literal: its mounted file, re-read
			// on rotation.
			require.NotContains(t, names, "TEMPORAL_API_KEY")
			require.True(t, strings.HasPrefix(names["TEMPORAL_API_KEY_FILE"].Value, "/etc/nudgeflow/temporal-api-key/"))
			require.True(t, slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
				return v.Secret != nil && v.Secret.SecretName == "nudgeflow-temporal-api-key"
			}))
		}
	}
}

var (
	applyOnce sync.Once
	applyErr  error
)

// applied installs the cert-manager overlay for real, except its admission
// webhook configurations (the API server cannot reach a Service in this world:
// envtest registers the same webhooks at a local address instead), so the
// Namespace, ServiceAccounts, roles and bindings exist for the program test.
func applied(t *testing.T) {
	applyOnce.Do(func() {
		var v variant
		for _, vv := range variants(t) {
			if vv.name == "cert-manager" {
				v = vv
			}
		}
		objs := v.objs.without("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
		out, err := kubectl(t, objs.yaml(t), "apply", "--server-side", "--force-conflicts", "--field-manager", "deploy-test", "-f", "-")
		if err != nil {
			applyErr = fmt.Errorf("kubectl apply: %v: %s", err, out)
		}
	})
	require.NoError(t, applyErr)
}

// The real API server accepts every object of every variant (server-side dry
// run: admission, schemas of the CRDs, RBAC references), as `kubectl apply -k`
// would send them.
func TestServerAcceptsEveryVariant(t *testing.T) {
	applied(t) // the namespace must exist for a dry run of what lives in it
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			// The test world registered webhook configurations of its own (envtest's,
			// calling a local URL); one shares its name with nudgeflow's NudgeConfig
			// webhook. An apply would merge the two clientConfigs: a replace checks
			// nudgeflow's object as it would be stored instead.
			var applyObjs, replaceObjs manifests
			for _, o := range v.objs {
				if strings.HasSuffix(o.GetKind(), "WebhookConfiguration") && existsInCluster(t, o) {
					replaceObjs = append(replaceObjs, o)
				} else {
					applyObjs = append(applyObjs, o)
				}
			}
			out, err := kubectl(t, applyObjs.yaml(t), "apply", "--server-side", "--dry-run=server", "--field-manager", "deploy-test", "--force-conflicts", "-f", "-")
			require.NoError(t, err, "kubectl apply --server-side --dry-run=server:\n%s", out)
			if len(replaceObjs) > 0 {
				more, err := kubectl(t, replaceObjs.yaml(t), "replace", "--dry-run=server", "-f", "-")
				require.NoError(t, err, "kubectl replace --dry-run=server:\n%s", more)
				out += more
			}
			require.Contains(t, out, "deployment.apps/nudgeflow-bridge")
			require.Contains(t, out, "validatingwebhookconfiguration.admissionregistration.k8s.io/nudgeflow-changegroup")
			if v.objs.find("Certificate", "nudgeflow-bridge-webhook") != nil {
				require.Contains(t, out, "certificate.cert-manager.io/nudgeflow-bridge-webhook")
			}
			if v.objs.find("ServiceMonitor", "nudgeflow") != nil {
				require.Contains(t, out, "servicemonitor.monitoring.coreos.com/nudgeflow")
			}
		})
	}
}

func existsInCluster(t *testing.T, o *unstructured.Unstructured) bool {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(o.GroupVersionKind())
	err := world.Get(t).Kube.Get(context.Background(), ctrlclient.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()}, u)
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

// Operators apply with `kubectl apply -k`: kubectl's own kustomize builds the same
// objects as the pinned kustomize.
func TestKubectlKustomizeBuildsTheSame(t *testing.T) {
	for _, dir := range []string{"base", "overlays/openshift", "overlays/cert-manager"} {
		want, _ := kustomize(t, deployDir(dir))
		got, err := exec.Command(tool(t, "kubectl"), "kustomize", deployDir(dir)).CombinedOutput()
		require.NoError(t, err, "%s", got)
		require.Equal(t, string(want), string(got), "kubectl kustomize %s", dir)
	}
}
