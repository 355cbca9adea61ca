package deploy_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"knative.dev/pkg/apis"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/bridge/changegroupcontroller"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	ghforge "github.com/nudgeflow/nudgeflow/internal/forge/github"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
	"github.com/nudgeflow/nudgeflow/test/landingforge"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
)

const (
	forgeToken          = "ghp_deployTestTokenThatMustNeverBeLogged0001"
	forgeWebhookSecret  = "deploy-test-forge-webhook-secret"
	startupTimeout      = 2 * time.Minute
	scenarioWaitTimeout = 2 * time.Minute
)

var (
	preparedMu sync.Mutex
	// preparedSecrets are the namespaces whose Secrets prepared created.
	preparedSecrets = map[string]bool{}
)

// prepared is what an operator does before the pods can start (deploy/README.md):
// the manifests of v applied, the forge webhook Secret and the Temporal client
// certificate's Secret created, and the webhook's and the receiver's serving
// certificates and the worker's metrics certificate issued into their Secrets — by
// service-ca or cert-manager on a cluster; here from the certificate envtest
// serves the webhooks with (the scrapes verify it), so the API
// server trusts the bridge started from the manifests, and the receiver the
// bridge. A variant
// in another namespace than the shipped one is installed for this test only: the
// shipped variant is installed again afterwards (their ClusterRoleBindings share
// names).
func prepared(t *testing.T, v variant) {
	t.Helper()
	if v.namespace == systemNamespace {
		applied(t)
	} else {
		require.NoError(t, install(t, v))
		t.Cleanup(func() {
			require.NoError(t, install(t, findVariant(t, variants(t), "cert-manager")), "re-binding the shipped namespace's ServiceAccounts")
		})
	}
	preparedMu.Lock()
	defer preparedMu.Unlock()
	if preparedSecrets[v.namespace] {
		return
	}
	temporalTLSSecret(t, v.namespace)
	out, err := kubectl(t, nil, "-n", v.namespace, "create", "secret", "generic", "nudgeflow-forge-webhook", "--from-literal=secret="+forgeWebhookSecret)
	require.NoError(t, err, out)
	issueServingCerts(t, v.namespace)
	preparedSecrets[v.namespace] = true
}

// issueServingCerts does what cert-manager (or service-ca) does for namespace ns:
// the webhook's and the receiver's serving certificates and the worker's metrics
// certificate in their Secrets.
func issueServingCerts(t *testing.T, ns string) {
	t.Helper()
	w := world.Get(t)
	_, _, certDir := w.WebhookServer()
	// cert-manager writes ca.crt beside the key: the receiver trusts the bridge by
	// it. The receiver's own certificate is envtest's as well (it names 127.0.0.1,
	// where the tests reach both).
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(caFile, w.ControlPlane.Env.WebhookInstallOptions.LocalServingCAData, 0o600))
	for _, args := range [][]string{
		{"-n", ns, "create", "secret", "generic", "nudgeflow-bridge-webhook-cert",
			"--from-file=tls.crt=" + filepath.Join(certDir, "tls.crt"), "--from-file=tls.key=" + filepath.Join(certDir, "tls.key"), "--from-file=ca.crt=" + caFile},
		{"-n", ns, "create", "secret", "tls", "nudgeflow-receiver-cert",
			"--cert=" + filepath.Join(certDir, "tls.crt"), "--key=" + filepath.Join(certDir, "tls.key")},
		{"-n", ns, "create", "secret", "tls", "nudgeflow-worker-metrics-cert",
			"--cert=" + filepath.Join(certDir, "tls.crt"), "--key=" + filepath.Join(certDir, "tls.key")},
	} {
		out, err := kubectl(t, nil, args...)
		require.NoError(t, err, "kubectl %s: %s", strings.Join(args, " "), out)
	}
}

// workload is a pod template of the manifests (a Deployment's, a Job's) and where
// it runs.
type workload struct {
	name, namespace string
	spec            corev1.PodSpec
}

func deploymentPod(d *appsv1.Deployment) workload {
	return workload{name: d.Name, namespace: d.Namespace, spec: d.Spec.Template.Spec}
}

func jobPod(j *batchv1.Job) workload {
	return workload{name: j.Name, namespace: j.Namespace, spec: j.Spec.Template.Spec}
}

// pod is one workload's container, run as a process the way a kubelet would run
// it: its command, args and env as written, its volumes mounted, as its
// ServiceAccount (without credentials when the pod mounts no token). Only what
// must point at the test world is replaced:
//   - the image's binary path: the binary built as the Containerfile builds it;
//   - in-cluster credentials: $KUBECONFIG, a kubeconfig impersonating the pod's
//     ServiceAccount (so RBAC is exactly the manifests'); a projected
//     ServiceAccount token is one the API server issues for its audience
//     (TokenRequest, as the kubelet asks);
//   - $TEMPORAL_ADDRESS from the ConfigMap: the test world's Temporal dev server
//     (the namespace, "nudgeflow", is the ConfigMap's), behind a TLS front that
//     requires the client certificate the pod mounts when the pod connects with
//     mutual TLS, as the manifests do unless components/insecure-temporal opts out
//     (temporaltls_test.go);
//   - --webhook-port: the port envtest's webhook configurations call (a cluster's
//     Service forwards 443 to it); --bridge-url: that port on 127.0.0.1 (the
//     bridge's webhook Service);
//   - every listen address (":8080"): a free port on 127.0.0.1, since several
//     processes share this machine's network;
//   - mount paths in args and env: folders holding what the kubelet would mount
//     (the Secrets' and ConfigMaps' keys as files, empty dirs).
type pod struct {
	t         *testing.T
	name      string
	container corev1.Container
	cmd       *exec.Cmd
	logPath   string
	// addr maps a declared container port to where this process listens.
	addr map[int32]string
	// env is the process's environment.
	env  map[string]string
	done chan struct{}
	// temporal is the TLS front the pod reaches Temporal through (nil: plaintext).
	temporal *temporalFront
}

type podOptions struct {
	// temporalAddress is the plaintext dev server the pod's Temporal connection
	// reaches (through a TLS front when the pod uses mutual TLS).
	temporalAddress string
	// withoutTLSFront points the pod at temporalAddress itself, whatever its TLS
	// settings: the attempt of a pod that must not connect in plaintext.
	withoutTLSFront bool
	webhookPort     int
	// kubeconfig, when set, rewrites the pod's kubeconfig (a front between it and
	// the API server).
	kubeconfig func(path string) string
}

// volumeItems are the keys of a Secret or ConfigMap a volume projects: all of
// data, or only the items it names, at their paths.
func volumeItems(t *testing.T, data map[string][]byte, items []corev1.KeyToPath) map[string][]byte {
	t.Helper()
	if len(items) == 0 {
		return data
	}
	out := map[string][]byte{}
	for _, it := range items {
		v, ok := data[it.Key]
		require.True(t, ok, "the volume projects key %s", it.Key)
		out[it.Path] = v
	}
	return out
}

func startPod(t *testing.T, m manifests, d workload, o podOptions) *pod {
	t.Helper()
	w := world.Get(t)
	spec := d.spec
	c := spec.Containers[0]
	p := &pod{t: t, name: d.name, container: c, addr: map[int32]string{}, done: make(chan struct{})}

	// Volumes.
	mounts := map[string]string{}
	for _, vm := range c.VolumeMounts {
		dir := t.TempDir()
		i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == vm.Name })
		require.GreaterOrEqual(t, i, 0)
		switch vol := spec.Volumes[i]; {
		case vol.Secret != nil:
			var secret corev1.Secret
			err := w.Kube.Get(context.Background(), ctrlclient.ObjectKey{Namespace: d.namespace, Name: vol.Secret.SecretName}, &secret)
			if !apierrors.IsNotFound(err) || !ptr.Deref(vol.Secret.Optional, false) {
				require.NoError(t, err, "Secret %s mounted by %s", vol.Secret.SecretName, d.name)
			}
			for k, v := range volumeItems(t, secret.Data, vol.Secret.Items) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, k), v, 0o600))
			}
		case vol.Projected != nil:
			for _, src := range vol.Projected.Sources {
				require.NotNil(t, src.ServiceAccountToken, "%s: projected volume %s: only ServiceAccount tokens are projected here", d.name, vol.Name)
				tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
					Audiences: []string{src.ServiceAccountToken.Audience}, ExpirationSeconds: src.ServiceAccountToken.ExpirationSeconds}}
				sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: d.namespace, Name: spec.ServiceAccountName}}
				require.NoError(t, w.Kube.SubResource("token").Create(context.Background(), sa, tr), "%s's projected token", d.name)
				require.NoError(t, os.WriteFile(filepath.Join(dir, src.ServiceAccountToken.Path), []byte(tr.Status.Token), 0o600))
			}
		case vol.ConfigMap != nil:
			require.Empty(t, vol.ConfigMap.Items, "%s: ConfigMap volume %s: only whole ConfigMaps are mounted here", d.name, vol.Name)
			var cm corev1.ConfigMap
			err := w.Kube.Get(context.Background(), ctrlclient.ObjectKey{Namespace: d.namespace, Name: vol.ConfigMap.Name}, &cm)
			if !apierrors.IsNotFound(err) || !ptr.Deref(vol.ConfigMap.Optional, false) {
				require.NoError(t, err, "ConfigMap %s mounted by %s", vol.ConfigMap.Name, d.name)
			}
			for k, v := range cm.Data {
				require.NoError(t, os.WriteFile(filepath.Join(dir, k), []byte(v), 0o600))
			}
		}
		mounts[vm.MountPath] = dir
	}

	// Environment: envFrom, then env, as the kubelet orders them. A path inside a
	// mounted volume points at the folder standing in for it.
	env := map[string]string{}
	for _, ef := range c.EnvFrom {
		cm := get[corev1.ConfigMap](t, m, "ConfigMap", ef.ConfigMapRef.Name)
		for k, v := range cm.Data {
			env[ef.Prefix+k] = mounted(v, mounts)
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = mounted(expand(e.Value, env), mounts)
		case e.ValueFrom.FieldRef != nil:
			require.Equal(t, "metadata.namespace", e.ValueFrom.FieldRef.FieldPath, "only the namespace is read from the pod")
			env[e.Name] = d.namespace
		case e.ValueFrom.ResourceFieldRef != nil:
			q := c.Resources.Limits[corev1.ResourceName(strings.TrimPrefix(e.ValueFrom.ResourceFieldRef.Resource, "limits."))]
			env[e.Name] = fmt.Sprint(q.Value())
		case e.ValueFrom.SecretKeyRef != nil:
			var s corev1.Secret
			require.NoError(t, w.Kube.Get(context.Background(), ctrlclient.ObjectKey{Namespace: d.namespace, Name: e.ValueFrom.SecretKeyRef.Name}, &s))
			env[e.Name] = string(s.Data[e.ValueFrom.SecretKeyRef.Key])
		default:
			t.Fatalf("%s: env %s: unsupported source", d.name, e.Name)
		}
	}
	if _, ok := env["TEMPORAL_ADDRESS"]; ok {
		env["TEMPORAL_ADDRESS"] = o.temporalAddress
		if env["TEMPORAL_TLS_CLIENT_CERT_PATH"] != "" && !o.withoutTLSFront {
			p.temporal = startTemporalFront(t, o.temporalAddress)
			env["TEMPORAL_ADDRESS"] = p.temporal.addr
		}
	}
	if ptr.Deref(spec.AutomountServiceAccountToken, true) {
		env["KUBECONFIG"] = asServiceAccount(t, d.namespace, spec.ServiceAccountName)
		if o.kubeconfig != nil {
			env["KUBECONFIG"] = o.kubeconfig(env["KUBECONFIG"])
		}
	}

	// Args.
	var args []string
	for _, a := range c.Args {
		a = expand(a, env)
		flag, value, ok := strings.Cut(a, "=")
		switch {
		case !ok:
		case flag == "--webhook-port":
			value = fmt.Sprint(o.webhookPort)
		case flag == "--bridge-url":
			value = fmt.Sprintf("https://127.0.0.1:%d", o.webhookPort)
		case strings.HasPrefix(value, ":"):
			port, err := localenv.FreePort()
			require.NoError(t, err)
			local := fmt.Sprintf("127.0.0.1:%d", port)
			p.addr[intstr.Parse(value[1:]).IntVal] = local
			value = local
		default:
			value = mounted(value, mounts)
		}
		if ok {
			a = flag + "=" + value
		}
		args = append(args, a)
	}
	require.Equal(t, imageBinary, c.Command[0])
	p.env = env
	p.cmd = exec.Command(nudgeflowBinary(t), append(c.Command[1:], args...)...)
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.logPath = filepath.Join(w.LogDir, fmt.Sprintf("%s-%s.log", strings.ReplaceAll(t.Name(), "/", "_"), d.name))
	logs, err := os.Create(p.logPath)
	require.NoError(t, err)
	p.cmd.Stdout, p.cmd.Stderr = logs, logs
	require.NoError(t, p.cmd.Start(), "starting %s", d.name)
	go func() {
		_ = p.cmd.Wait()
		logs.Close()
		close(p.done)
	}()
	t.Cleanup(p.stop)
	return p
}

// mounted maps a path inside the container to the folder standing in for its
// volume (the longest mount path that contains it).
func mounted(path string, mounts map[string]string) string {
	best := ""
	for m := range mounts {
		if (path == m || strings.HasPrefix(path, m+"/")) && len(m) > len(best) {
			best = m
		}
	}
	if best == "" {
		return path
	}
	return mounts[best] + strings.TrimPrefix(path, best)
}

var envRef = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand resolves $(VAR) like the kubelet: defined variables are replaced, $$ is a
// literal $, anything else is kept.
func expand(s string, env map[string]string) string {
	return envRef.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// stop sends SIGTERM (what the kubelet sends) and waits.
func (p *pod) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if ok, _ := world.Poll(30*time.Second, func() (bool, error) {
		select {
		case <-p.done:
			return true, nil
		default:
			return false, nil
		}
	}); !ok {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// wait waits for the process to exit on its own (a Job's) and returns its exit code.
func (p *pod) wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.t.Fatalf("%s still runs after %s; its log:\n%s", p.name, timeout, p.logs())
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *pod) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *pod) logs() string {
	raw, _ := os.ReadFile(p.logPath)
	return string(raw)
}

// url is where the container's port (a name or a number) answers.
func (p *pod) url(port intstr.IntOrString, path string) string {
	p.t.Helper()
	return "http://" + p.addrOf(port) + path
}

// addrOf is where the container's port (a name or a number) listens.
func (p *pod) addrOf(port intstr.IntOrString) string {
	p.t.Helper()
	cp, ok := containerPort(p.container, port)
	require.True(p.t, ok, "%s declares port %s", p.name, port.String())
	addr, ok := p.addr[cp.ContainerPort]
	require.True(p.t, ok, "%s listens on port %d", p.name, cp.ContainerPort)
	return addr
}

var httpClient = &http.Client{Timeout: 10 * time.Second}

// httpGet answers a GET with its status and body.
func httpGet(url string) (int, string, error) { return getWith(httpClient, url, "") }

// probe runs a probe of the manifest: its path on its port.
func (p *pod) probe(pr *corev1.Probe) (int, string, error) {
	return httpGet(p.url(pr.HTTPGet.Port, pr.HTTPGet.Path))
}

// waitReady waits for the readiness probe, failing early when the process died.
func (p *pod) waitReady(timeout time.Duration) { p.waitReadiness(http.StatusOK, timeout) }

// waitReadiness waits for the readiness probe to answer code (503: up, not ready).
func (p *pod) waitReadiness(want int, timeout time.Duration) {
	p.t.Helper()
	ok, err := world.Poll(timeout, func() (bool, error) {
		if p.exited() {
			return true, fmt.Errorf("%s exited", p.name)
		}
		code, body, err := p.probe(p.container.ReadinessProbe)
		if err != nil {
			return false, err
		}
		if code != want {
			return false, fmt.Errorf("readiness %d: %s", code, body)
		}
		return true, nil
	})
	if !ok || p.exited() {
		p.t.Fatalf("%s's readiness is not %d after %s (%v); its log:\n%s", p.name, want, timeout, err, p.logs())
	}
}

// metrics scrapes the port a metrics Service targets as Prometheus does: HTTPS,
// with the token of a ServiceAccount bound to nudgeflow-metrics-reader.
// waitMetrics waits until p serves its metrics behind svc to the scraper.
func (p *pod) waitMetrics(svc *corev1.Service, timeout time.Duration) {
	p.t.Helper()
	ok, err := world.Poll(timeout, func() (bool, error) {
		if p.exited() {
			return true, fmt.Errorf("%s exited", p.name)
		}
		code, body, err := scrape(p.t, p.metricsURL(svc), scraperToken(p.t))
		if err != nil {
			return false, err
		}
		if code != http.StatusOK {
			return false, fmt.Errorf("metrics %d: %s", code, body)
		}
		return true, nil
	})
	if !ok || p.exited() {
		p.t.Fatalf("%s serves no metrics after %s (%v); its log:\n%s", p.name, timeout, err, p.logs())
	}
}

func (p *pod) metrics(svc *corev1.Service) string {
	p.t.Helper()
	code, body, err := scrape(p.t, p.metricsURL(svc), scraperToken(p.t))
	require.NoError(p.t, err)
	require.Equal(p.t, http.StatusOK, code, body)
	return body
}

// cluster is the cert-manager overlay as applied, and its pods started from it.
type cluster struct {
	m                        manifests
	bridge, worker, receiver *pod
}

// startCluster installs v (prepared) and starts its worker and bridge; the bridge
// serves its webhooks on webhookPort.
func startCluster(t *testing.T, v variant, temporalAddress string, webhookPort int) *cluster {
	t.Helper()
	c := startPods(t, v, temporalAddress, webhookPort)
	c.worker.waitReady(startupTimeout)
	c.bridge.waitReady(startupTimeout)
	// Ready once it has read the bound webhook secrets from the bridge's API.
	c.receiver.waitReady(startupTimeout)
	// Ready means the webhooks serve; the metrics server starts beside them and
	// builds its authentication first, so it may answer a moment later.
	c.worker.waitMetrics(c.m.service(t, "nudgeflow-worker-metrics"), startupTimeout)
	c.bridge.waitMetrics(c.m.service(t, "nudgeflow-bridge-metrics"), startupTimeout)
	return c
}

// startPods starts the pods of v (prepared) without waiting for them.
func startPods(t *testing.T, v variant, temporalAddress string, webhookPort int) *cluster {
	t.Helper()
	prepared(t, v)
	m := v.objs
	c := &cluster{m: m}
	c.worker = startPod(t, m, deploymentPod(m.deployment(t, "nudgeflow-worker")), podOptions{temporalAddress: temporalAddress})
	c.bridge = startPod(t, m, deploymentPod(m.deployment(t, "nudgeflow-bridge")), podOptions{temporalAddress: temporalAddress, webhookPort: webhookPort})
	c.receiver = startPod(t, m, deploymentPod(m.deployment(t, "nudgeflow-receiver")), podOptions{webhookPort: webhookPort})
	return c
}

// shippedCluster starts the cert-manager overlay as shipped, its bridge serving
// the webhooks the API server calls.
func shippedCluster(t *testing.T) *cluster {
	w := world.Get(t)
	_, webhookPort, _ := w.WebhookServer()
	return startCluster(t, findVariant(t, variants(t), "cert-manager"), w.Temporal.Address, webhookPort)
}

// The bridge's and the worker's Deployments, run as written against the real API
// server and the Temporal dev server: they become ready, answer their liveness
// probes and metrics, admit and reconcile a ChangeGroup whose workflow the worker
// runs, and carry a validated nudge to a Renovate PipelineRun the worker creates —
// each process with only its ServiceAccount's permissions.
func TestManifestsAreTheProgram(t *testing.T) {
	w := world.Get(t)
	_, _, certDir := w.WebhookServer()
	// The cluster's trusted CA bundle, injected into the shipped ConfigMap as
	// OpenShift does (any real PEM will do: envtest's webhook certificate).
	applied(t)
	bundle, err := os.ReadFile(filepath.Join(certDir, "tls.crt"))
	require.NoError(t, err)
	var trusted corev1.ConfigMap
	require.NoError(t, w.Kube.Get(context.Background(), ctrlclient.ObjectKey{Namespace: systemNamespace, Name: "nudgeflow-trusted-ca"}, &trusted))
	trusted.Data = map[string]string{renovate.CABundleKey: string(bundle)}
	require.NoError(t, w.Kube.Update(context.Background(), &trusted))
	c := shippedCluster(t)
	require.Equal(t, w.Temporal.Namespace, temporalConfigMap(t, c.m, c.bridge.container).Data["TEMPORAL_NAMESPACE"],
		"the manifests' Temporal namespace is used as written")

	for _, p := range []*pod{c.bridge, c.worker, c.receiver} {
		code, body, err := p.probe(p.container.LivenessProbe)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, "%s liveness: %s", p.name, body)
	}

	ctx := context.Background()
	ns := w.Namespace(t)
	create := creator(t, ns)
	component := func(name, gitURL string, nudges ...string) {
		create(newComponent(name, gitURL, nudges...))
	}

	runChangeGroup(t, ns)
	// Both reached Temporal (the bridge started the group's workflow, the worker
	// ran it) through mutual TLS only.
	for _, p := range []*pod{c.bridge, c.worker} {
		require.NotNil(t, p.temporal, "%s connects to Temporal with mutual TLS", p.name)
		require.Contains(t, p.temporal.verified(), "nudgeflow", "%s presents the client certificate of the Secret it mounts", p.name)
	}

	// A validated nudge: the bridge routes the build and the Snapshot, the worker
	// launches the Renovate PipelineRun with its ConfigMap and token Secret.
	// The nudged repository is on a GitHub emulator: after the run, the worker asks
	// it whether the build's digest was delivered (renovate.CheckDelivery).
	gh := githubemu.New()
	t.Cleanup(gh.Close)
	gh.AddToken(forgeToken, landingforge.GitHubBot)
	gh.CreateRepo("org", "app", "main", map[string]string{"Dockerfile": "FROM quay.io/org/lib@sha256:" + strings.Repeat("0", 64) + "\n"})
	appURL := gh.URL() + "/org/app"
	component("lib", "")
	app := newComponent("app", appURL)
	app.Annotations = map[string]string{mirrorv1alpha1.AnnotationGitProvider: "github"}
	create(app)
	create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "scm-github", Labels: map[string]string{
			credentials.LabelCredentials: credentials.LabelCredentialsSCM, credentials.LabelSCMHost: "127.0.0.1"}},
		Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{corev1.BasicAuthUsernameKey: []byte("konflux-bot"), corev1.BasicAuthPasswordKey: []byte(forgeToken)},
	})
	create(&konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName},
		Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: []konfluxv1alpha1.NudgeRelationship{
			{From: "lib", To: "app", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "gate"}}}})
	// The deployed build-routing webhooks hold a push build of a component with an
	// edge whichever of ADR 69's label forms it carries (a new-model build has the
	// konflux-ci.dev ones alone, the "-new-keys" twin's selector): a dry run is
	// admitted by the same webhooks and stores nothing.
	for form, labels := range map[string]map[string]string{
		"appstudio":      {konflux.ComponentKey.Old: "lib", konflux.PipelineTypeKey.Old: konflux.PipelineTypeBuild},
		"konflux-ci.dev": {konflux.ComponentKey.New: "lib", konflux.PipelineTypeKey.New: konflux.PipelineTypeBuild},
	} {
		probe := pushBuild("lib-on-push-probe", "lib", strings.Repeat("3", 40))
		probe.Namespace, probe.Labels = ns, labels
		require.NoError(t, w.Kube.Create(ctx, probe, ctrlclient.DryRunAll), form)
		require.Contains(t, probe.Finalizers, konflux.FinalizerBuildRouting, "a build labelled in the %s form is held by the deployed webhooks", form)
	}
	digest := "sha256:" + strings.Repeat("ab", 32)
	build := pushBuild("lib-on-push-1", "lib", strings.Repeat("1", 40))
	create(build)
	built(t, build, "quay.io/org/lib:rev1", digest)
	snap := &mirrorv1alpha1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "gate-1"}, Spec: mirrorv1alpha1.SnapshotSpec{ComponentGroup: "gate",
		Components: []mirrorv1alpha1.SnapshotComponent{{Name: "lib", ContainerImage: "quay.io/org/lib@" + digest}}}}
	// The bridge may see the Snapshot before the build: it is sent again until the
	// edge's workflow holds the build (a later Snapshot would do the same).
	create(snap)
	require.NoError(t, world.SetStatus(ctx, w.Kube, snap, func() {
		snap.Status.Conditions = []metav1.Condition{{Type: mirrorv1alpha1.SnapshotTestSucceeded, Status: metav1.ConditionTrue, Reason: "Passed", LastTransitionTime: metav1.Now()}}
	}))
	var run tektonv1.PipelineRun
	world.Eventually(t, scenarioWaitTimeout, "the worker launches the Renovate PipelineRun", func() (bool, error) {
		var list tektonv1.PipelineRunList
		if err := w.Kube.List(ctx, &list, ctrlclient.InNamespace(ns), ctrlclient.MatchingLabels{renovate.LabelType: renovate.LabelTypeNudge}); err != nil {
			return false, err
		}
		if len(list.Items) != 1 || list.Items[0].IsPending() {
			return false, fmt.Errorf("%d runs", len(list.Items))
		}
		run = list.Items[0]
		return true, nil
	})
	for _, obj := range []ctrlclient.Object{&corev1.ConfigMap{}, &corev1.Secret{}} {
		require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: run.Name}, obj), "the run's %T", obj)
	}
	// The worker found the bundle in its own namespace (POD_NAMESPACE from the
	// downward API) and mounted a copy into the run.
	var ca corev1.ConfigMap
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: renovate.CAConfigMapName(run.Name)}, &ca), "the run's copy of the trusted CA bundle")
	require.Equal(t, string(bundle), ca.Data[renovate.CABundleKey])
	require.True(t, slices.ContainsFunc(run.Spec.PipelineSpec.Tasks[0].TaskSpec.Volumes, func(v corev1.Volume) bool {
		return v.ConfigMap != nil && v.ConfigMap.Name == ca.Name
	}), "the run mounts it")
	// The run is a stand-in: it writes what Renovate writes (the nudge branch with
	// the digest, its pull request), then ends as Tekton would.
	standInRenovate(t, appURL, digest)
	require.NoError(t, world.SetStatus(ctx, w.Kube, &run, func() {
		run.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue, Reason: "Succeeded"})
	}))

	c.checkForgeReceiverRefusesUnsigned(t)

	// Metrics, where the ServiceMonitor scrapes them: nudgeflow's, the Temporal SDK's,
	// controller-runtime's.
	bridgeSvc, workerSvc := c.m.service(t, "nudgeflow-bridge-metrics"), c.m.service(t, "nudgeflow-worker-metrics")
	var bridgeMetrics, workerMetrics string
	world.Eventually(t, scenarioWaitTimeout, "the nudge's outcome is counted", func() (bool, error) {
		workerMetrics = c.worker.metrics(workerSvc)
		return strings.Contains(workerMetrics, `nudgeflow_nudges_total{`) &&
			regexp.MustCompile(`nudgeflow_renovate_runs_total\{[^}]*outcome="succeeded"[^}]*\} 1`).MatchString(workerMetrics), nil
	})
	require.Regexp(t, `nudgeflow_nudges_total\{[^}]*mode="validated"[^}]*outcome="NudgeSucceeded"[^}]*\} 1`, workerMetrics)
	bridgeMetrics = c.bridge.metrics(bridgeSvc)
	for _, p := range []*pod{c.bridge, c.worker} {
		svc := map[*pod]*corev1.Service{c.bridge: bridgeSvc, c.worker: workerSvc}[p]
		code, body, err := scrape(p.t, p.metricsURL(svc), "")
		require.NoError(t, err)
		require.Equal(t, http.StatusUnauthorized, code, "%s refuses an anonymous scrape: %s", p.name, body)
		code, body, err = scrape(t, p.metricsURL(svc), serviceAccountToken(t, systemNamespace, "nudgeflow-worker"))
		require.NoError(t, err)
		require.Equal(t, http.StatusForbidden, code, "%s refuses a ServiceAccount not bound to nudgeflow-metrics-reader: %s", p.name, body)
	}
	require.Regexp(t, `nudgeflow_changegroups\{phase="Initialized"\} [1-9]`, bridgeMetrics)
	// Positive, not whole seconds: the scrape may come within a second of the group.
	require.Regexp(t, `nudgeflow_changegroup_oldest_waiting_seconds\{phase="Initialized"\} (0\.[0-9]*[1-9]|[1-9])`, bridgeMetrics, "the backlog gauges read the same cache")
	require.Regexp(t, `nudgeflow_forge_webhook_duration_seconds_count\{code="401",event="pull_request"\} 1`,
		c.receiver.receiverMetrics(c.m.service(t, "nudgeflow-receiver-metrics")), "the receiver measures its deliveries")
	for _, name := range []string{"controller_runtime_reconcile_total", "controller_runtime_webhook_latency_seconds_bucket", "temporal_request_total"} {
		require.Contains(t, bridgeMetrics, name+"{", "the bridge reports %s", name)
	}
	for _, name := range []string{"temporal_workflow_task_execution_latency_seconds_bucket", "temporal_activity_execution_latency_seconds_bucket", "rest_client_requests_total"} {
		require.Contains(t, workerMetrics, name+"{", "the worker reports %s", name)
	}

	t.Run("dashboard queries only metrics that exist", func(t *testing.T) {
		checkDashboard(t, bridgeMetrics+workerMetrics)
	})
	t.Run("alerts query only metrics that exist", func(t *testing.T) {
		checkAlertMetrics(t, bridgeMetrics+workerMetrics)
	})
	// Exported at 0 from the start, so the first one is an increase an alert sees.
	require.Regexp(t, `nudgeflow_admission_fail_open_total\{reason="edges-unread",webhook="build-routing"\} \d`, bridgeMetrics)
	require.Regexp(t, `leader_election_master_status\{name="nudgeflow-bridge"\} 1`, bridgeMetrics, "the one bridge leads")

	// Secrets stay out of logs and workflow histories; every line is JSON, for a
	// log collector (--log-format's default for both processes).
	for _, p := range []*pod{c.bridge, c.worker, c.receiver} {
		require.NotContains(t, p.logs(), forgeToken, "%s's log", p.name)
		require.NotContains(t, p.logs(), forgeWebhookSecret, "%s's log", p.name)
		requireJSONLines(t, p)
	}
	w.AssertNoSecretInHistories(t, forgeToken, forgeWebhookSecret)
}

// sdkMetricsOnEvents are Temporal SDK metrics the dashboard shows that appear only
// when something fails (go.temporal.io/sdk internal/common/metrics/constants.go):
// a scenario that works never reports them.
var sdkMetricsOnEvents = []string{
	"temporal_workflow_task_execution_failed_total",
	"temporal_activity_execution_failed_total",
	"temporal_request_failure_total",
}

// checkDashboard: every metric the dashboard queries is one nudgeflow declares, one
// the processes reported, or an SDK failure counter.
func checkDashboard(t *testing.T, scraped string) {
	raw, err := os.ReadFile(deployDir("monitoring", "nudgeflow.json"))
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	name := regexp.MustCompile(`\b(?:nudgeflow|temporal|controller_runtime|workqueue|rest_client)_[a-z0-9_]+`)
	var queried []string
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			for _, n := range name.FindAllString(target.Expr, -1) {
				if !slices.Contains(queried, n) {
					queried = append(queried, n)
				}
			}
		}
	}
	sort.Strings(queried)
	require.NotEmpty(t, queried)
	for _, n := range queried {
		known := slices.Contains(metrics.Declared(), n) || slices.Contains(sdkMetricsOnEvents, n) ||
			regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(n)+`[{ ]`).MatchString(scraped)
		require.True(t, known, "the dashboard queries %s, which no process reports", n)
	}
	for _, n := range metrics.Declared() {
		if strings.HasSuffix(n, "_sum") || strings.HasSuffix(n, "_count") {
			continue
		}
		require.Contains(t, queried, n, "the dashboard shows %s", n)
	}
}

// standInRenovate writes to repoURL what Renovate's nudge of lib@digest into app
// writes: the Dockerfile's digest on the nudge branch, and its pull request.
func standInRenovate(t *testing.T, repoURL, digest string) {
	t.Helper()
	ctx := context.Background()
	repo, err := forge.ParseRepoURL(repoURL)
	require.NoError(t, err)
	f, err := ghforge.New(forge.ClientOptions{Repo: repo, Token: forgeToken, Bot: forge.Signature{Name: landingforge.GitHubBot.Name, Email: landingforge.GitHubBot.Email}})
	require.NoError(t, err)
	head, ok, err := f.BranchHead(ctx, "main")
	require.NoError(t, err)
	require.True(t, ok)
	branch := renovate.BranchPrefix + "app-component-update-lib"
	_, err = f.Push(ctx, forge.Push{Branch: branch, Parent: head, Base: "main", Files: map[string][]byte{"Dockerfile": []byte("FROM quay.io/org/lib@" + digest + "\n")},
		Message: "Update lib"})
	require.NoError(t, err)
	_, err = f.CreatePR(ctx, forge.NewPR{Title: "Update lib", Head: branch, Base: "main", Body: "nudge"})
	require.NoError(t, err)
}

func newComponent(name, gitURL string, nudges ...string) *mirrorv1alpha1.Component {
	comp := &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mirrorv1alpha1.ComponentSpec{ComponentName: name, ContainerImage: "quay.io/org/" + name, BuildNudgesRef: nudges}}
	if gitURL != "" {
		comp.Spec.Source.GitSource = &mirrorv1alpha1.GitSource{URL: gitURL, Revision: "main"}
	}
	return comp
}

// runChangeGroup: a ChangeGroup in tenant namespace ns is admitted by the bridge's
// webhook, started by its reconciler (the leader: leader election works in the
// bridge's namespace), resolved and projected into status by the worker (both
// ServiceAccounts' ClusterRoleBindings hold).
func runChangeGroup(t *testing.T, ns string) {
	t.Helper()
	w := world.Get(t)
	ctx := context.Background()
	for _, obj := range []ctrlclient.Object{
		newComponent("bundle", "https://github.com/"+ns+"/bundle"),
		newComponent("operand", "", "bundle"),
		&appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "bundle-update"},
			Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "operand"}}}},
	} {
		obj.SetNamespace(ns)
		require.NoError(t, w.Kube.Create(ctx, obj), "creating %T %s (admission by the bridge)", obj, obj.GetName())
	}
	var cg appstudiov1alpha1.ChangeGroup
	world.Eventually(t, scenarioWaitTimeout, "the worker writes the ChangeGroup's status", func() (bool, error) {
		err := w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "bundle-update"}, &cg)
		return err == nil && cg.Status.WorkflowID != "" && cg.Status.Ready == "0/1", err
	})
	require.NotEmpty(t, cg.Finalizers, "the bridge took ownership")
}

// checkForgeReceiverRefusesUnsigned: the forge webhook receiver answers on its
// Service's port, over HTTPS with its serving certificate (what the Route
// re-encrypts to), and refuses an unsigned delivery.
func (c *cluster) checkForgeReceiverRefusesUnsigned(t *testing.T) {
	t.Helper()
	code, err := c.postToReceiver(t, "{}", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, code)
}

// receiverClient trusts the receiver's serving certificate (envtest's, prepared).
func receiverClient(t *testing.T) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(world.Get(t).ControlPlane.Env.WebhookInstallOptions.LocalServingCAData))
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// receiverURL is the receiver's delivery endpoint, where its Service sends.
func (c *cluster) receiverURL(t *testing.T) string {
	t.Helper()
	svc := c.m.service(t, "nudgeflow-receiver")
	return "https://" + c.receiver.addrOf(svc.Spec.Ports[0].TargetPort) + "/"
}

// postToReceiver POSTs body as a GitHub pull_request delivery (headers added to
// GitHub's), as the router forwards it.
func (c *cluster) postToReceiver(t *testing.T, body string, headers map[string]string) (int, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.receiverURL(t), strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-GitHub-Event", "pull_request")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := receiverClient(t).Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// receiverMetrics scrapes the receiver's metrics as the ServiceMonitor does
// (HTTPS; the receiver serves them without reviewing the token, which it has no
// credential for: its NetworkPolicy admits the monitoring namespaces only).
func (p *pod) receiverMetrics(svc *corev1.Service) string {
	p.t.Helper()
	code, body, err := scrape(p.t, p.metricsURL(svc), "")
	require.NoError(p.t, err)
	require.Equal(p.t, http.StatusOK, code, body)
	return body
}

// Konflux's GitOps repository installs nudgeflow under a namespace of its own
// (`namespace:` over the overlay): the bridge and the worker started from those
// manifests become ready, elect a leader and admit and run a ChangeGroup, each
// with only its ServiceAccount's permissions, bound in that namespace.
func TestRenamespacedManifestsAreTheProgram(t *testing.T) {
	w := world.Get(t)
	_, webhookPort, _ := w.WebhookServer()
	v := findVariant(t, renamespacedVariants(t), "cert-manager")
	c := startCluster(t, v, w.Temporal.Address, webhookPort)
	for _, p := range []*pod{c.bridge, c.worker, c.receiver} {
		require.Equal(t, otherNamespace, p.env["POD_NAMESPACE"], "%s runs in %s", p.name, otherNamespace)
	}
	runChangeGroup(t, w.Namespace(t))
	c.checkForgeReceiverRefusesUnsigned(t)
	world.Eventually(t, scenarioWaitTimeout, "the bridge holds its leader election Lease in its namespace", func() (bool, error) {
		var leases coordinationv1.LeaseList
		if err := w.Kube.List(context.Background(), &leases, ctrlclient.InNamespace(otherNamespace)); err != nil {
			return false, err
		}
		for _, l := range leases.Items {
			if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d leases", len(leases.Items))
	})
	require.NotContains(t, c.bridge.logs(), "forbidden", "the bridge is refused nothing")
	require.NotContains(t, c.worker.logs(), "forbidden", "the worker is refused nothing")
	require.NotContains(t, c.receiver.logs(), "403", "the bridge serves its API to the receiver of its own namespace")
}

// webhookRequests is how many admission requests the bridge answered on a webhook
// path (controller-runtime's controller_runtime_webhook_requests_total).
func (c *cluster) webhookRequests(t *testing.T, path string) int {
	t.Helper()
	body := c.bridge.metrics(c.m.service(t, "nudgeflow-bridge-metrics"))
	re := regexp.MustCompile(`(?m)^controller_runtime_webhook_requests_total\{[^}]*webhook="` + regexp.QuoteMeta(path) + `"[^}]*\} ([0-9]+)$`)
	n := 0
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		v, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		n += v
	}
	return n
}

// The API server calls the bridge's PipelineRun webhooks, as deploy/base scopes
// them, only for the runs each acts on: interception for nudge runs, build routing
// for build runs, neither for any other PipelineRun nor in nudgeflow's own
// namespace.
func TestPipelineRunWebhooksCallTheBridgeForTheirRunsOnly(t *testing.T) {
	w := world.Get(t)
	c := shippedCluster(t)
	ctx := context.Background()
	tenant := w.Namespace(t)
	run := func(ns, name string, labels map[string]string) {
		t.Helper()
		plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "any"}}}
		require.NoError(t, w.Kube.Create(ctx, plr))
	}
	nudgeLabel := map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue}
	buildLabel := map[string]string{builds.LabelPipelineType: builds.PipelineTypeBuild, builds.LabelComponent: "lib"}
	// calls waits until the counts reach at least want, then checks they are exactly want.
	calls := func(why string, wantNudge, wantBuild int) {
		t.Helper()
		world.Eventually(t, time.Minute, why, func() (bool, error) {
			n, b := c.webhookRequests(t, changegroupcontroller.InterceptPath), c.webhookRequests(t, builds.HoldPath)
			if n < wantNudge || b < wantBuild {
				return false, fmt.Errorf("interception %d, build routing %d", n, b)
			}
			return true, nil
		})
		require.Equal(t, wantNudge, c.webhookRequests(t, changegroupcontroller.InterceptPath), why)
		require.Equal(t, wantBuild, c.webhookRequests(t, builds.HoldPath), why)
	}
	nudges, buildRuns := c.webhookRequests(t, changegroupcontroller.InterceptPath), c.webhookRequests(t, builds.HoldPath)

	// Unlabelled runs (a tenant's own pipeline, a test) and runs of other types:
	// no call. The nudge run after them is the marker the counts wait for.
	run(tenant, "tenant-pipeline", nil)
	run(tenant, "integration-test", map[string]string{"pipelinerun.tekton.dev/type": "test", builds.LabelPipelineType: "test"})
	run(tenant, "nudge", nudgeLabel)
	calls("only the nudge run reaches the interception webhook", nudges+1, buildRuns)

	run(tenant, "build", buildLabel)
	calls("only the build run reaches the build routing webhook", nudges+1, buildRuns+1)

	// In nudgeflow's own namespace neither is called, whatever the labels.
	run(systemNamespace, "nudge-in-nudgeflow", nudgeLabel)
	run(systemNamespace, "build-in-nudgeflow", buildLabel)
	run(tenant, "marker", nudgeLabel)
	calls("nothing in nudgeflow's namespace reaches the bridge", nudges+2, buildRuns+1)
}
