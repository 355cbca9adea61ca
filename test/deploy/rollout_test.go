package deploy_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"knative.dev/pkg/apis"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/bench"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// The rollout's figures. rolloutSeeded routed builds stand in the bridges' cache;
// slowFirstList is how long the API server takes to answer each informer's list
// (at 100,000 PipelineRuns it is minutes, docs/performance.md): longer than the
// API server's 5 s call of a webhook, so a bridge that answered admission before
// its caches synced would fail open.
const (
	rolloutSeeded = 200
	slowFirstList = 7 * time.Second
	streamPeriod  = 300 * time.Millisecond
)

// rolloutPLRsEnv, when set, runs the rollout at a cluster's scale, by hand
// (docs/performance.md): its count of PipelineRuns of a Konflux cluster's mix
// (test/bench's bridge-scale runs, 29 KB each, three quarters of them builds and
// nudges the bridges cache) is written into etcd in place of the rolloutSeeded
// routed builds, and the package's API server runs as the bench's
// (bench.ScaleControlPlane: no watch cache for PipelineRuns, so each first list
// is read from etcd and takes minutes at 100,000, as measured there).
const rolloutPLRsEnv = "NUDGEFLOW_ROLLOUT_PLRS"

// rolloutScale is the count rolloutPLRsEnv asks for; zero when it is unset.
func rolloutScale() (int, error) {
	v := os.Getenv(rolloutPLRsEnv)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive count of PipelineRuns", rolloutPLRsEnv, v)
	}
	return n, nil
}

// rolloutWait is how long a replica may take to list its caches and be ready (and
// the --cache-sync-timeout it is given at scale), and the stream's builds to be
// routed once the rollout is over: 30 ms a PipelineRun on this machine's 2 shared
// cores, where one bridge's first lists of 100,000 took 548 s and the two first
// replicas list at once.
func rolloutWait(plrs int) time.Duration {
	return startupTimeout + time.Duration(plrs)*30*time.Millisecond
}

// A rolling replacement of the bridge's two replicas, as a Deployment performs it
// from deploy/base (maxSurge 1, maxUnavailable 0, minReadySeconds, the preStop
// sleep), while nudge and build PipelineRuns are created all along. The test world
// has no endpoints controller nor kube-proxy: a front on the webhooks' address
// forwards each call to a replica whose readiness probe answers 200 and that
// is not terminating, as a Service does. Every bridge is the shipped Deployment's
// program, its informers' lists slowed down. No create is let through un-held (a
// nudge a ChangeGroup or a validated edge holds runs cancelled; a build of a
// component with edges is held at creation), and every build is routed.
func TestBridgeRolloutKeepsTheHooksUp(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	v := findVariant(t, variants(t), "cert-manager")
	prepared(t, v)
	d := v.objs.deployment(t, "nudgeflow-bridge")
	c := d.Spec.Template.Spec.Containers[0]
	require.NotNil(t, c.Lifecycle, "the bridge has a preStop hook")
	require.NotNil(t, c.Lifecycle.PreStop.Sleep, "the bridge's preStop hook is a sleep")
	preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	minReady := time.Duration(d.Spec.MinReadySeconds) * time.Second
	require.Positive(t, minReady, "the bridge's Deployment sets minReadySeconds")

	ns := w.Namespace(t)
	create := creator(t, ns)
	create(newComponent("bundle", "https://github.com/"+ns+"/bundle"))
	create(newComponent("operand", "", "bundle"))
	create(newComponent("lib", ""))
	create(newComponent("app", ""))
	plrs, err := rolloutScale()
	require.NoError(t, err)
	atScale := plrs > 0
	if atScale {
		took, err := bench.SeedScaleRuns(ctx, w.ControlPlane, plrs, t.Logf)
		require.NoError(t, err, "seeding %d PipelineRuns", plrs)
		t.Logf("%d PipelineRuns written into etcd in %s", plrs, took.Round(time.Second))
	} else {
		plrs = rolloutSeeded
		for i := range rolloutSeeded {
			run := pushBuild(fmt.Sprintf("seed-on-push-%d", i), "seed", fmt.Sprintf("%040d", i))
			run.Annotations[konflux.AnnotationNudgeRouted] = builds.RoutedNoEdges
			create(run)
		}
	}
	wait := rolloutWait(plrs)
	if atScale {
		// Where the first lists are slower than the default allows, the operator
		// raises --cache-sync-timeout (deploy/README.md), as this Deployment does.
		d = d.DeepCopy()
		c := &d.Spec.Template.Spec.Containers[0]
		c.Args = append(c.Args, "--cache-sync-timeout="+wait.String())
		// The test world serves the new-model Component for other packages' tests,
		// so --new-form-keys=auto would cache the new form too; the seeded runs are
		// old-form only, as in a Konflux cluster without the new model, where auto
		// says off. Stated, not decided by the world's CRDs.
		c.Args = append(c.Args, "--new-form-keys=off")
	}

	api := startSlowLists(t, slowFirstList)
	host, webhookPort, _ := w.WebhookServer()
	front := startReadyFront(t, net.JoinHostPort(host, fmt.Sprint(webhookPort)))
	start := func(name string) *pod {
		wl := deploymentPod(d)
		wl.name = name
		port, err := localenv.FreePort()
		require.NoError(t, err)
		p := startPod(t, v.objs, wl, podOptions{temporalAddress: w.Temporal.Address, webhookPort: port, kubeconfig: api.kubeconfig(t)})
		front.add(p, fmt.Sprintf("127.0.0.1:%d", port))
		return p
	}
	olds := []*pod{start("nudgeflow-bridge-old-0"), start("nudgeflow-bridge-old-1")}
	for _, p := range olds {
		p.waitReady(wait)
		front.waitRouting(t, p)
	}
	// What holds the stream's nudges: a ChangeGroup (operand -> bundle) and a
	// validated edge (lib -> app), both admitted by the bridges' validating hooks.
	create(&appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "bundle-update"},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "operand"}}}})
	create(&konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName},
		Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: []konfluxv1alpha1.NudgeRelationship{
			{From: "lib", To: "app", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "gate"}}}})
	// Both replicas hold with both (their caches have the group and the edge).
	world.Eventually(t, time.Minute, "a nudge of each kind is held", func() (bool, error) {
		for _, n := range [][2]string{{"operand", "bundle"}, {"lib", "app"}} {
			plr := nudgeRun(ns, n[0], n[1])
			if err := w.Kube.Create(ctx, plr, ctrlclient.DryRunAll); err != nil {
				return false, err
			}
			if plr.Spec.Status != tektonv1.PipelineRunSpecStatusCancelled {
				return false, fmt.Errorf("the nudge %s -> %s is not held yet", n[0], n[1])
			}
		}
		return true, nil
	})

	s := startStream(t, ns)
	for i, old := range olds {
		started := time.Now()
		nw := start(fmt.Sprintf("nudgeflow-bridge-new-%d", i))
		// Up (its webhook server and probes serve) but not ready while it lists
		// (controller-runtime answers a failed check with 500).
		nw.waitReadiness(http.StatusInternalServerError, startupTimeout)
		nw.waitReady(wait)
		front.waitRouting(t, nw)
		require.GreaterOrEqual(t, time.Since(started), slowFirstList, "%s is ready only once its informers' lists are in", nw.name)
		// The Deployment controller counts the new pod available minReadySeconds
		// after it became ready, and only then removes an old one: the endpoint
		// first (the front stops sending new connections), then the kubelet runs
		// the preStop sleep and sends SIGTERM.
		s.waitRounds(t, minReady)
		front.terminate(old)
		s.waitRounds(t, preStop)
		front.report(old)
		old.stop()
	}
	// A little more stream after the last old replica left.
	s.waitRounds(t, 3*time.Second)
	s.stop()
	require.Empty(t, s.errs(), "the stream's creates and status updates")

	routed := s.waitRouted(t, max(3*time.Minute, wait))
	for _, p := range front.pods() {
		front.report(p)
	}
	nudges, buildRuns, failOpen := s.counts()
	fmt.Printf("bridge-rollout plrs=%d creates=%d fail_open=%d unrouted_s=%.1f\n", plrs, nudges+buildRuns, failOpen, routed.Seconds())
	require.Positive(t, nudges)
	require.Positive(t, buildRuns)
	require.Zero(t, failOpen, "every nudge created during the rollout was held, every build held at creation: %s", strings.Join(s.failedOpen(), "; "))
	require.Zero(t, front.unrouted.Load(), "the front always had a ready replica to send to, which answered")
}

// nudgeRun is build-service's nudge PipelineRun of source's build into target.
func nudgeRun(ns, source, target string) *tektonv1.PipelineRun {
	return &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "renovate-pipeline-", Namespace: ns,
			Labels:      map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue},
			Annotations: map[string]string{konflux.AnnotationNudging: source, konflux.AnnotationNudged: target}},
		Spec: tektonv1.PipelineRunSpec{PipelineSpec: &tektonv1.PipelineSpec{Tasks: []tektonv1.PipelineTask{{Name: "renovate"}}}},
	}
}

// stream creates, every streamPeriod, a nudge a ChangeGroup holds, a nudge a
// validated edge holds and a push build of a component with an edge, which it then
// marks built (Tekton's status). It records what admission made of each.
type stream struct {
	ns   string
	done chan struct{}
	wg   sync.WaitGroup

	mu             sync.Mutex
	nudges, builds int
	failOpen       []string
	built          map[string]time.Time // build name -> when it succeeded
	routed         map[string]time.Time // build name -> when poll saw it routed
	errors         []error
}

func startStream(t *testing.T, ns string) *stream {
	s := &stream{ns: ns, done: make(chan struct{}), built: map[string]time.Time{}, routed: map[string]time.Time{}}
	kube := world.Get(t).Kube
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		for {
			select {
			case <-s.done:
				return
			case <-time.After(250 * time.Millisecond):
			}
			_, err := s.poll(kube)
			s.record(err, func() {})
		}
	}()
	go func() {
		defer s.wg.Done()
		ctx := context.Background()
		tick := time.NewTicker(streamPeriod)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
			for _, n := range [][2]string{{"operand", "bundle"}, {"lib", "app"}} {
				plr := nudgeRun(ns, n[0], n[1])
				err := kube.Create(ctx, plr)
				s.record(err, func() {
					s.nudges++
					if plr.Spec.Status != tektonv1.PipelineRunSpecStatusCancelled {
						s.failOpen = append(s.failOpen, fmt.Sprintf("nudge %s (%s -> %s) not held", plr.Name, n[0], n[1]))
					}
				})
			}
			build := pushBuild(fmt.Sprintf("lib-on-push-%d", i), "lib", fmt.Sprintf("%040x", i))
			build.Namespace = ns
			err := kube.Create(ctx, build)
			s.record(err, func() {
				s.builds++
				if !builds.Holds(build) {
					s.failOpen = append(s.failOpen, "build "+build.Name+" not held at creation")
				}
			})
			if err != nil {
				continue
			}
			digest := fmt.Sprintf("sha256:%064x", i)
			err = world.SetStatus(ctx, kube, build, func() {
				now := metav1.Now()
				build.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue, Reason: "Succeeded"})
				build.Status.StartTime, build.Status.CompletionTime = &now, &now
				build.Status.Results = []tektonv1.PipelineRunResult{
					{Name: builds.ResultImageURL, Value: *tektonv1.NewStructuredValues("quay.io/org/lib:" + fmt.Sprint(i))},
					{Name: builds.ResultImageDigest, Value: *tektonv1.NewStructuredValues(digest)},
				}
			})
			s.record(err, func() { s.built[build.Name] = time.Now() })
		}
	}()
	return s
}

func (s *stream) record(err error, ok func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.errors = append(s.errors, err)
		return
	}
	ok()
}

// waitRounds waits until the stream has made the rounds it makes in d (three
// creates a round, one round a streamPeriod at most): minReadySeconds and the
// preStop sleep are windows of traffic, and the ticker cannot run faster than its
// period, so at least d has passed too, however slow the machine.
func (s *stream) waitRounds(t *testing.T, d time.Duration) {
	t.Helper()
	nudges, buildRuns, _ := s.counts()
	want := nudges + buildRuns + 3*int(d/streamPeriod)
	world.Eventually(t, max(10*d, 2*time.Minute), fmt.Sprintf("the stream's creates reach %d", want), func() (bool, error) {
		if nudges, buildRuns, _ := s.counts(); nudges+buildRuns < want {
			return false, fmt.Errorf("%d creates", nudges+buildRuns)
		}
		return true, nil
	})
}

func (s *stream) stop() {
	close(s.done)
	s.wg.Wait()
}

func (s *stream) errs() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errors
}

func (s *stream) counts() (nudges, buildRuns, failOpen int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nudges, s.builds, len(s.failOpen)
}

func (s *stream) failedOpen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failOpen
}

// poll notes the built builds it sees routed (acknowledged and released), and
// returns those not routed yet. It reads them one by one: a list of the namespace
// would read every nudge and build of the stream, from etcd at scale, four times
// a second.
func (s *stream) poll(kube ctrlclient.Client) ([]string, error) {
	s.mu.Lock()
	var unseen []string
	for name := range s.built {
		if _, ok := s.routed[name]; !ok {
			unseen = append(unseen, name)
		}
	}
	s.mu.Unlock()
	var waiting []string
	for _, name := range unseen {
		var b tektonv1.PipelineRun
		if err := kube.Get(context.Background(), ctrlclient.ObjectKey{Namespace: s.ns, Name: name}, &b); err != nil {
			return nil, err
		}
		if !builds.Settled(&b) {
			waiting = append(waiting, name)
			continue
		}
		s.mu.Lock()
		s.routed[name] = time.Now()
		s.mu.Unlock()
	}
	return waiting, nil
}

// waitRouted waits until every built build is routed and returns the longest a
// build waited for it after it succeeded (to a quarter second: the polling).
func (s *stream) waitRouted(t *testing.T, timeout time.Duration) time.Duration {
	t.Helper()
	kube := world.Get(t).Kube
	world.Eventually(t, timeout, "every build of the stream is routed", func() (bool, error) {
		waiting, err := s.poll(kube)
		if err != nil {
			return false, err
		}
		if len(waiting) > 0 {
			return false, fmt.Errorf("%d builds not routed yet (%s)", len(waiting), strings.Join(waiting[:min(len(waiting), 5)], ", "))
		}
		return true, nil
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	var longest time.Duration
	for name, at := range s.built {
		longest = max(longest, s.routed[name].Sub(at))
	}
	return longest
}

// readyFront is what a Service and its EndpointSlice do for the webhooks' address:
// calls go to a replica whose readiness probe answers 200 and that is not
// terminating (a kubelet probes them here every half second; the manifests' period
// is 10 s). It picks a replica per call, round robin, where a Service picks one per
// connection: harsher, as a replica takes its share of the calls as soon as it is
// ready. It serves the webhooks' certificate and calls the replicas over TLS.
type readyFront struct {
	t        *testing.T
	srv      *http.Server
	mu       sync.Mutex
	backends []*backend
	next     int
	// unrouted counts calls no ready replica took, or whose replica failed to
	// answer (the API server's call then fails, and a hook with failurePolicy
	// Ignore fails open).
	unrouted atomic.Int64
	done     chan struct{}
}

type backend struct {
	p                  *pod
	proxy              *httputil.ReverseProxy
	readyURL           string
	ready, terminating bool
	// added is when the replica started (it is added behind the front at once),
	// readyAt when its readiness first answered 200.
	added, readyAt time.Time
}

func startReadyFront(t *testing.T, addr string) *readyFront {
	w := world.Get(t)
	_, _, certDir := w.WebhookServer()
	cert, err := tls.LoadX509KeyPair(filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"))
	require.NoError(t, err)
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err, "the front listens where the API server calls the webhooks")
	f := &readyFront{t: t, done: make(chan struct{})}
	f.srv = &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() { _ = f.srv.ServeTLS(l, "", "") }()
	go f.probe()
	t.Cleanup(f.close)
	return f
}

// add puts p, serving its webhooks on addr, behind the front.
func (f *readyFront) add(p *pod, addr string) {
	f.t.Helper()
	pool := x509.NewCertPool()
	require.True(f.t, pool.AppendCertsFromPEM(world.Get(f.t).ControlPlane.Env.WebhookInstallOptions.LocalServingCAData))
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "https", Host: addr})
	proxy.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
		f.unrouted.Add(1)
		http.Error(w, fmt.Sprintf("%s: %v", p.name, err), http.StatusBadGateway)
	}
	probe := p.container.ReadinessProbe.HTTPGet
	b := &backend{p: p, proxy: proxy, readyURL: p.url(probe.Port, probe.Path), added: time.Now()}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.backends = append(f.backends, b)
}

// waitRouting waits until the front sends calls to p.
func (f *readyFront) waitRouting(t *testing.T, p *pod) {
	t.Helper()
	world.Eventually(t, time.Minute, "the front sends to "+p.name, func() (bool, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, b := range f.backends {
			if b.p == p {
				return b.ready && !b.terminating, nil
			}
		}
		return false, fmt.Errorf("%s is not behind the front", p.name)
	})
}

// pods are the replicas behind the front that still run.
func (f *readyFront) pods() []*pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*pod
	for _, b := range f.backends {
		if !b.p.exited() {
			out = append(out, b.p)
		}
	}
	return out
}

// report logs how long p took from its start to ready (its caches' first lists)
// and its memory: VmRSS now and VmHWM, the peak (the first lists' pages).
func (f *readyFront) report(p *pod) {
	f.mu.Lock()
	var ready time.Duration
	for _, b := range f.backends {
		if b.p == p && !b.readyAt.IsZero() {
			ready = b.readyAt.Sub(b.added)
		}
	}
	f.mu.Unlock()
	rss, peak, err := bench.ProcessMemory(p.cmd.Process.Pid)
	if err != nil {
		f.t.Logf("%s: %v", p.name, err)
	}
	f.t.Logf("%s ready_s=%.1f rss_mib=%.0f peak_rss_mib=%.0f", p.name, ready.Seconds(), float64(rss)/(1<<20), float64(peak)/(1<<20))
}

// terminate takes p out of the endpoints: no new call goes to it.
func (f *readyFront) terminate(p *pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.backends {
		if b.p == p {
			b.terminating = true
		}
	}
}

func (f *readyFront) probe() {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-f.done:
			return
		case <-tick.C:
		}
		f.mu.Lock()
		bs := append([]*backend(nil), f.backends...)
		f.mu.Unlock()
		for _, b := range bs {
			ready := false
			if !b.p.exited() {
				code, _, err := httpGet(b.readyURL)
				ready = err == nil && code == http.StatusOK
			}
			f.mu.Lock()
			b.ready = ready
			if ready && b.readyAt.IsZero() {
				b.readyAt = time.Now()
			}
			f.mu.Unlock()
		}
	}
}

// pick is the next ready, not terminating replica, round robin.
func (f *readyFront) pick() *backend {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range f.backends {
		b := f.backends[f.next%len(f.backends)]
		f.next++
		if b.ready && !b.terminating {
			return b
		}
	}
	return nil
}

func (f *readyFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b := f.pick()
	if b == nil {
		f.unrouted.Add(1)
		http.Error(w, "no ready bridge", http.StatusServiceUnavailable)
		return
	}
	b.proxy.ServeHTTP(w, r)
}

func (f *readyFront) close() {
	close(f.done)
	_ = f.srv.Close()
}

// slowLists stands between the bridges and the API server and answers the first
// page of every list (a GET with a limit: the informers' lists) after delay, as a
// large cluster's API server takes its time; everything else passes at once. It
// forwards with the administrator's credentials and the pod kubeconfig's
// impersonation headers, so the pod keeps exactly its ServiceAccount's rights.
type slowLists struct {
	srv *httptest.Server
}

func startSlowLists(t *testing.T, delay time.Duration) *slowLists {
	cfg, err := clientcmd.BuildConfigFromFlags("", admin(t))
	require.NoError(t, err)
	rt, err := rest.TransportFor(cfg)
	require.NoError(t, err)
	target, err := url.Parse(cfg.Host)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = rt
	proxy.FlushInterval = -1 // watches stream
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.Method == http.MethodGet && q.Has("limit") && !q.Has("continue") && q.Get("watch") != "true" {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return &slowLists{srv: srv}
}

// kubeconfig rewrites a pod's kubeconfig to reach the API server through s.
func (s *slowLists) kubeconfig(t *testing.T) func(string) string {
	return func(path string) string {
		cfg, err := clientcmd.LoadFromFile(path)
		require.NoError(t, err)
		for _, c := range cfg.Clusters {
			c.Server = s.srv.URL
			c.CertificateAuthorityData, c.CertificateAuthority = nil, ""
		}
		for _, a := range cfg.AuthInfos {
			// The front authenticates; the pod's client only says whom to impersonate.
			a.ClientCertificateData, a.ClientKeyData, a.ClientCertificate, a.ClientKey, a.Token = nil, nil, "", "", ""
		}
		out := filepath.Join(t.TempDir(), "kubeconfig-slow-lists")
		require.NoError(t, clientcmd.WriteToFile(*cfg, out))
		return out
	}
}
