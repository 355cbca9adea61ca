package deploy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/bridge/receiverapi"
)

// mountOf is the volume mounted at the folder holding path, and path inside it.
func mountOf(t *testing.T, d *appsv1.Deployment, path string) (corev1.Volume, string) {
	t.Helper()
	spec := d.Spec.Template.Spec
	for _, vm := range spec.Containers[0].VolumeMounts {
		if rest, ok := strings.CutPrefix(path, vm.MountPath+"/"); ok {
			i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == vm.Name })
			require.GreaterOrEqual(t, i, 0)
			return spec.Volumes[i], rest
		}
	}
	t.Fatalf("%s: nothing is mounted where %s is", d.Name, path)
	return corev1.Volume{}, ""
}

func arg(t *testing.T, d *appsv1.Deployment, name string) string {
	t.Helper()
	v, ok := argValue(d.Spec.Template.Spec.Containers[0].Args, name)
	require.True(t, ok, "%s sets --%s", d.Name, name)
	return v
}

// checkReceiver: the forge webhook receiver holds the least an internet-facing pod
// can. No Kubernetes credential (no token mounted, no role bound, not even an
// empty one), nothing of Temporal (the Temporal components leave it alone), of
// the bridge's certificate Secret the CA alone, and one projected token for the
// bridge's audience. It calls the bridge through the webhook Service, whose
// receiver API serves its ServiceAccount; the bridge serves no forge port.
func checkReceiver(t *testing.T, v variant, receiver, br *appsv1.Deployment) {
	m := v.objs
	spec := receiver.Spec.Template.Spec
	c := spec.Containers[0]
	require.Equal(t, "receiver", c.Args[0])
	require.Equal(t, bridge.ReceiverServiceAccount, spec.ServiceAccountName, "the bridge serves this ServiceAccount (--receiver-identity's default)")
	require.False(t, ptr.Deref(spec.AutomountServiceAccountToken, true), "no Kubernetes token in the pod")
	sa := m.find("ServiceAccount", spec.ServiceAccountName)
	automount, found, _ := unstructured.NestedBool(sa.Object, "automountServiceAccountToken")
	require.True(t, found && !automount, "nor in any pod of its ServiceAccount")
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		for _, o := range m.ofKind(kind) {
			b := get[rbacv1.RoleBinding](t, m, kind, o.GetName())
			for _, s := range b.Subjects {
				require.NotEqual(t, spec.ServiceAccountName, s.Name, "%s %s binds nothing to the receiver", kind, b.Name)
			}
		}
	}
	require.Empty(t, c.EnvFrom, "no Temporal ConfigMap")
	for _, e := range c.Env {
		require.False(t, strings.HasPrefix(e.Name, "TEMPORAL_"), "the receiver has no business with Temporal: %s", e.Name)
	}

	// Each volume is one it needs, and no more of it than it needs.
	serving, _ := mountOf(t, receiver, arg(t, receiver, "tls-cert-dir")+"/tls.crt")
	shared, key := mountOf(t, receiver, arg(t, receiver, "webhook-secret-file"))
	require.Equal(t, "nudgeflow-forge-webhook", shared.Secret.SecretName)
	require.Equal(t, "secret", key)
	ca, caPath := mountOf(t, receiver, arg(t, receiver, "bridge-ca-file"))
	token, tokenPath := mountOf(t, receiver, arg(t, receiver, "bridge-token-file"))
	require.NotNil(t, token.Projected)
	require.Len(t, token.Projected.Sources, 1)
	src := token.Projected.Sources[0].ServiceAccountToken
	require.NotNil(t, src, "the projected volume holds a ServiceAccount token only")
	require.Equal(t, receiverapi.Audience, src.Audience, "for the bridge: the API server refuses it")
	require.Equal(t, tokenPath, src.Path)
	for _, vol := range spec.Volumes {
		switch vol.Name {
		case serving.Name, shared.Name, token.Name:
		case ca.Name:
			var items []corev1.KeyToPath
			switch {
			case vol.Secret != nil:
				items = vol.Secret.Items
			case vol.ConfigMap != nil:
				items = vol.ConfigMap.Items
			}
			require.Len(t, items, 1, "one key of the bridge's CA source")
			require.Equal(t, caPath, items[0].Path)
			if vol.Secret != nil {
				require.Equal(t, webhookCertSecret(t, br), vol.Secret.SecretName)
				require.Equal(t, "ca.crt", items[0].Key, "the CA, never the bridge's key")
			}
		default:
			t.Errorf("the receiver mounts %s, which it does not use", vol.Name)
		}
	}

	// The bridge, through its webhook Service on 443, which reaches --webhook-port.
	svc := m.service(t, "nudgeflow-bridge-webhook")
	require.Equal(t, "https://"+svc.Name+".$(POD_NAMESPACE).svc", arg(t, receiver, "bridge-url"))
	require.Equal(t, int32(443), svc.Spec.Ports[0].Port)
	require.True(t, labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(br.Spec.Template.Labels)))
	for _, a := range br.Spec.Template.Spec.Containers[0].Args {
		require.False(t, strings.HasPrefix(a, "--forge-webhook-bind-address") || strings.HasPrefix(a, "--forge-webhook-secret-file"),
			"the bridge serves no forge port: %s", a)
	}
	_, ok := containerPort(br.Spec.Template.Spec.Containers[0], intstr.FromString("forge-webhook"))
	require.False(t, ok, "the bridge declares no forge port")
	// The bridge reads the bound secrets by list and watch, in its namespace only.
	role := get[rbacv1.Role](t, m, "Role", "nudgeflow-bridge-webhook-secrets")
	require.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list", "watch"}}}, role.Rules)
}

// checkReceiverCertificate: the receiver serves its Service's certificate, issued
// by service-ca (OpenShift) or cert-manager, and trusts the bridge by the same
// overlay's CA: service-ca's injected bundle, or the ca.crt cert-manager writes.
func checkReceiverCertificate(t *testing.T, v variant, receiver, br *appsv1.Deployment) {
	serving, _ := mountOf(t, receiver, arg(t, receiver, "tls-cert-dir")+"/tls.crt")
	require.NotNil(t, serving.Secret)
	secret := serving.Secret.SecretName
	require.NotEqual(t, webhookCertSecret(t, br), secret, "the receiver never holds the bridge's key")
	svc := v.objs.service(t, "nudgeflow-receiver")
	ca, _ := mountOf(t, receiver, arg(t, receiver, "bridge-ca-file"))
	switch v.overlay {
	case "openshift":
		require.Equal(t, secret, svc.Annotations["service.beta.openshift.io/serving-cert-secret-name"],
			"service-ca writes the receiver Service's certificate into the Secret the receiver mounts")
		require.NotNil(t, ca.ConfigMap, "the service CA, injected into a ConfigMap")
		cm := v.objs.find("ConfigMap", ca.ConfigMap.Name)
		require.NotNil(t, cm)
		require.Equal(t, "true", cm.GetAnnotations()["service.beta.openshift.io/inject-cabundle"])
		require.NotContains(t, cm.Object, "data", "an apply never removes the injected bundle")
		require.Equal(t, "service-ca.crt", ca.ConfigMap.Items[0].Key)
	case "cert-manager":
		_, dns := certificateOf(t, v.objs, secret)
		require.Contains(t, dns, svc.Name+"."+v.namespace+".svc", "the name the Route or Ingress calls")
		require.NotNil(t, ca.Secret, "cert-manager's ca.crt of the bridge's Secret")
	default:
		require.Empty(t, svc.Annotations, "the base leaves the certificate to an overlay")
	}
}

// checkReceiverEgress: the receiver may call the bridge's webhook port and DNS,
// nothing else.
func checkReceiverEgress(t *testing.T, m manifests, np *networkingv1.NetworkPolicy) {
	require.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}, np.Spec.PolicyTypes)
	require.Len(t, np.Spec.Egress, 2)
	toBridge := np.Spec.Egress[0]
	require.Len(t, toBridge.To, 1)
	sel := labels.SelectorFromSet(toBridge.To[0].PodSelector.MatchLabels)
	require.True(t, sel.Matches(labels.Set(m.deployment(t, "nudgeflow-bridge").Spec.Template.Labels)), "to the bridge's pods")
	require.Equal(t, []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromString("webhook"))}}, toBridge.Ports)
	dns := np.Spec.Egress[1]
	require.Empty(t, dns.To, "DNS wherever the cluster runs it")
	for _, p := range dns.Ports {
		require.Equal(t, int32(53), p.Port.IntVal)
	}
}
