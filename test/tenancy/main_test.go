// Package tenancy_test attacks nudgeflow as a tenant would, black-box: a real
// kube-apiserver with nudgeflow's shipped RBAC, user roles and
// ValidatingAdmissionPolicy applied (deploy/base, rendered by kustomize), the
// bridge (admission webhooks, reconcilers, the forge receiver as it ships) and the
// worker in this process, the worker's Kubernetes client impersonating its
// ServiceAccount (so every read and write it makes is bounded exactly as on a
// cluster), a Temporal dev server and the GitHub emulator with a GitHub App
// installed on every repository, as Konflux's shared App is.
//
// Tenants act through their own RBAC: each is a user bound to the bootstrap
// `admin` ClusterRole in its namespace (what Konflux grants a namespace admin),
// impersonated. The victim owns its repository by the Pipelines as Code
// Repository build-service's onboarding created; the attacker owns nothing of it.
// TestTenantIsolation runs every attack and prints one line per case and the sum.
package tenancy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/changegrouppr"
	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
	"github.com/nudgeflow/nudgeflow/test/localbridge"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
	"github.com/nudgeflow/nudgeflow/test/world/worldbridge"
	nfworker "github.com/nudgeflow/nudgeflow/worker"
	cgwf "github.com/nudgeflow/nudgeflow/workflows/changegroup"
)

const (
	taskQueue = "tenancy"
	// systemNamespace is where deploy/base installs nudgeflow; the worker's
	// ServiceAccount, its repository bindings and the receiver's secrets live there.
	systemNamespace = "nudgeflow-system"
	workerUser      = "system:serviceaccount:" + systemNamespace + ":nudgeflow-worker"
	appID           = 4242
	appSlug         = "konflux-app"
	webhookSecret   = "tenancy-shared-webhook-secret"
	waitFor         = 90 * time.Second
)

// stack is what the package's tests share.
type stack struct {
	emu *githubemu.Server
	// worker is the worker's client: the worker ServiceAccount, impersonated.
	worker ctrlclient.Client
	// temporal is the test's client of the dev server (for reading histories).
	temporal client.Client
	// admin is the cluster administrator's client.
	admin ctrlclient.Client
	// receiverURL is where the forge receiver takes deliveries.
	receiverURL string
}

var shared stack

func TestMain(m *testing.M) {
	os.Exit(world.Main(m, world.Options{
		WebhookManifests: []string{filepath.Join(localenv.RepoRoot(), "deploy", "webhooks")},
		Start:            startStack,
	}))
}

// settings are short so groups open their PRs in seconds.
var settings = cgwf.Settings{Debounce: time.Second, PollInterval: 3 * time.Second}

func startStack(w *world.World) (func(), error) {
	ctx := context.Background()
	if err := installShipped(ctx, w); err != nil {
		return nil, err
	}
	emu := githubemu.New()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	emu.RegisterApp(appID, appSlug, &key.PublicKey)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	// The shared App's Secret, where build-service keeps it.
	for _, obj := range []ctrlclient.Object{
		konfluxTenantClusterRole(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: forge.DefaultAppSecret.Namespace}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: forge.DefaultAppSecret.Name, Namespace: forge.DefaultAppSecret.Namespace},
			Data: map[string][]byte{forge.KeyAppID: []byte(fmt.Sprint(appID)), forge.KeyAppPrivateKey: keyPEM}},
	} {
		if err := w.Kube.Create(ctx, obj); err != nil {
			return nil, fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}

	workerCfg := w.Config()
	workerCfg.Impersonate = rest.ImpersonationConfig{UserName: workerUser,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + systemNamespace, "system:authenticated"}}
	workerKube, err := ctrlclient.New(workerCfg, ctrlclient.Options{Scheme: kube.NewScheme()})
	if err != nil {
		return nil, err
	}

	b, err := worldbridge.Start(w, worldbridge.Options{Bridge: localbridge.Options{
		Deps:      bridge.Deps{TaskQueue: taskQueue, ChangeGroup: settings},
		ForgeHook: &localbridge.ForgeHook{Secret: webhookSecret, Forges: []localbridge.Forge{emu}},
	}})
	if err != nil {
		emu.Close()
		return nil, err
	}
	wk := nfworker.New(w.TemporalClient, nfworker.Deps{
		Kube: workerKube, Temporal: w.TemporalClient, OperatorNamespace: systemNamespace, StandInForge: world.IsStandInForge,
		PullRequest: changegrouppr.Config{Transport: http.DefaultTransport},
	}, nfworker.Options{TaskQueue: taskQueue, FailWorkflowOnPanic: true})
	if err := wk.Start(); err != nil {
		_ = b.Stop()
		emu.Close()
		return nil, err
	}
	shared = stack{emu: emu, worker: workerKube, admin: w.Kube, temporal: w.TemporalClient, receiverURL: b.ForgeHookURL}
	return func() {
		wk.Stop()
		_ = b.Stop()
		emu.Close()
	}, nil
}

// shippedKinds are what installShipped applies of deploy/base: who may do what.
// The Deployments and Services need a kubelet and a network this world lacks (the
// processes run here instead), and the webhook configurations are registered by the
// world at the address its bridge serves.
var shippedKinds = map[string]bool{
	"Namespace": true, "ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"Role": true, "RoleBinding": true, "ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
}

// installShipped applies deploy/base's RBAC, user roles and admission policies as
// an operator would (server-side apply of `kustomize build deploy/base`).
func installShipped(ctx context.Context, w *world.World) error {
	kz, err := exec.Command(filepath.Join(localenv.RepoRoot(), "hack", "tools.sh"), "path", "kustomize").Output()
	if err != nil {
		return fmt.Errorf("hack/tools.sh path kustomize: %w", err)
	}
	cmd := exec.Command(strings.TrimSpace(string(kz)), "build", filepath.Join(localenv.RepoRoot(), "deploy", "base"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("kustomize build deploy/base: %w: %s", err, stderr.String())
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	applied := 0
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		if !shippedKinds[obj.GetKind()] {
			continue
		}
		if err := w.Kube.Patch(ctx, &obj, ctrlclient.Apply, ctrlclient.FieldOwner("tenancy-test"), ctrlclient.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		applied++
	}
	if applied == 0 {
		return errors.New("deploy/base holds no RBAC to apply")
	}
	// The shipped user roles reach namespace admins through aggregation.
	return world.AggregateClusterRoles(ctx, w.Kube)
}

// konfluxTenantRole stands in for what Konflux's own tenant role
// (konflux-admin-user-actions) grants a namespace admin on the kinds of other
// operators: Components, build PipelineRuns and Pipelines as Code Repositories in
// its namespace. nudgeflow's kinds come from the shipped aggregated roles.
const konfluxTenantRole = "konflux-tenant-stand-in"

func konfluxTenantClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: konfluxTenantRole}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"appstudio.redhat.com"}, Resources: []string{"components", "snapshots"}, Verbs: []string{"*"}},
		{APIGroups: []string{"tekton.dev"}, Resources: []string{"pipelineruns"}, Verbs: []string{"*"}},
		{APIGroups: []string{"pipelinesascode.tekton.dev"}, Resources: []string{"repositories"}, Verbs: []string{"*"}},
	}}
}

// tenant is a namespace and its admin, a user bound to the bootstrap `admin`
// ClusterRole there (with what the shipped roles aggregate into it), acting
// through a client that impersonates them.
type tenant struct {
	ns   string
	user string
	kube ctrlclient.Client
}

func newTenant(t *testing.T, user string) *tenant {
	t.Helper()
	w := world.Get(t)
	ns := w.Namespace(t)
	ctx := context.Background()
	for _, role := range []string{"admin", konfluxTenantRole} {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
		if err := w.Kube.Create(ctx, rb); err != nil {
			t.Fatalf("binding %s as %s of %s: %v", user, role, ns, err)
		}
	}
	cfg := w.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := ctrlclient.New(cfg, ctrlclient.Options{Scheme: kube.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return &tenant{ns: ns, user: user, kube: c}
}
