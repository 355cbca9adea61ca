// Package deploy_test proves deploy/ is how nudgeflow runs on a cluster: kustomize
// builds the base, each overlay and each component; the real API server accepts
// every object (server-side dry run, with minimal CRDs of cert-manager and the
// Prometheus operator from test/deploy/crds); and the bridge's and the worker's
// Deployments, started as they are written (command, args, env, mounted Secrets,
// their ServiceAccounts' RBAC) against the test world, answer their probes and
// metrics and do their work. It also checks the Containerfile's build, and
// `nudgeflow temporal setup` against a bare Temporal dev server.
package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nudgeflow/nudgeflow/test/bench"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
)

func TestMain(m *testing.M) {
	// The test client logs errors only (the API server's admission warnings are expected).
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel)))
	webhooks, err := deployedWebhooks()
	if err != nil {
		fmt.Fprintf(os.Stderr, "rendering the webhook configurations of deploy/base: %v\n", err)
		os.Exit(1)
	}
	opts := world.Options{
		// The API server calls the webhooks as deploy/base configures them (names,
		// object and namespace selectors), at the address envtest serves them on: the
		// bridge started from the manifests listens there.
		WebhookManifests: []string{webhooks},
		ExtraCRDDirs:     []string{filepath.Join(localenv.RepoRoot(), "test", "deploy", "crds")},
	}
	plrs, err := rolloutScale()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if plrs > 0 {
		// The rollout at a cluster's scale: the API server holds its PipelineRuns
		// as the bench's does (rollout_test.go).
		opts.ControlPlane = bench.ScaleControlPlane
	}
	code := world.Main(m, opts)
	_ = os.RemoveAll(filepath.Dir(webhooks))
	os.Exit(code)
}

// deployedWebhooks writes the webhook configurations of `kustomize build
// deploy/base` to a file of their own (TestMain has no *testing.T for kustomize()).
func deployedWebhooks() (string, error) {
	bin, err := exec.Command(filepath.Join(localenv.RepoRoot(), "hack", "tools.sh"), "path", "kustomize").Output()
	if err != nil {
		return "", fmt.Errorf("hack/tools.sh path kustomize: %w", err)
	}
	cmd := exec.Command(strings.TrimSpace(string(bin)), "build", deployDir("base"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("kustomize build deploy/base: %w: %s", err, stderr.String())
	}
	var out bytes.Buffer
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", err
		}
		if kind, _ := obj["kind"].(string); strings.HasSuffix(kind, "WebhookConfiguration") {
			doc, err := json.Marshal(obj)
			if err != nil {
				return "", err
			}
			out.WriteString("---\n")
			out.Write(doc)
			out.WriteString("\n")
		}
	}
	dir, err := os.MkdirTemp("", "nudgeflow-deploy-webhooks-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "webhooks.yaml")
	return path, os.WriteFile(path, out.Bytes(), 0o600)
}

// The namespace every overlay deploys to, and the one the tests re-namespace every
// variant into, as a GitOps repository's own kustomization would.
const (
	systemNamespace = "nudgeflow-system"
	otherNamespace  = "konflux-nudgeflow"
)

func deployDir(parts ...string) string {
	return filepath.Join(append([]string{localenv.RepoRoot(), "deploy"}, parts...)...)
}

// tool finds a binary from the tool cache (hack/tools.sh builds it when missing).
func tool(t *testing.T, name string) string {
	t.Helper()
	if name == "kubectl" {
		assets, err := localenv.KubeAssets()
		require.NoError(t, err)
		return filepath.Join(assets, "kubectl")
	}
	out, err := exec.Command(filepath.Join(localenv.RepoRoot(), "hack", "tools.sh"), "path", name).Output()
	require.NoError(t, err, "hack/tools.sh path %s", name)
	return strings.TrimSpace(string(out))
}

// kustomize builds dir (a folder under the repository, or a scratch folder whose
// kustomization points into it) and returns the YAML and its objects.
func kustomize(t *testing.T, dir string) ([]byte, manifests) {
	t.Helper()
	cmd := exec.Command(tool(t, "kustomize"), "build", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "kustomize build %s: %s", dir, stderr.String())
	return out, parseManifests(t, out)
}

// wrapped builds a folder of deploy/ with extra components inside an operator's
// own kustomization, which sets namespace when it is not empty (kustomize refuses
// absolute paths: the scratch folder refers to the repository relatively).
func wrapped(t *testing.T, namespace, dir string, components ...string) ([]byte, manifests) {
	t.Helper()
	scratch := t.TempDir()
	rel := func(p string) string {
		r, err := filepath.Rel(scratch, p)
		require.NoError(t, err)
		return r
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
	if namespace != "" {
		k += "namespace: " + namespace + "\n"
	}
	k += "resources:\n  - " + rel(deployDir(dir)) + "\n"
	if len(components) > 0 {
		k += "components:\n"
		for _, c := range components {
			k += "  - " + rel(deployDir(c)) + "\n"
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(scratch, "kustomization.yaml"), []byte(k), 0o600))
	return kustomize(t, scratch)
}

type manifests []*unstructured.Unstructured

func parseManifests(t *testing.T, raw []byte) manifests {
	t.Helper()
	var out manifests
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
		}
		if obj == nil {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
	return out
}

func (m manifests) ofKind(kind string) manifests {
	var out manifests
	for _, o := range m {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

func (m manifests) find(kind, name string) *unstructured.Unstructured {
	for _, o := range m {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// get converts the named object into a typed one; the test fails when it is missing.
func get[T any](t *testing.T, m manifests, kind, name string) *T {
	t.Helper()
	o := m.find(kind, name)
	require.NotNil(t, o, "%s %s is in the manifests", kind, name)
	var typed T
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &typed))
	return &typed
}

func (m manifests) deployment(t *testing.T, name string) *appsv1.Deployment {
	return get[appsv1.Deployment](t, m, "Deployment", name)
}

func (m manifests) service(t *testing.T, name string) *corev1.Service {
	return get[corev1.Service](t, m, "Service", name)
}

// without drops the objects of the given kinds.
func (m manifests) without(kinds ...string) manifests {
	var out manifests
	for _, o := range m {
		keep := true
		for _, k := range kinds {
			if o.GetKind() == k {
				keep = false
			}
		}
		if keep {
			out = append(out, o)
		}
	}
	return out
}

func (m manifests) yaml(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, o := range m {
		raw, err := o.MarshalJSON()
		require.NoError(t, err)
		b.Write(raw)
		b.WriteString("\n")
	}
	return b.Bytes()
}

var (
	adminOnce       sync.Once
	adminKubeconfig string
)

// admin is a kubeconfig of a cluster administrator (system:masters), shared by the
// package's tests.
func admin(t *testing.T) string {
	adminOnce.Do(func() {
		w := world.Get(t)
		user, err := w.ControlPlane.Env.AddUser(envtestUser("deploy-test-admin"), nil)
		require.NoError(t, err)
		raw, err := user.KubeConfig()
		require.NoError(t, err)
		dir, err := os.MkdirTemp("", "nudgeflow-deploy-")
		require.NoError(t, err)
		adminKubeconfig = filepath.Join(dir, "kubeconfig")
		require.NoError(t, os.WriteFile(adminKubeconfig, raw, 0o600))
	})
	return adminKubeconfig
}

// asServiceAccount is the administrator's kubeconfig impersonating a ServiceAccount:
// the process using it has exactly that ServiceAccount's permissions (the API
// server adds the system:serviceaccounts groups), as in its pod.
func asServiceAccount(t *testing.T, namespace, name string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(admin(t))
	require.NoError(t, err)
	for _, a := range cfg.AuthInfos {
		a.Impersonate = fmt.Sprintf("system:serviceaccount:%s:%s", namespace, name)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig-"+name)
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// kubectl runs kubectl as the administrator with stdin; it returns the output.
func kubectl(t *testing.T, stdin []byte, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool(t, "kubectl"), append([]string{"--kubeconfig", admin(t)}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func envtestUser(name string) envtest.User {
	return envtest.User{Name: name, Groups: []string{"system:masters"}}
}
