package ownership

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	pacv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/pipelinesascode/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func repository(ns, name, url string, created time.Time) *pacv1alpha1.Repository {
	return &pacv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name),
		CreationTimestamp: metav1.NewTime(created)}, Spec: pacv1alpha1.RepositorySpec{URL: url}}
}

func bindings(ns string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: BindingConfigMap}, Data: data}
}

func newChecker(objs ...client.Object) (*Checker, client.Client, *time.Time) {
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(objs...).Build()
	now := t0
	return &Checker{Reader: c, Events: c, BindingNamespace: "nudgeflow", Now: func() time.Time { return now }}, c, &now
}

func refusalOf(t *testing.T, err error) *NotOwnedError {
	t.Helper()
	var refused *NotOwnedError
	if !errors.As(err, &refused) {
		t.Fatalf("want a refusal, got %v", err)
	}
	return refused
}

func TestCheckOwnedAndRefused(t *testing.T) {
	const url = "https://github.com/org/repo"
	ck, _, _ := newChecker(
		repository("tenant-a", "github-com-org-repo", url+".git", t0.Add(-24*time.Hour)),
		// B claims A's repository a day later (PaC's webhook compares URLs as
		// written: this one passes it).
		repository("tenant-b", "mine", "https://GitHub.com/org/repo/", t0.Add(-time.Hour)),
		// A ConfigMap of the same name in a tenant namespace binds nothing.
		bindings("tenant-b", map[string]string{"tenant-b": url}),
	)
	ctx := context.Background()
	if err := ck.Check(ctx, "tenant-a", url); err != nil {
		t.Fatalf("tenant-a owns its repository: %v", err)
	}
	refused := refusalOf(t, ck.Check(ctx, "tenant-b", url))
	if refused.Owner != "tenant-a" {
		t.Fatalf("owner %q, want tenant-a", refused.Owner)
	}
	msg := refused.Error()
	for _, want := range []string{"namespace tenant-b does not own repository " + url, "older Pipelines as Code Repository in another namespace",
		"Repository mine in namespace tenant-b was created after it", "nudgeflow-repository-bindings"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "tenant-a") {
		t.Errorf("the message names the owning tenant: %q", msg)
	}

	const fresh = "https://github.com/org/fresh"
	refused = refusalOf(t, ck.Check(ctx, "tenant-c", fresh+".git"))
	msg = refused.Error()
	for _, want := range []string{"no Pipelines as Code Repository in namespace tenant-c names it",
		"Create a Repository (apiVersion pipelinesascode.tekton.dev/v1alpha1, kind Repository) in namespace tenant-c with spec.url: " + fresh + " ",
		`adds ` + fresh + ` as a line of key "tenant-c" in ConfigMap nudgeflow/nudgeflow-repository-bindings`} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}

	refused = refusalOf(t, ck.Check(ctx, "tenant-a", "https://github.com/org/../org/repo"))
	if !strings.Contains(refused.Error(), "cannot tell who owns it") {
		t.Errorf("a URL with dot segments: %v", refused)
	}
}

func TestBindingDecides(t *testing.T) {
	const url = "https://gitlab.example.com/group/sub/project"
	ck, c, _ := newChecker(
		repository("tenant-a", "project", url, t0.Add(-24*time.Hour)),
		bindings("nudgeflow", map[string]string{"tenant-b": "https://gitlab.example.com/other\n" + url + ".git\n"}),
	)
	ctx := context.Background()
	if err := ck.Check(ctx, "tenant-b", url); err != nil {
		t.Fatalf("the admin's binding gives tenant-b the repository: %v", err)
	}
	refused := refusalOf(t, ck.Check(ctx, "tenant-a", url))
	if !strings.Contains(refused.Error(), "binds it to another namespace") {
		t.Fatalf("tenant-a's older Repository does not take a bound repository: %v", refused)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, types.NamespacedName{Namespace: "nudgeflow", Name: BindingConfigMap}, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["tenant-a"] = url
	if err := c.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"tenant-a", "tenant-b"} {
		if refused := refusalOf(t, ck.Check(ctx, ns, url)); !strings.Contains(refused.Error(), "more than one namespace") {
			t.Fatalf("%s: %v", ns, refused)
		}
	}
	// Without a binding namespace no ConfigMap is read.
	ck.BindingNamespace = ""
	if err := ck.Check(ctx, "tenant-a", url); err != nil {
		t.Fatalf("no binding read: the Repository decides: %v", err)
	}
}

// The index of other namespaces' claims is never trusted to clear a claim younger
// than itself, and an older claim it remembers is read again before it refuses.
func TestIndexNeitherMissesNorKeepsOlderClaims(t *testing.T) {
	const url = "https://github.com/org/repo"
	ck, c, now := newChecker(repository("tenant-x", "unrelated", "https://github.com/org/unrelated", t0.Add(-time.Hour)))
	ctx := context.Background()
	// The index is built now, with no claim on url.
	if _, err := ck.indexed(ctx, "github.com/org/repo", t0.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	// Within the index's minute, A claims url, then B, a second later.
	*now = t0.Add(10 * time.Second)
	for _, r := range []*pacv1alpha1.Repository{repository("tenant-a", "r", url, t0.Add(time.Second)), repository("tenant-b", "r", url, t0.Add(2*time.Second))} {
		if err := c.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if refused := refusalOf(t, ck.Check(ctx, "tenant-b", url)); refused.Owner != "tenant-a" {
		t.Fatalf("owner %q: the index must be rebuilt for a claim younger than it", refused.Owner)
	}
	// A deletes its Repository; the index still remembers A's claim.
	if err := c.Delete(ctx, repository("tenant-a", "r", url, t0)); err != nil {
		t.Fatal(err)
	}
	*now = t0.Add(20 * time.Second)
	if err := ck.Check(ctx, "tenant-b", url); err != nil {
		t.Fatalf("A's deleted claim, read again, claims nothing: %v", err)
	}
}

// noPaC answers every Repository list as a cluster without the kind does.
type noPaC struct{ client.Client }

func (n noPaC) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*pacv1alpha1.RepositoryList); ok {
		return &meta.NoKindMatchError{GroupKind: pacv1alpha1.GroupVersion.WithKind("Repository").GroupKind()}
	}
	return n.Client.List(ctx, list, opts...)
}

func TestClusterWithoutPipelinesAsCode(t *testing.T) {
	const url = "https://forgejo.example.com/org/repo"
	ck, c, _ := newChecker(bindings("nudgeflow", map[string]string{"tenant-a": url}))
	ck.Reader = noPaC{c}
	ctx := context.Background()
	if err := ck.Check(ctx, "tenant-a", url); err != nil {
		t.Fatalf("bound: %v", err)
	}
	refusalOf(t, ck.Check(ctx, "tenant-b", url))
	refusalOf(t, ck.Check(ctx, "tenant-b", "https://forgejo.example.com/org/other"))
}

func TestRequireRecordsOneWarningEvent(t *testing.T) {
	const url = "https://github.com/org/repo"
	ck, c, _ := newChecker(repository("tenant-a", "r", url, t0.Add(-time.Hour)))
	ctx := context.Background()
	on := &corev1.ObjectReference{APIVersion: "appstudio.redhat.com/v1alpha1", Kind: "Component", Name: "bundle", UID: "uid-1"}
	if err := ck.Require(ctx, "tenant-a", url, on); err != nil {
		t.Fatalf("owned: %v", err)
	}
	for range 2 {
		err := ck.Require(ctx, "tenant-b", url, on)
		var ae *temporal.ApplicationError
		if !errors.As(err, &ae) || ae.Type() != ErrorType || !ae.NonRetryable() || !IsRefusal(err) {
			t.Fatalf("want a non-retryable %s, got %v", ErrorType, err)
		}
	}
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace("tenant-b")); err != nil {
		t.Fatal(err)
	}
	if len(events.Items) != 1 {
		t.Fatalf("%d Events, want one for two refusals", len(events.Items))
	}
	ev := events.Items[0]
	if ev.Type != corev1.EventTypeWarning || ev.Reason != EventReason || ev.InvolvedObject.Name != "bundle" ||
		ev.InvolvedObject.Namespace != "tenant-b" || !strings.Contains(ev.Message, "namespace tenant-b does not own repository "+url) {
		t.Fatalf("event %+v", ev)
	}
}
