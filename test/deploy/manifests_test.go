package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// variant is one way an operator deploys nudgeflow.
type variant struct {
	name      string
	namespace string // where it installs nudgeflow
	raw       []byte
	objs      manifests
	overlay   string // "", "openshift" or "cert-manager"
	features  []string
}

// variantSpec is how an operator composes a variant: a folder of deploy/ with
// components.
type variantSpec struct {
	name, overlay, dir string
	components         []string
	features           []string
}

// variantSpecs are the base, both overlays, and overlays with the Temporal
// components, monitoring and the Ingress example, as an operator would compose them.
var variantSpecs = []variantSpec{
	{name: "base", dir: "base"},
	{name: "openshift", overlay: "openshift", dir: "overlays/openshift", features: []string{"monitoring", "route"}},
	{name: "cert-manager", overlay: "cert-manager", dir: "overlays/cert-manager"},
	{name: "cert-manager+temporal-mtls+monitoring", overlay: "cert-manager", dir: "overlays/cert-manager",
		components: []string{"components/temporal-mtls", "monitoring"}, features: []string{"mtls", "monitoring"}},
	{name: "cert-manager+monitoring+kube-prometheus", overlay: "cert-manager", dir: "overlays/cert-manager",
		components: []string{"monitoring", "components/kube-prometheus"}, features: []string{"monitoring", kubePrometheus}},
	{name: "cert-manager+forge-receiver-ingress", overlay: "cert-manager", dir: "overlays/cert-manager",
		components: []string{"components/forge-receiver-ingress"}, features: []string{"ingress"}},
	{name: "openshift+temporal-cloud", overlay: "openshift", dir: "overlays/openshift",
		components: []string{"components/temporal-cloud"}, features: []string{"monitoring", "route", "cloud"}},
	{name: "openshift+beside-integration-service", overlay: "openshift", dir: "overlays/openshift",
		components: []string{"components/beside-integration-service"}, features: []string{"monitoring", "route", besideIntegrationService}},
	{name: "cert-manager+insecure-temporal+webhook-from-control-plane", overlay: "cert-manager", dir: "overlays/cert-manager",
		components: []string{"components/insecure-temporal", "components/webhook-from-control-plane"}, features: []string{insecureTemporal, controlPlaneCIDR}},
}

// Features of the variants with the components of those names: plaintext to
// Temporal (the explicit opt-out), and the admission webhook port restricted to
// the control plane's addresses.
const (
	insecureTemporal = "insecure-temporal"
	controlPlaneCIDR = "webhook-from-control-plane"
)

var (
	variantsOnce           sync.Once
	allVariants            []variant
	renamespacedOnce       sync.Once
	allRenamespacedVariant []variant
)

// variants builds every variant as shipped, in nudgeflow-system.
func variants(t *testing.T) []variant {
	variantsOnce.Do(func() { allVariants = buildVariants(t, "") })
	return allVariants
}

// renamespacedVariants builds every variant inside a kustomization that sets
// `namespace: konflux-nudgeflow`, as Konflux's GitOps repository sets its own
// namespace over each component.
func renamespacedVariants(t *testing.T) []variant {
	renamespacedOnce.Do(func() { allRenamespacedVariant = buildVariants(t, otherNamespace) })
	return allRenamespacedVariant
}

func buildVariants(t *testing.T, namespace string) []variant {
	var out []variant
	for _, s := range variantSpecs {
		raw, objs := wrapped(t, namespace, s.dir, s.components...)
		v := variant{name: s.name, namespace: systemNamespace, raw: raw, objs: objs, overlay: s.overlay, features: s.features}
		if namespace != "" {
			v.name, v.namespace = "in "+namespace+"/"+s.name, namespace
		}
		out = append(out, v)
	}
	return out
}

// findVariant is the variant of that spec name among vs.
func findVariant(t *testing.T, vs []variant, name string) variant {
	t.Helper()
	for _, v := range vs {
		if strings.HasSuffix(v.name, "/"+name) || v.name == name {
			return v
		}
	}
	t.Fatalf("no variant %s", name)
	return variant{}
}

// Every variant holds every generated object unchanged (CRDs, roles, webhooks from
// `make generate`), and its parts fit together: webhooks reach the bridge's webhook
// port through the Service, the certificate lands where the bridge reads it,
// ServiceAccounts are bound to their roles, Services, budgets and network policies
// select pods, probes name declared ports. The same holds for every variant
// re-namespaced by an enclosing kustomization, which then names nudgeflow-system
// nowhere.
func TestEveryVariantIsConsistent(t *testing.T) {
	generated := generatedObjects(t)
	for _, set := range [][]variant{variants(t), renamespacedVariants(t)} {
		var baseDeployments, receiverDeployments [][]byte
		for _, v := range set {
			t.Run(v.name, func(t *testing.T) {
				checkGenerated(t, v.objs, generated, slices.Contains(v.features, besideIntegrationService))
				if slices.Contains(v.features, besideIntegrationService) {
					checkNoShortNameOf(t, v.objs, filepath.Join(localenv.RepoRoot(), "test", "crds"))
				}
				checkNamespaces(t, v)
				bridge := v.objs.deployment(t, "nudgeflow-bridge")
				worker := v.objs.deployment(t, "nudgeflow-worker")
				receiver := v.objs.deployment(t, "nudgeflow-receiver")
				for _, d := range []*appsv1.Deployment{bridge, worker, receiver} {
					checkDeployment(t, v, d)
				}
				for _, d := range []*appsv1.Deployment{bridge, worker} {
					checkBoundToItsRole(t, v, d)
				}
				checkReceiver(t, v, receiver, bridge)
				checkImages(t, v.objs)
				checkWebhooks(t, v, bridge, slices.Contains(v.features, besideIntegrationService))
				checkServicesAndBudgets(t, v.objs, []*appsv1.Deployment{bridge, worker, receiver})
				checkNetworkPolicies(t, v, []*appsv1.Deployment{bridge, worker, receiver})
				checkWorkerWrites(t, v, worker)
				checkUserRoles(t, v.objs)
				checkCertificate(t, v, bridge)
				checkReceiverCertificate(t, v, receiver, bridge)
				checkForgeReceiverExposure(t, v)
				if slices.Contains(v.features, "monitoring") {
					checkMonitoring(t, v)
				}
				pods := map[string]corev1.PodSpec{bridge.Name: bridge.Spec.Template.Spec, worker.Name: worker.Spec.Template.Spec}
				if slices.Contains(v.features, "cloud") {
					require.Nil(t, v.objs.find("Job", "nudgeflow-temporal-setup"), "Temporal Cloud gets its search attributes with tcld")
					require.Nil(t, v.objs.find("ServiceAccount", "nudgeflow-temporal-setup"))
				} else {
					job := setupJob(t, v.objs)
					checkSetupJob(t, v.objs, job, bridge)
					pods[job.Name] = job.Spec.Template.Spec
				}
				checkTemporalEnv(t, v, pods)
				checkTrustedCA(t, v.objs, worker)
				if v.namespace != systemNamespace {
					require.NotContains(t, string(v.raw), systemNamespace, "re-namespaced, no object names %s", systemNamespace)
				}
				if len(v.features) == 0 || slices.Equal(v.features, []string{"monitoring", "route"}) {
					// The overlays change no Deployment: what the program test runs is
					// what each overlay deploys. The receiver's differs on OpenShift in
					// where it reads the service CA (checkReceiverCertificate), and only
					// there.
					receiverSpec := receiver.Spec.DeepCopy()
					if v.overlay == "openshift" {
						receiverSpec = nil
					}
					raw, err := json.Marshal([]any{bridge.Spec, worker.Spec})
					require.NoError(t, err)
					baseDeployments = append(baseDeployments, raw)
					if receiverSpec != nil {
						raw, err := json.Marshal(receiverSpec)
						require.NoError(t, err)
						receiverDeployments = append(receiverDeployments, raw)
					}
				}
			})
		}
		require.GreaterOrEqual(t, len(baseDeployments), 3, "the base and both overlays were built")
		for _, d := range baseDeployments[1:] {
			require.JSONEq(t, string(baseDeployments[0]), string(d), "every overlay deploys the base's Deployments")
		}
		require.Len(t, receiverDeployments, 2, "the base and the cert-manager overlay")
		require.JSONEq(t, string(receiverDeployments[0]), string(receiverDeployments[1]), "the cert-manager overlay deploys the base's receiver")
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
			// deploy/base appends the "-new-keys" twins (checkWebhooks compares them).
			twins := 0
			for _, h := range have {
				if strings.HasSuffix(h.(map[string]any)["name"].(string), "-new-keys.nudgeflow.konflux-ci.dev") {
					twins++
				}
			}
			require.Len(t, have, len(want)+twins)
			for i := range want {
				w, h := want[i].(map[string]any), have[i].(map[string]any)
				for k := range w {
					// deploy/base widens the handwritten NudgeConfig webhook's
					// namespaceSelector to every webhook's (checkSkipsSystemNamespaces).
					if k != "clientConfig" && k != "namespaceSelector" {
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

var clusterScoped = []string{"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "PriorityClass",
	"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}

func checkNamespaces(t *testing.T, v variant) {
	require.NotNil(t, v.objs.find("Namespace", v.namespace))
	for _, o := range v.objs {
		if slices.Contains(clusterScoped, o.GetKind()) {
			require.Empty(t, o.GetNamespace(), "%s %s is cluster-scoped", o.GetKind(), o.GetName())
			continue
		}
		require.Equal(t, v.namespace, o.GetNamespace(), "%s %s lives in %s", o.GetKind(), o.GetName(), v.namespace)
	}
	// Every role binding's ServiceAccount subject is one of nudgeflow's, in its
	// namespace; but the one that lets kube-prometheus's Prometheus discover the
	// targets (checkDiscoveryRole).
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		for _, o := range v.objs.ofKind(kind) {
			if kind == "RoleBinding" && o.GetName() == discoveryBinding {
				continue
			}
			b := get[rbacv1.RoleBinding](t, v.objs, kind, o.GetName())
			for _, s := range b.Subjects {
				require.Equal(t, "ServiceAccount", s.Kind)
				require.Equal(t, v.namespace, s.Namespace, "%s %s binds ServiceAccount %s of nudgeflow's namespace", kind, b.Name, s.Name)
				require.NotNil(t, v.objs.find("ServiceAccount", s.Name), "%s %s binds a shipped ServiceAccount", kind, b.Name)
			}
		}
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

func checkDeployment(t *testing.T, v variant, d *appsv1.Deployment) {
	m := v.objs
	spec := d.Spec.Template.Spec
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	require.Regexp(t, `^quay\.io/konflux-ci/nudgeflow@sha256:[0-9a-f]{64}$`, c.Image, "the image transformer names the image, by digest")
	require.Equal(t, []string{imageBinary}, c.Command, "the Containerfile installs the binary there")
	require.True(t, labels.SelectorFromSet(d.Spec.Selector.MatchLabels).Matches(labels.Set(d.Spec.Template.Labels)))
	require.GreaterOrEqual(t, *d.Spec.Replicas, int32(2), "%s survives a node drain", d.Name)
	require.NotNil(t, m.find("ServiceAccount", spec.ServiceAccountName), "ServiceAccount %s", spec.ServiceAccountName)

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

// checkBoundToItsRole: d's ServiceAccount is bound to the role generated for it.
func checkBoundToItsRole(t *testing.T, v variant, d *appsv1.Deployment) {
	m := v.objs
	spec := d.Spec.Template.Spec
	role := m.find("ClusterRole", d.Name)
	require.NotNil(t, role, "the generated ClusterRole %s", d.Name)
	bound := false
	for _, o := range m.ofKind("ClusterRoleBinding") {
		b := get[rbacv1.ClusterRoleBinding](t, m, "ClusterRoleBinding", o.GetName())
		for _, s := range b.Subjects {
			if b.RoleRef.Name == d.Name && s.Kind == "ServiceAccount" && s.Name == spec.ServiceAccountName && s.Namespace == v.namespace {
				bound = true
			}
		}
	}
	require.True(t, bound, "%s's ServiceAccount is bound to ClusterRole %s", d.Name, d.Name)
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

// checkWebhooks: every webhook's clientConfig resolves to the bridge's container
// port through the Service in nudgeflow's namespace, and the PipelineRun webhooks
// are scoped (pipelineRunWebhookScopes).
func checkWebhooks(t *testing.T, v variant, bridge *appsv1.Deployment, besideIS bool) {
	m := v.objs
	c := bridge.Spec.Template.Spec.Containers[0]
	port, ok := argValue(c.Args, "webhook-port")
	require.True(t, ok, "the bridge's --webhook-port")
	count := 0
	byName := map[string]map[string]any{}
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		for _, o := range m.ofKind(kind) {
			hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			for _, h := range hooks {
				count++
				byName[h.(map[string]any)["name"].(string)] = h.(map[string]any)
				svc, _, _ := unstructured.NestedMap(h.(map[string]any), "clientConfig", "service")
				require.Equal(t, v.namespace, svc["namespace"], "%s %s", kind, o.GetName())
				checkWebhookScope(t, v, kind, h.(map[string]any))
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
	// deploy/base adds a twin of each PipelineRun webhook for ADR 69's new label
	// (pipelineRunWebhookScopes): the same webhook in all but its name and selector.
	for name, twin := range byName {
		original, ok := strings.CutSuffix(name, "-new-keys.nudgeflow.konflux-ci.dev")
		if !ok {
			continue
		}
		want++
		orig := byName[original+".nudgeflow.konflux-ci.dev"]
		require.NotNil(t, orig, "%s twins an existing webhook", name)
		strip := func(h map[string]any) map[string]any {
			c := runtime.DeepCopyJSON(h)
			delete(c, "name")
			delete(c, "objectSelector")
			return c
		}
		require.Equal(t, strip(orig), strip(twin), "%s is %s for the new label", name, original)
	}
	require.Equal(t, want, count, "every webhook of deploy/webhooks is deployed, with its new-keys twin")
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
	for _, o := range budgets {
		pdb := get[policyv1.PodDisruptionBudget](t, m, "PodDisruptionBudget", o.GetName())
		require.NotNil(t, pdb.Spec.UnhealthyPodEvictionPolicy, "PodDisruptionBudget %s", pdb.Name)
		require.Equal(t, policyv1.AlwaysAllow, *pdb.Spec.UnhealthyPodEvictionPolicy,
			"PodDisruptionBudget %s: a pod not ready during an outage never blocks a node drain", pdb.Name)
	}
}

// webhookCertSecret is the Secret mounted where the bridge reads its serving certificate.
func webhookCertSecret(t *testing.T, bridge *appsv1.Deployment) string {
	c := bridge.Spec.Template.Spec.Containers[0]
	dir, ok := argValue(c.Args, "webhook-cert-dir")
	require.True(t, ok)
	return secretMountedAt(t, bridge, dir)
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
		cert, dns := certificateOf(t, v.objs, secret)
		require.Contains(t, dns, fmt.Sprintf("%s.%s.svc", svc.Name, v.namespace), "the name the API server calls")
		for _, name := range dns {
			require.True(t, strings.HasPrefix(name, svc.Name+"."+v.namespace+".svc"), "DNS name %s is the webhook Service's in %s", name, v.namespace)
		}
		ca := checkCAChain(t, v, cert)
		for _, h := range hooks {
			require.Equal(t, v.namespace+"/"+ca.GetName(), h.GetAnnotations()["cert-manager.io/inject-ca-from"], "%s %s gets the CA, not a leaf", h.GetKind(), h.GetName())
		}
	default:
		require.Empty(t, svc.Annotations, "the base leaves the certificate to an overlay")
	}
}

// certificateOf is the cert-manager Certificate that writes Secret secret, and its
// DNS names.
func certificateOf(t *testing.T, m manifests, secret string) (*unstructured.Unstructured, []string) {
	t.Helper()
	for _, c := range m.ofKind("Certificate") {
		if name, _, _ := unstructured.NestedString(c.Object, "spec", "secretName"); name == secret {
			dns, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "dnsNames")
			return c, dns
		}
	}
	t.Fatalf("no Certificate writes Secret %s", secret)
	return nil, nil
}

func checkMonitoring(t *testing.T, v variant) {
	m := v.objs
	var scraped []string
	for _, mon := range m.ofKind("ServiceMonitor") {
		sel, _, _ := unstructured.NestedStringMap(mon.Object, "spec", "selector", "matchLabels")
		endpoints, _, _ := unstructured.NestedSlice(mon.Object, "spec", "endpoints")
		require.Len(t, endpoints, 1)
		port := endpoints[0].(map[string]any)["port"]
		var selected []string
		for _, o := range m.ofKind("Service") {
			s := m.service(t, o.GetName())
			if labels.SelectorFromSet(sel).Matches(labels.Set(s.Labels)) {
				require.True(t, slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == port }), "Service %s has port %s", s.Name, port)
				selected = append(selected, s.Name)
			}
		}
		require.Len(t, selected, 1, "ServiceMonitor %s scrapes one process's Service", mon.GetName())
		scraped = append(scraped, selected...)
	}
	require.ElementsMatch(t, []string{"nudgeflow-bridge-metrics", "nudgeflow-worker-metrics", "nudgeflow-receiver-metrics"}, scraped)
	// The metrics Services reach /metrics: each process's --metrics-bind-address,
	// served over HTTPS with a certificate the ServiceMonitor trusts, to the token
	// of a ServiceAccount bound to nudgeflow-metrics-reader.
	checkScrapeTrust(t, v)
	for svc, flag := range map[string]string{"nudgeflow-bridge-metrics": "metrics-bind-address", "nudgeflow-worker-metrics": "metrics-bind-address",
		"nudgeflow-receiver-metrics": "metrics-bind-address"} {
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

var (
	helpOnce sync.Once
	helpText string
)

// checkTemporalEnv: every Temporal variable a pod of nudgeflow (the Deployments,
// the setup Job) sets is one the binary reads (its --help names each), and each
// connects as its variant promises: mutual TLS with the certificate of the Secret
// nudgeflow-temporal-tls by default (the Secret required, so a pod never starts
// without it), an API key from a mounted Secret with components/temporal-cloud,
// plaintext only with components/insecure-temporal, which says so explicitly
// (TEMPORAL_TLS=false). No other pod mounts the client certificate.
func checkTemporalEnv(t *testing.T, v variant, pods map[string]corev1.PodSpec) {
	helpOnce.Do(func() {
		bin := nudgeflowBinary(t)
		for _, sub := range [][]string{{"worker"}, {"bridge"}, {"temporal", "setup"}} {
			out, err := exec.Command(bin, append(sub, "--help")...).CombinedOutput()
			require.NoError(t, err, "%s", out)
			helpText += string(out)
		}
	})
	certPaths := []string{"TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_SERVER_CA_CERT_PATH"}
	for name, spec := range pods {
		c := spec.Containers[0]
		// The environment as the kubelet builds it: envFrom, then env over it.
		env := map[string]string{}
		for k, val := range temporalConfigMap(t, v.objs, c).Data {
			env[k] = val
		}
		for _, e := range c.Env {
			require.False(t, strings.HasPrefix(e.Name, "TEMPORAL_") && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil,
				"%s: no Temporal credential in an environment variable (%s)", name, e.Name)
			env[e.Name] = e.Value
		}
		for k := range env {
			if strings.HasPrefix(k, "TEMPORAL_") {
				require.Contains(t, helpText, "$"+k, "%s sets %s, which nudgeflow reads", name, k)
			}
		}
		// The volume a path is in, and that volume's Secret.
		secretOf := func(path string) *corev1.SecretVolumeSource {
			for _, vm := range c.VolumeMounts {
				if strings.HasPrefix(path, vm.MountPath+"/") {
					for _, vol := range spec.Volumes {
						if vol.Name == vm.Name {
							return vol.Secret
						}
					}
				}
			}
			return nil
		}
		tlsVolume := func() *corev1.SecretVolumeSource {
			for _, vol := range spec.Volumes {
				if vol.Secret != nil && vol.Secret.SecretName == temporalTLSSecretName {
					return vol.Secret
				}
			}
			return nil
		}()
		require.NotNil(t, tlsVolume, "%s mounts Secret %s", name, temporalTLSSecretName)
		require.NotContains(t, env, "TEMPORAL_API_KEY", "%s: an API key is read from a file, never a literal", name)
		switch {
		case slices.Contains(v.features, insecureTemporal):
			require.Equal(t, "false", env["TEMPORAL_TLS"], "%s opts out of TLS explicitly", name)
			for _, k := range certPaths {
				require.Empty(t, env[k], "%s: %s", name, k)
			}
			require.Empty(t, env["TEMPORAL_API_KEY_FILE"], name)
			require.True(t, ptr.Deref(tlsVolume.Optional, false), "%s starts without the client certificate", name)
		case slices.Contains(v.features, "cloud"):
			require.NotEqual(t, "false", env["TEMPORAL_TLS"], "%s: TLS with the API key", name)
			for _, k := range certPaths {
				require.Empty(t, env[k], "%s: %s (Temporal Cloud: the API key, the system's roots)", name, k)
			}
			key := secretOf(env["TEMPORAL_API_KEY_FILE"])
			require.NotNil(t, key, "%s reads the API key from a mounted Secret, re-read on rotation", name)
			require.Equal(t, "nudgeflow-temporal-api-key", key.SecretName, name)
			require.True(t, ptr.Deref(tlsVolume.Optional, false), "%s starts without the client certificate", name)
		default:
			require.Equal(t, "true", env["TEMPORAL_TLS"], "%s connects with TLS", name)
			for _, k := range certPaths {
				s := secretOf(env[k])
				require.NotNil(t, s, "%s: %s=%q is in a mounted Secret", name, k, env[k])
				require.Equal(t, temporalTLSSecretName, s.SecretName, "%s: %s", name, k)
			}
			require.False(t, ptr.Deref(tlsVolume.Optional, false), "%s does not start without its client certificate", name)
			require.Empty(t, env["TEMPORAL_API_KEY_FILE"], name)
		}
	}
	for _, kind := range []string{"Deployment", "Job"} {
		for _, o := range v.objs.ofKind(kind) {
			if _, ok := pods[o.GetName()]; ok {
				continue
			}
			require.NotContains(t, string(mustJSON(t, o.Object)), temporalTLSSecretName,
				"%s %s does not talk to Temporal and does not mount its client certificate", kind, o.GetName())
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return raw
}

// checkWorkerWrites: the ValidatingAdmissionPolicy nudgeflow-worker-writes is bound
// (Deny) and matches the worker's ServiceAccount in the variant's namespace, whose
// writes it keeps out of that namespace too; what it admits and refuses is shown
// on the API server (TestWorkerWritesAreBoundByThePolicy).
func checkWorkerWrites(t *testing.T, v variant, worker *appsv1.Deployment) {
	policy := get[admissionregistrationv1.ValidatingAdmissionPolicy](t, v.objs, "ValidatingAdmissionPolicy", "nudgeflow-worker-writes")
	binding := get[admissionregistrationv1.ValidatingAdmissionPolicyBinding](t, v.objs, "ValidatingAdmissionPolicyBinding", "nudgeflow-worker-writes")
	require.Equal(t, policy.Name, binding.Spec.PolicyName)
	require.Equal(t, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}, binding.Spec.ValidationActions)
	require.Equal(t, admissionregistrationv1.Fail, *policy.Spec.FailurePolicy)
	require.Len(t, policy.Spec.MatchConditions, 1)
	require.Equal(t, fmt.Sprintf("request.userInfo.username == 'system:serviceaccount:%s:%s'", v.namespace, worker.Spec.Template.Spec.ServiceAccountName),
		policy.Spec.MatchConditions[0].Expression, "the policy binds the worker's ServiceAccount in the namespace it is installed in")
	require.Contains(t, policy.Spec.Validations[0].Expression, "'"+v.namespace+"'", "nothing in nudgeflow's own namespace")
	require.NotContains(t, string(mustJSON(t, policy)), "$(", "every var is resolved")
}

// checkUserRoles: the ClusterRoles nudgeflow-view and nudgeflow-edit aggregate into
// the user-facing view, edit and admin roles, name every kind of deploy/crds (so a
// new kind cannot ship without them), and never a subresource: tenants do not write
// status.
func checkUserRoles(t *testing.T, m manifests) {
	kinds := map[string][]string{} // group → plural names nudgeflow serves
	for _, o := range m.ofKind("CustomResourceDefinition") {
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(o.Object, "spec", "names", "plural")
		kinds[group] = append(kinds[group], plural)
	}
	for name, want := range map[string]struct {
		aggregateTo []string
		verbs       []string
	}{
		"nudgeflow-view": {[]string{"view", "edit", "admin"}, []string{"get", "list", "watch"}},
		"nudgeflow-edit": {[]string{"edit", "admin"}, []string{"create", "update", "patch", "delete", "deletecollection"}},
	} {
		role := get[rbacv1.ClusterRole](t, m, "ClusterRole", name)
		for _, to := range want.aggregateTo {
			require.Equal(t, "true", role.Labels["rbac.authorization.k8s.io/aggregate-to-"+to], "%s aggregates to %s", name, to)
		}
		granted := map[string][]string{}
		for _, r := range role.Rules {
			require.ElementsMatch(t, want.verbs, r.Verbs, "%s", name)
			for _, res := range r.Resources {
				require.NotContains(t, res, "/", "%s grants no subresource (status is nudgeflow's)", name)
				for _, g := range r.APIGroups {
					granted[g] = append(granted[g], res)
				}
			}
		}
		for group, plurals := range kinds {
			for _, plural := range plurals {
				require.Contains(t, granted[group], plural, "%s grants %s.%s", name, plural, group)
			}
		}
	}
}

// temporalConfigMap is the ConfigMap nudgeflow-temporal a container reads its
// Temporal variables from: generated, so its name carries a hash of its content
// (a change rolls the pods).
func temporalConfigMap(t *testing.T, m manifests, c corev1.Container) *corev1.ConfigMap {
	t.Helper()
	var found *corev1.ConfigMap
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef != nil && strings.HasPrefix(ef.ConfigMapRef.Name, "nudgeflow-temporal-") {
			require.Nil(t, found, "%s reads one Temporal ConfigMap", c.Name)
			found = get[corev1.ConfigMap](t, m, "ConfigMap", ef.ConfigMapRef.Name)
		}
	}
	require.NotNil(t, found, "%s reads the ConfigMap nudgeflow-temporal-<hash>", c.Name)
	require.Regexp(t, `^nudgeflow-temporal-[a-z0-9]{10}$`, found.Name, "generated with a content hash")
	return found
}

// pipelineRunWebhookScopes: the label each PipelineRun webhook's handler acts on
// (bridge/changegroupcontroller's interception: nudge runs; bridge/builds' routing: build
// runs), in both of ADR 69's forms: each webhook's "-new-keys" twin takes the runs
// labelled with the konflux-ci.dev key and not the appstudio one (konflux.Key.Selectors).
var pipelineRunWebhookScopes = func() map[string]metav1.LabelSelector {
	scopes := map[string]metav1.LabelSelector{}
	for name, k := range map[string]struct {
		key   konflux.Key
		value string
	}{
		"nudge-pipelinerun": {konflux.NudgeTypeKey, konflux.NudgeTypeValue},
		"build-routing":     {konflux.PipelineTypeKey, konflux.PipelineTypeBuild},
	} {
		scopes[name+".nudgeflow.konflux-ci.dev"] = metav1.LabelSelector{MatchLabels: map[string]string{k.key.Old: k.value}}
		scopes[name+"-new-keys.nudgeflow.konflux-ci.dev"] = metav1.LabelSelector{MatchLabels: map[string]string{k.key.New: k.value},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: k.key.Old, Operator: metav1.LabelSelectorOpNotIn, Values: []string{k.value}}}}
	}
	return scopes
}()

// checkWebhookScope: a webhook on PipelineRuns is called only for the runs its
// handler acts on, and never in the system namespaces or nudgeflow's own.
func checkWebhookScope(t *testing.T, v variant, kind string, hook map[string]any) {
	name := hook["name"].(string)
	rules, _, _ := unstructured.NestedSlice(hook, "rules")
	onPipelineRuns := false
	for _, r := range rules {
		resources, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
		onPipelineRuns = onPipelineRuns || slices.Contains(resources, "pipelineruns")
	}
	if !onPipelineRuns {
		checkFailClosedWebhook(t, v, name, hook)
		return
	}
	want, ok := pipelineRunWebhookScopes[name]
	require.True(t, ok, "%s %s on PipelineRuns has a scope in pipelineRunWebhookScopes", kind, name)
	var h admissionregistrationv1.MutatingWebhook
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(hook, &h))
	require.NotNil(t, h.ObjectSelector, "%s is scoped by labels", name)
	require.Equal(t, want, *h.ObjectSelector, "%s is called for its runs only", name)
	checkSkipsSystemNamespaces(t, v, name, h.NamespaceSelector)
}

// checkSkipsSystemNamespaces: a webhook is never called in the platform's
// namespaces nor in nudgeflow's own, and is called in a tenant's.
func checkSkipsSystemNamespaces(t *testing.T, v variant, name string, nsSel *metav1.LabelSelector) {
	t.Helper()
	require.NotNil(t, nsSel, "%s skips system namespaces", name)
	sel, err := metav1.LabelSelectorAsSelector(nsSel)
	require.NoError(t, err)
	for _, ns := range []string{"kube-system", "kube-public", "kube-node-lease", "openshift", v.namespace} {
		require.False(t, sel.Matches(labels.Set{corev1.LabelMetadataName: ns}), "%s is not called in %s", name, ns)
	}
	require.True(t, sel.Matches(labels.Set{corev1.LabelMetadataName: "tenant-a"}), "%s is called in tenant namespaces", name)
}

// endOfLifeConditions are the matchConditions of every webhook that fails closed
// (deploy/webhooks/kustomization.yaml): called for a CREATE or a spec change of an
// object not being deleted, never for the writes that end its life (a finalizer
// removed), which must pass while the bridge is away (TestTenantNamespaceDeletionWithTheBridgeAway).
var endOfLifeConditions = []admissionregistrationv1.MatchCondition{
	{Name: "not-being-deleted", Expression: "!has(object.metadata.deletionTimestamp)"},
	{Name: "create-or-spec-change", Expression: "request.operation != 'UPDATE' || !has(oldObject.spec) || !has(object.spec) || object.spec != oldObject.spec"},
}

// checkFailClosedWebhook: a webhook that refuses while the bridge is away
// (failurePolicy Fail) is called only when it must be: outside system namespaces,
// and never for the end of an object's life.
func checkFailClosedWebhook(t *testing.T, v variant, name string, hook map[string]any) {
	t.Helper()
	var h admissionregistrationv1.ValidatingWebhook
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(hook, &h))
	if ptr.Deref(h.FailurePolicy, admissionregistrationv1.Fail) != admissionregistrationv1.Fail {
		return
	}
	checkSkipsSystemNamespaces(t, v, name, h.NamespaceSelector)
	require.Equal(t, endOfLifeConditions, h.MatchConditions, "%s is not called for a finalizer's removal", name)
	for _, r := range h.Rules {
		require.NotContains(t, r.Operations, admissionregistrationv1.Delete, "%s is not called for a delete", name)
	}
}

var digestRef = regexp.MustCompile(`^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)+(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?@sha256:[0-9a-f]{64}$`)

// checkImages: every image any object runs is pinned by digest (never latest, never
// a bare name a node resolves to latest).
func checkImages(t *testing.T, m manifests) {
	n := 0
	for _, o := range m {
		walkImages(o.Object, func(image string) {
			n++
			require.NotContains(t, image, ":latest", "%s %s", o.GetKind(), o.GetName())
			require.Regexp(t, digestRef, image, "%s %s runs an image pinned by digest", o.GetKind(), o.GetName())
		})
	}
	require.GreaterOrEqual(t, n, 2, "the bridge and the worker (and the setup Job) run an image")
}

// walkImages calls f with every string under an "image" key of a container list.
func walkImages(v any, f func(string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			if s, ok := c.(string); ok && k == "image" {
				if _, isContainer := v["name"]; isContainer {
					f(s)
				}
				continue
			}
			walkImages(c, f)
		}
	case []any:
		for _, c := range v {
			walkImages(c, f)
		}
	}
}

// checkNetworkPolicies: every port a Deployment's container declares is open to
// ingress by a NetworkPolicy selecting its pods, and no policy opens a port the
// pods do not declare; the metrics ports are open only to the monitoring
// namespaces; the admission webhook port has a rule of its own, for the API server:
// the host-network policy group on OpenShift, the control plane's CIDR with
// components/webhook-from-control-plane, open in the base and the cert-manager
// overlay (deploy/base/networkpolicy.yaml says why); egress is not restricted.
func checkNetworkPolicies(t *testing.T, v variant, deployments []*appsv1.Deployment) {
	m := v.objs
	policies := m.ofKind("NetworkPolicy")
	selects := func(np *networkingv1.NetworkPolicy, d *appsv1.Deployment) bool {
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		require.NoError(t, err)
		return sel.Matches(labels.Set(d.Spec.Template.Labels))
	}
	for _, o := range policies {
		np := get[networkingv1.NetworkPolicy](t, m, "NetworkPolicy", o.GetName())
		require.True(t, slices.ContainsFunc(deployments, func(d *appsv1.Deployment) bool { return selects(np, d) }),
			"NetworkPolicy %s selects a Deployment's pods", np.Name)
	}
	for _, d := range deployments {
		c := d.Spec.Template.Spec.Containers[0]
		var selecting []*networkingv1.NetworkPolicy
		for _, o := range policies {
			if np := get[networkingv1.NetworkPolicy](t, m, "NetworkPolicy", o.GetName()); selects(np, d) {
				selecting = append(selecting, np)
			}
		}
		require.NotEmpty(t, selecting, "a NetworkPolicy selects %s's pods", d.Name)
		for _, np := range selecting {
			if d.Name == "nudgeflow-receiver" {
				checkReceiverEgress(t, m, np)
			} else {
				require.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes, "%s restricts ingress only", np.Name)
			}
			for _, rule := range np.Spec.Ingress {
				require.NotEmpty(t, rule.Ports, "%s: every rule names its ports", np.Name)
				for _, p := range rule.Ports {
					_, declared := containerPort(c, *p.Port)
					require.True(t, declared, "%s opens port %s, which %s declares", np.Name, p.Port.String(), d.Name)
				}
			}
		}
		for _, cp := range c.Ports {
			var rules []networkingv1.NetworkPolicyIngressRule
			for _, np := range selecting {
				for _, rule := range np.Spec.Ingress {
					for _, p := range rule.Ports {
						if q, _ := containerPort(c, *p.Port); q.ContainerPort == cp.ContainerPort {
							rules = append(rules, rule)
						}
					}
				}
			}
			require.NotEmpty(t, rules, "%s's port %s (%d) is open to ingress", d.Name, cp.Name, cp.ContainerPort)
			switch cp.Name {
			case "metrics":
				require.Len(t, rules, 1, "%s's metrics port has one rule", d.Name)
				require.Len(t, rules[0].From, 1, "open to the monitoring namespaces only")
				require.NotNil(t, rules[0].From[0].NamespaceSelector, "open to the monitoring namespaces only")
			case "webhook":
				// The receiver's calls of the bridge's API: from its pods alone.
				rules = slices.DeleteFunc(rules, func(r networkingv1.NetworkPolicyIngressRule) bool {
					return len(r.From) == 1 && r.From[0].PodSelector != nil && r.From[0].NamespaceSelector == nil &&
						r.From[0].PodSelector.MatchLabels["app.kubernetes.io/component"] == "receiver"
				})
				require.Len(t, rules, 1, "%s's admission webhook port has one rule for the API server", d.Name)
				require.Len(t, rules[0].Ports, 1, "the webhook port's rule opens no other port")
				from := rules[0].From
				switch {
				case v.overlay == "openshift":
					require.Equal(t, []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
						MatchLabels: map[string]string{"policy-group.network.openshift.io/host-network": ""}}}}, from,
						"on OpenShift the API server's calls come from the host network")
				case slices.Contains(v.features, controlPlaneCIDR):
					require.Len(t, from, 1)
					require.NotNil(t, from[0].IPBlock, "the control plane's addresses")
					require.Nil(t, from[0].PodSelector)
					require.Nil(t, from[0].NamespaceSelector)
				default:
					require.Empty(t, from, "open where the API server's address is not known (the base says why)")
				}
			}
		}
	}
}

// checkForgeReceiverExposure: the OpenShift Route and the example Ingress reach
// the forge webhook receiver's Service on its named port, re-encrypting to its
// HTTPS.
func checkForgeReceiverExposure(t *testing.T, v variant) {
	svc := v.objs.service(t, "nudgeflow-receiver")
	require.Nil(t, v.objs.find("Service", "nudgeflow-bridge-forge-webhook"), "no Service reaches the bridge from the forges")
	route := v.objs.find("Route", svc.Name)
	require.Equal(t, slices.Contains(v.features, "route"), route != nil, "the OpenShift overlay ships the Route")
	if route != nil {
		to, _, _ := unstructured.NestedString(route.Object, "spec", "to", "name")
		port, _, _ := unstructured.NestedString(route.Object, "spec", "port", "targetPort")
		termination, _, _ := unstructured.NestedString(route.Object, "spec", "tls", "termination")
		require.Equal(t, svc.Name, to)
		require.Equal(t, svc.Spec.Ports[0].Name, port)
		require.Equal(t, "reencrypt", termination, "the router re-encrypts to the receiver's certificate")
	}
	ing := v.objs.find("Ingress", svc.Name)
	require.Equal(t, slices.Contains(v.features, "ingress"), ing != nil, "the Ingress is an opt-in component")
	if ing != nil {
		i := get[networkingv1.Ingress](t, v.objs, "Ingress", svc.Name)
		backend := i.Spec.Rules[0].HTTP.Paths[0].Backend.Service
		require.Equal(t, svc.Name, backend.Name)
		require.Equal(t, svc.Spec.Ports[0].Name, backend.Port.Name)
		require.Equal(t, "HTTPS", i.Annotations["nginx.ingress.kubernetes.io/backend-protocol"], "the controller re-encrypts to the receiver")
	}
}

// setupJob is the Job that runs `nudgeflow temporal setup`.
func setupJob(t *testing.T, m manifests) *batchv1.Job {
	return get[batchv1.Job](t, m, "Job", "nudgeflow-temporal-setup")
}

// checkSetupJob: the setup Job runs the image's binary with the Temporal
// ConfigMap the Deployments read, as a GitOps hook that cleans up after itself,
// under the restricted pod security profile, with a ServiceAccount that has no
// role and no token.
func checkSetupJob(t *testing.T, m manifests, job *batchv1.Job, bridge *appsv1.Deployment) {
	spec := job.Spec.Template.Spec
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	require.Equal(t, []string{imageBinary}, c.Command)
	require.Equal(t, []string{"temporal", "setup", "--create-namespace"}, c.Args)
	require.Equal(t, temporalConfigMap(t, m, bridge.Spec.Template.Spec.Containers[0]).Name, temporalConfigMap(t, m, c).Name,
		"the Job prepares the Temporal namespace the processes use")
	require.Equal(t, bridge.Spec.Template.Spec.Containers[0].Image, c.Image)
	require.Equal(t, "Sync", job.Annotations["argocd.argoproj.io/hook"], "Argo CD runs it on every sync")
	require.NotNil(t, job.Spec.TTLSecondsAfterFinished, "a finished Job goes away")
	require.Equal(t, corev1.RestartPolicyOnFailure, spec.RestartPolicy)
	require.True(t, *spec.SecurityContext.RunAsNonRoot)
	require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	require.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
	require.False(t, c.Resources.Limits.Memory().IsZero())

	require.NotNil(t, m.find("ServiceAccount", spec.ServiceAccountName))
	require.False(t, *spec.AutomountServiceAccountToken, "it talks to Temporal only: no Kubernetes token")
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		for _, o := range m.ofKind(kind) {
			b := get[rbacv1.RoleBinding](t, m, kind, o.GetName())
			for _, s := range b.Subjects {
				require.NotEqual(t, spec.ServiceAccountName, s.Name, "%s %s binds nothing to the setup Job", kind, b.Name)
			}
		}
	}
	_, ok := job.Spec.Template.Labels["app.kubernetes.io/component"]
	require.True(t, ok)
	require.NotEqual(t, bridge.Spec.Template.Labels["app.kubernetes.io/component"], job.Spec.Template.Labels["app.kubernetes.io/component"],
		"no Service or budget of the bridge selects the Job's pod")
}

var (
	applyOnce sync.Once
	applyErr  error
)

// applied installs the cert-manager overlay for real (install), once for the
// package, so the Namespace, ServiceAccounts, roles and bindings exist for the
// program test.
func applied(t *testing.T) {
	applyOnce.Do(func() { applyErr = install(t, findVariant(t, variants(t), "cert-manager")) })
	require.NoError(t, applyErr)
}

// install applies a variant for real, except its admission webhook configurations
// (the API server cannot reach a Service in this world: envtest registers the same
// webhooks at a local address instead) and the setup Job (a Job's pod template is
// immutable: a stored Job would refuse the dry run of every variant that changes
// it, where a cluster has deleted the finished Job after its TTL or recreates it as
// a hook; TestTemporalSetup runs it). Cluster-scoped objects are shared by every
// variant (a ClusterRoleBinding's subjects name one namespace): installing another
// namespace's variant rebinds them there until the shipped one is installed again.
func install(t *testing.T, v variant) error {
	objs := v.objs.without("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Job")
	// kubectl's own field manager, as an operator's `kubectl apply --server-side`
	// (TestInstallUpgradeUninstallAsDocumented) uses: that apply then finds its own
	// fields on the cluster-wide objects every install shares.
	out, err := kubectl(t, objs.yaml(t), "apply", "--server-side", "--force-conflicts", "-f", "-")
	if err != nil {
		return fmt.Errorf("kubectl apply: %v: %s", err, out)
	}
	return nil
}

// The real API server accepts every object of every variant, as shipped and
// re-namespaced (server-side dry run: admission, schemas of the CRDs, RBAC
// references), as `kubectl apply -k` would send them.
func TestServerAcceptsEveryVariant(t *testing.T) {
	applied(t) // the namespace must exist for a dry run of what lives in it
	for _, set := range [][]variant{variants(t), renamespacedVariants(t)} {
		for _, v := range set {
			t.Run(v.name, func(t *testing.T) {
				if v.namespace != systemNamespace {
					out, err := kubectl(t, v.objs.ofKind("Namespace").yaml(t), "apply", "--server-side", "-f", "-")
					require.NoError(t, err, "creating namespace %s: %s", v.namespace, out)
				}
				// The test world registered webhook configurations of its own (envtest's,
				// calling a local URL) under nudgeflow's names. An apply would merge the
				// two clientConfigs: a replace checks nudgeflow's object as it would be
				// stored instead.
				var applyObjs, replaceObjs manifests
				for _, o := range v.objs {
					if strings.HasSuffix(o.GetKind(), "WebhookConfiguration") && existsInCluster(t, o) {
						replaceObjs = append(replaceObjs, o)
					} else {
						applyObjs = append(applyObjs, o)
					}
				}
				out, err := kubectl(t, applyObjs.yaml(t), "apply", "--server-side", "--dry-run=server", "--force-conflicts", "-f", "-")
				require.NoError(t, err, "kubectl apply --server-side --dry-run=server:\n%s", out)
				if len(replaceObjs) > 0 {
					more, err := kubectl(t, replaceObjs.yaml(t), "replace", "--dry-run=server", "-f", "-")
					require.NoError(t, err, "kubectl replace --dry-run=server:\n%s", more)
					out += more
				}
				for _, want := range []string{
					"deployment.apps/nudgeflow-bridge",
					"deployment.apps/nudgeflow-receiver",
					"networkpolicy.networking.k8s.io/nudgeflow-receiver",
					"validatingwebhookconfiguration.admissionregistration.k8s.io/nudgeflow-changegroup",
					"mutatingwebhookconfiguration.admissionregistration.k8s.io/nudgeflow-pipelinerun-interception",
					"networkpolicy.networking.k8s.io/nudgeflow-bridge",
					"networkpolicy.networking.k8s.io/nudgeflow-worker",
					"networkpolicy.networking.k8s.io/nudgeflow-bridge-webhook",
					"poddisruptionbudget.policy/nudgeflow-worker",
					"validatingadmissionpolicy.admissionregistration.k8s.io/nudgeflow-worker-writes",
					"validatingadmissionpolicybinding.admissionregistration.k8s.io/nudgeflow-worker-writes",
					"validatingadmissionpolicy.admissionregistration.k8s.io/nudgeflow-bridge-deletes",
					"validatingadmissionpolicybinding.admissionregistration.k8s.io/nudgeflow-bridge-deletes",
					"clusterrole.rbac.authorization.k8s.io/nudgeflow-view",
					"clusterrole.rbac.authorization.k8s.io/nudgeflow-edit",
					"role.rbac.authorization.k8s.io/nudgeflow-worker",
				} {
					require.Contains(t, out, want)
				}
				if len(v.objs.ofKind("Certificate")) > 0 {
					require.Contains(t, out, "certificate.cert-manager.io/nudgeflow-receiver")
				}
				for kind, line := range map[string]string{
					"Job":            "job.batch/nudgeflow-temporal-setup",
					"Certificate":    "certificate.cert-manager.io/nudgeflow-bridge-webhook",
					"ServiceMonitor": "servicemonitor.monitoring.coreos.com/nudgeflow-bridge",
					"Route":          "route.route.openshift.io/nudgeflow-receiver",
					"Ingress":        "ingress.networking.k8s.io/nudgeflow-receiver",
				} {
					if len(v.objs.ofKind(kind)) > 0 {
						require.Contains(t, out, line)
					}
				}
			})
		}
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
// objects as the pinned kustomize, as the API server stores them. One difference
// is allowed: kubectl's kustomize (v5.7.1) predates ValidatingAdmissionPolicy v1
// and gives the policy and its binding the namespace, which the API server drops
// for a cluster-scoped kind (kubectl's output is applied, server-side dry run, to
// show it).
func TestKubectlKustomizeBuildsTheSame(t *testing.T) {
	applied(t) // the namespace exists for the dry run
	dirs := []string{deployDir("base"), deployDir("overlays", "openshift"), deployDir("overlays", "cert-manager")}
	// And re-namespaced: kubectl's kustomize resolves the namespace vars after an
	// enclosing kustomization's namespace as well.
	renamespaced := t.TempDir()
	rel, err := filepath.Rel(renamespaced, deployDir("overlays", "cert-manager"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(renamespaced, "kustomization.yaml"),
		[]byte("namespace: "+otherNamespace+"\nresources:\n  - "+rel+"\n"), 0o600))
	dirs = append(dirs, renamespaced)
	for _, dir := range dirs {
		want, _ := kustomize(t, dir)
		// stdout only: both print a deprecation warning for vars on stderr.
		cmd := exec.Command(tool(t, "kubectl"), "kustomize", dir)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		got, err := cmd.Output()
		require.NoError(t, err, "%s", stderr.String())
		objs := parseManifests(t, got)
		if dir == deployDir("overlays", "cert-manager") {
			// As kubectl applies it (the webhook configurations and the Job aside, as in
			// install: envtest registered its own webhooks under the same names).
			out, err := kubectl(t, objs.without("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Job").yaml(t),
				"apply", "--server-side", "--dry-run=server", "--force-conflicts", "-f", "-")
			require.NoError(t, err, "kubectl's own build applies:\n%s", out)
			require.Contains(t, out, "validatingadmissionpolicy.admissionregistration.k8s.io/nudgeflow-worker-writes")
		}
		for _, o := range objs {
			if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") {
				unstructured.RemoveNestedField(o.Object, "metadata", "namespace")
			}
		}
		require.Equal(t, parseManifests(t, want), objs, "kubectl kustomize %s", dir)
	}
}
