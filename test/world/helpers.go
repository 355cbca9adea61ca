package world

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

var namespaceSeq atomic.Int64

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// Namespace creates a fresh Kubernetes namespace for one test, named after it.
func (w *World) Namespace(t testing.TB) string {
	t.Helper()
	name := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 50 {
		name = name[:50]
	}
	name = fmt.Sprintf("%s-%d", strings.TrimRight(name, "-"), namespaceSeq.Add(1))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := w.Kube.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

// Eventually polls cond until it reports done, fails the test at the deadline with
// the last error or msg. It is how tests wait: on a condition, never on a sleep.
func Eventually(t testing.TB, timeout time.Duration, msg string, cond func() (bool, error)) {
	t.Helper()
	if ok, lastErr := Poll(timeout, cond); !ok {
		t.Fatalf("after %s: %s (last error: %v)", timeout, msg, lastErr)
	}
}

// Poll checks cond until it holds or timeout passes; it reports whether it held and
// the last error cond gave. For waits whose failure the caller explains itself.
func Poll(timeout time.Duration, cond func() (bool, error)) (ok bool, lastErr error) {
	deadline := time.Now().Add(timeout)
	for {
		done, err := cond()
		if done && err == nil {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// SetStatus writes obj's status as its controller (Tekton, the build, a person's
// tooling) would: mutate is applied to the latest version, and re-applied when
// another writer (a bridge adding an annotation or finalizer) got there first.
func SetStatus(ctx context.Context, c ctrlclient.Client, obj ctrlclient.Object, mutate func()) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, ctrlclient.ObjectKeyFromObject(obj), obj); err != nil {
			return fmt.Errorf("reading %s: %w", obj.GetName(), err)
		}
		mutate()
		return c.Status().Update(ctx, obj)
	})
}

// Manifest parses one YAML manifest, as a person would write it for kubectl.
func Manifest(t testing.TB, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatalf("parsing manifest: %v\n%s", err, manifest)
	}
	return obj
}

// Kubeconfig writes a kubeconfig for an administrator of this world's API server,
// for programs the test runs (kubectl, nudgeflow).
func (w *World) Kubeconfig(t testing.TB) string {
	t.Helper()
	user, err := w.ControlPlane.Env.AddUser(envtest.User{Name: "admin-" + fmt.Sprint(namespaceSeq.Add(1)), Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatalf("adding a user to the API server: %v", err)
	}
	raw, err := user.KubeConfig()
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatalf("writing kubeconfig: %v", err)
	}
	return path
}
