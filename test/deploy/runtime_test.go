package deploy_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"knative.dev/pkg/apis"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
	nfworker "github.com/nudgeflow/nudgeflow/worker"
)

// metricsURL is the HTTPS address of the port a metrics Service targets.
func (p *pod) metricsURL(svc *corev1.Service) string {
	return "https://" + strings.TrimPrefix(p.url(svc.Spec.Ports[0].TargetPort, "/metrics"), "http://")
}

var (
	scrapeClientOnce sync.Once
	scrapeHTTP       *http.Client
)

// scrape GETs url with a bearer token ("" for none), trusting only the CA of the
// serving certificates prepared puts into the Secrets the processes mount, as the
// ServiceMonitors trust only their overlay's CA: a process that served a
// self-signed certificate instead (its --metrics-cert-dir not the mounted Secret)
// fails the handshake.
func scrape(t *testing.T, url, token string) (int, string, error) {
	scrapeClientOnce.Do(func() {
		pool := x509.NewCertPool()
		require.True(t, pool.AppendCertsFromPEM(world.Get(t).ControlPlane.Env.WebhookInstallOptions.LocalServingCAData))
		scrapeHTTP = &http.Client{Timeout: 10 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	})
	return getWith(scrapeHTTP, url, token)
}

// getWith answers a GET through c, with a bearer token unless it is "", with its
// status and body.
func getWith(c *http.Client, url, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// serviceAccountToken is a token the API server issues for the ServiceAccount
// (TokenRequest), as the kubelet mounts into its pods.
func serviceAccountToken(t *testing.T, namespace, name string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	require.NoError(t, world.Get(t).Kube.SubResource("token").Create(context.Background(), sa, tr), "a token for %s/%s", namespace, name)
	return tr.Status.Token
}

// scraperNamespace holds the Prometheus stand-in.
const scraperNamespace = "prometheus-stand-in"

var (
	scraperOnce sync.Once
	scraperTok  string
)

// scraperToken is the token of a Prometheus stand-in: a ServiceAccount bound to
// the shipped ClusterRole nudgeflow-metrics-reader, as deploy/base/metrics-reader.yaml
// tells an operator to bind Prometheus's.
func scraperToken(t *testing.T) string {
	t.Helper()
	scraperOnce.Do(func() {
		ctx, kube := context.Background(), world.Get(t).Kube
		// Prometheus runs in a monitoring namespace of its own, never in
		// nudgeflow's (which a re-namespaced install does not even create).
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scraperNamespace}}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: scraperNamespace, Name: "prometheus-stand-in"}}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-stand-in-metrics-reader"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "nudgeflow-metrics-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: scraperNamespace, Name: sa.Name}}}
		for _, obj := range []ctrlclient.Object{ns, sa, binding} {
			if err := kube.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				require.NoError(t, err)
			}
		}
		scraperTok = serviceAccountToken(t, scraperNamespace, sa.Name)
	})
	require.NotEmpty(t, scraperTok)
	return scraperTok
}

// creator creates objects in ns through the API server (and so the bridge's
// admission webhooks).
func creator(t *testing.T, ns string) func(ctrlclient.Object) {
	return func(obj ctrlclient.Object) {
		t.Helper()
		obj.SetNamespace(ns)
		require.NoError(t, world.Get(t).Kube.Create(context.Background(), obj), "creating %T %s (admission by the bridge)", obj, obj.GetName())
	}
}

// pushBuild is a push build PipelineRun of component at commit, as Konflux's build
// pipelines label and annotate them.
func pushBuild(name, component, commit string) *tektonv1.PipelineRun {
	return &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels:      map[string]string{builds.LabelComponent: component, builds.LabelPipelineType: builds.PipelineTypeBuild, builds.KeyEventType: "push"},
		Annotations: map[string]string{builds.KeyEventType: "push", builds.AnnotationRepo: "https://github.com/org/" + component + "/tree/" + commit}},
		Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "docker-build"}}}
}

// built marks the build succeeded with its image results, as Tekton does.
func built(t *testing.T, build *tektonv1.PipelineRun, image, digest string) {
	t.Helper()
	start := metav1.Now()
	require.NoError(t, world.SetStatus(context.Background(), world.Get(t).Kube, build, func() {
		build.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue, Reason: "Succeeded"})
		build.Status.StartTime = &start
		build.Status.Results = []tektonv1.PipelineRunResult{
			{Name: builds.ResultImageURL, Value: *tektonv1.NewStructuredValues(image)},
			{Name: builds.ResultImageDigest, Value: *tektonv1.NewStructuredValues(digest)},
		}
	}))
}

// requireJSONLines: every line p wrote is a JSON object.
func requireJSONLines(t *testing.T, p *pod) {
	t.Helper()
	logs := strings.TrimSpace(p.logs())
	require.NotEmpty(t, logs, "%s logs", p.name)
	for _, line := range strings.Split(logs, "\n") {
		require.True(t, json.Valid([]byte(line)) && strings.HasPrefix(line, "{"), "%s logs JSON, not %q", p.name, line)
	}
}

// The worker's stop timeout fits in its pod's grace period: the kubelet's SIGKILL
// comes after the drain, not in the middle of it.
func TestWorkerDrainFitsTheGracePeriod(t *testing.T) {
	for _, v := range variants(t) {
		d := v.objs.deployment(t, "nudgeflow-worker")
		c := d.Spec.Template.Spec.Containers[0]
		stop := nfworker.DefaultStopTimeout
		if s, ok := argValue(c.Args, "worker-stop-timeout"); ok {
			var err error
			stop, err = time.ParseDuration(s)
			require.NoError(t, err)
		}
		grace := time.Duration(ptr.Deref(d.Spec.Template.Spec.TerminationGracePeriodSeconds, 30)) * time.Second
		require.GreaterOrEqual(t, grace-stop, 5*time.Second, "%s: the worker drains for %s of its %s grace period, leaving time to close", v.name, stop, grace)
	}
}

// A Temporal outage while the pods restart: started from the manifests while
// nothing answers at Temporal's address, both processes stay up (liveness passes);
// the bridge becomes ready and its admission webhooks answer (a push build created
// through the API server is held by the build-routing finalizer at admission: kept
// for later, never lost) while the worker reports not ready. When Temporal comes
// up at that address, the worker becomes ready and polls, and the bridge delivers
// the held build (routed and released).
func TestPodsStartAndServeDuringATemporalOutage(t *testing.T) {
	w := world.Get(t)
	_, webhookPort, _ := w.WebhookServer()
	port, err := localenv.FreePort()
	require.NoError(t, err)
	address := fmt.Sprintf("127.0.0.1:%d", port) // nothing listens here yet
	c := startPods(t, findVariant(t, variants(t), "cert-manager"), address, webhookPort)
	bridge, worker := c.bridge, c.worker
	bridge.waitReady(startupTimeout)

	ctx := context.Background()
	create := creator(t, w.Namespace(t))
	for _, name := range []string{"lib", "app"} {
		create(&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: name, ContainerImage: "quay.io/org/" + name}})
	}
	create(&konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName},
		Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: []konfluxv1alpha1.NudgeRelationship{
			{From: "lib", To: "app", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "gate"}}}})
	build := pushBuild("lib-on-push-outage", "lib", strings.Repeat("2", 40))
	create(build)
	// What the API server answered the create with is what the webhooks admitted:
	// the reconciler cannot have acted yet.
	require.True(t, builds.Holds(build), "the build-routing webhook answered during the outage and held the build: %v", build.Finalizers)
	built(t, build, "quay.io/org/lib:outage", "sha256:"+strings.Repeat("cd", 32))

	// The worker waits: alive, answering its probes, not ready.
	worker.waitReadiness(http.StatusServiceUnavailable, startupTimeout)
	for _, p := range []*pod{bridge, worker} {
		code, body, err := p.probe(p.container.LivenessProbe)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, "%s stays alive: %s", p.name, body)
		require.False(t, p.exited(), "%s keeps running", p.name)
	}
	// The build stays held while its signal cannot be delivered.
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(build), build))
	require.True(t, builds.Holds(build) && !builds.Acknowledged(build), "held, not routed, while Temporal is down")

	logs, err := os.Create(filepath.Join(w.LogDir, "outage-temporal.log"))
	require.NoError(t, err)
	defer logs.Close()
	tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	temporal, err := localenv.StartTemporal(tctx, localenv.TemporalOptions{Port: port, Log: logs})
	require.NoError(t, err)
	defer func() { _ = temporal.Stop() }()

	worker.waitReady(startupTimeout)
	world.Eventually(t, scenarioWaitTimeout, "the bridge delivers the held build once Temporal answers", func() (bool, error) {
		err := w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(build), build)
		return err == nil && builds.Settled(build), err
	})
	for _, p := range []*pod{bridge, worker} {
		require.False(t, p.exited(), "%s never restarted", p.name)
		requireJSONLines(t, p)
	}
}
