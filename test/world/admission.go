package world

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// admissionTimeout bounds the wait for the API server to apply (or drop) an
// admission configuration: its admission plugins read them through informers.
const admissionTimeout = 30 * time.Second

// DenyCreate makes the API server refuse (403 Forbidden, with message) every create
// of probe's kind in namespace ns, as a cluster's admission policy would: a
// ValidatingAdmissionPolicy bound to that namespace. It returns once a create of
// probe is refused; the test's cleanup removes the policy.
func (w *World) DenyCreate(t testing.TB, ns string, probe ctrlclient.Object, message string) {
	t.Helper()
	ctx := context.Background()
	gr := w.resourceOf(t, probe)
	name := "deny-" + gr.Resource + "-" + ns
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionRule(gr),
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: message, Reason: ptr.To(metav1.StatusReasonForbidden)}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: inNamespace(ns)},
		},
	}
	for _, obj := range []ctrlclient.Object{policy, binding} {
		if err := w.Kube.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, name, err)
		}
		t.Cleanup(func() { _ = w.Kube.Delete(context.Background(), obj) })
	}
	w.waitProbe(t, ns, probe, "refused by the policy", apierrors.IsForbidden)
}

// FailCreate makes every create of probe's kind in namespace ns fail as when a
// validating webhook the cluster requires is unreachable (failurePolicy Fail): an
// internal error, which a retry may get past. It returns once a create of probe
// fails so; the returned function removes the webhook and returns once creates
// work again (the test's cleanup removes it too).
func (w *World) FailCreate(t testing.TB, ns string, probe ctrlclient.Object) (restore func()) {
	t.Helper()
	ctx := context.Background()
	gr := w.resourceOf(t, probe)
	// A port nothing listens on: the API server's call is refused at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a closed port: %v", err)
	}
	url := fmt.Sprintf("https://%s/unreachable", l.Addr())
	_ = l.Close()
	hook := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "unreachable-" + gr.Resource + "-" + ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "unreachable.nudgeflow-test.konflux-ci.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules:                   []admissionregistrationv1.RuleWithOperations{admissionRule(gr)},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			NamespaceSelector:       inNamespace(ns),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if err := w.Kube.Create(ctx, hook); err != nil {
		t.Fatalf("creating the unreachable webhook: %v", err)
	}
	removed := false
	restore = func() {
		t.Helper()
		if removed {
			return
		}
		removed = true
		if err := w.Kube.Delete(context.Background(), hook); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("removing the unreachable webhook: %v", err)
		}
		w.waitProbe(t, ns, probe, "accepted again", func(err error) bool { return err == nil })
	}
	t.Cleanup(func() { _ = w.Kube.Delete(context.Background(), hook) })
	w.waitProbe(t, ns, probe, "failed by the unreachable webhook", apierrors.IsInternalError)
	return restore
}

// waitProbe creates copies of probe in ns until the API server's answer satisfies
// want (an accepted probe is deleted again).
func (w *World) waitProbe(t testing.TB, ns string, probe ctrlclient.Object, what string, want func(error) bool) {
	t.Helper()
	ctx := context.Background()
	Eventually(t, admissionTimeout, fmt.Sprintf("creating a %T in %s is %s", probe, ns, what), func() (bool, error) {
		obj := probe.DeepCopyObject().(ctrlclient.Object)
		obj.SetNamespace(ns)
		obj.SetName("")
		obj.SetGenerateName("admission-probe-")
		err := w.Kube.Create(ctx, obj)
		if err == nil {
			if derr := w.Kube.Delete(ctx, obj); derr != nil {
				return false, fmt.Errorf("deleting the probe: %w", derr)
			}
		}
		if want(err) {
			return true, nil
		}
		return false, fmt.Errorf("probe: %v", err)
	})
}

func (w *World) resourceOf(t testing.TB, obj ctrlclient.Object) schema.GroupResource {
	t.Helper()
	gvk, err := apiutil.GVKForObject(obj, w.Kube.Scheme())
	if err != nil {
		t.Fatalf("kind of %T: %v", obj, err)
	}
	m, err := w.Kube.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("resource of %s: %v", gvk, err)
	}
	return m.Resource.GroupResource()
}

func admissionRule(gr schema.GroupResource) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{gr.Group}, APIVersions: []string{"*"},
			Resources: []string{gr.Resource}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
	}
}

func inNamespace(ns string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
}
