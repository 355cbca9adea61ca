package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/bridge/changegroupcontroller"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/test/localenv"
)

const (
	// bridgeMemoryLimit is the bridge's memory limit in deploy/, bridgeGOMEMLIMIT
	// and bridgeGOGC its GOMEMLIMIT and GOGC there
	// (TestBridgeScaleRunsTheBridgeAsDeployed).
	bridgeMemoryLimit = "512MiB"
	bridgeGOMEMLIMIT  = "448MiB"
	bridgeGOGC        = "25"
	nsScaleProbe      = "bench-scale-probe"
	// bridgeRSSCeiling stops a bridge that outgrows four times its pod's limit (in
	// the pod it was OOMKilled long before): the machine is shared.
	bridgeRSSCeiling = 2 << 30
)

// benchBridgeScale: PipelineRuns PipelineRuns like a Konflux cluster's (see
// scaleRun) are in the API server; `nudgeflow bridge` starts as its own process
// (each of BridgeBinaries in turn, on the same runs), with the memory limit deploy/
// gives it, and the measure reads:
//   - sync_s: from the process's start until every controller's informers have
//     listed and started their workers (the bridge's log), its cold start;
//   - intercept_p99_ms: the interception webhook's own time (the bridge's
//     nudgeflow_admission_duration_seconds) for Samples nudge PipelineRuns created
//     one after the other, interleaved with as many push builds that pass the
//     build-routing webhook (their p99 as the API client saw the create is logged);
//   - rss_mib: the process's VmRSS once a garbage collection ran after the samples
//     (steady: what the informers keep), with VmHWM, the peak of the initial list,
//     logged beside it.
//
// The in-process bridge is stopped first (it would cache the runs too) and the
// measure runs last: every measure after it would run beside 100,000 PipelineRuns.
func (s *stack) benchBridgeScale(ctx context.Context) error {
	if err := s.stopMgr(); err != nil {
		return fmt.Errorf("stopping the in-process bridge: %w", err)
	}
	created, err := s.createScaleRuns(ctx)
	if err != nil {
		return err
	}
	s.progress("%d PipelineRuns created with their status in %s (%.0f per second)", s.opts.PipelineRuns, created.Round(time.Second),
		float64(s.opts.PipelineRuns)/created.Seconds())
	if err := s.kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsScaleProbe}}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", nsScaleProbe, err)
	}
	binaries := s.opts.BridgeBinaries
	if len(binaries) == 0 {
		binaries = []string{s.self}
	}
	for n, binary := range binaries {
		if err := s.measureBridgeProcess(ctx, binary, n); err != nil {
			return fmt.Errorf("bridge %s: %w", binary, err)
		}
	}
	return nil
}

// createScaleRuns seeds the measure's runs (SeedScaleRuns). The bridge is down.
func (s *stack) createScaleRuns(ctx context.Context) (time.Duration, error) {
	return SeedScaleRuns(ctx, s.cp, s.opts.PipelineRuns, s.progress)
}

// ScaleControlPlane is how a control plane runs to hold N PipelineRuns of
// SeedScaleRuns (100,000 and more): no watch cache for PipelineRuns (it would
// hold each of these runs as about 0.5 MB of unstructured maps, 50 GB at 100,000),
// so what a bridge reads (paged lists with resourceVersion="", watches) is served
// from etcd; no compaction during a list that outlasts its 5 minutes; 10-minute
// requests (a page of 100 nudge runs among 100,000 is a scan of up to 2,000
// objects); an 8 GiB etcd quota (100,000 runs of 29 KB are 2.9 GB).
func ScaleControlPlane(o *localenv.ControlPlaneOptions) {
	o.EtcdQuotaBytes = etcdQuota
	o.WithoutWatchCache = append(o.WithoutWatchCache, "pipelineruns.tekton.dev")
	o.NoEtcdCompaction = true
	o.RequestTimeout = 10 * time.Minute
}

// SeedScaleRuns puts n PipelineRuns of a Konflux cluster's mix (scaleRun, finished,
// 29 KB each, 75% of them builds and nudges a bridge caches) into cp: it creates
// their namespaces through the API server, writes the runs straight into etcd
// (seedScaleRuns: as the API server stores them, with their final status), and
// checks that the API server lists them all. It says how far it got on progress
// and returns how long the writing took. cp runs as ScaleControlPlane sets it
// when n is large.
func SeedScaleRuns(ctx context.Context, cp *localenv.ControlPlane, n int, progress func(format string, args ...any)) (time.Duration, error) {
	c, err := ctrlclient.New(cp.Config, ctrlclient.Options{Scheme: kube.NewScheme()})
	if err != nil {
		return 0, fmt.Errorf("kubernetes client: %w", err)
	}
	for ns := 0; ns < min(scaleNamespaces, n); ns++ {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scaleNamespace(ns)}}); err != nil {
			return 0, fmt.Errorf("creating namespace %s: %w", scaleNamespace(ns), err)
		}
	}
	before, err := servedRuns(ctx, c)
	if err != nil {
		return 0, err
	}
	var written atomic.Int64
	ctx, stopGuard := guardMemory(ctx, &written)
	defer stopGuard()
	began, last := time.Now(), time.Now()
	var mu sync.Mutex
	err = seedScaleRuns(ctx, cp.Env.ControlPlane.Etcd.URL.String(), n, func(batch int) {
		done := written.Add(int64(batch))
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) > 30*time.Second {
			progress("%d of %d PipelineRuns written into etcd", done, n)
			last = time.Now()
		}
	})
	if err != nil {
		return 0, err
	}
	took := time.Since(began)
	// Listed through the API server, beside the runs written before.
	served, err := servedRuns(ctx, c)
	if err != nil {
		return 0, err
	}
	if served != before+int64(n) {
		return 0, fmt.Errorf("the API server lists %d PipelineRuns, %d before and %d seeded", served, before, n)
	}
	if size, err := objectSize(ctx, c, scaleNamespace(0)); err == nil {
		progress("a build PipelineRun weighs %.1f KB as JSON", float64(size)/1024)
	}
	return took, nil
}

// servedRuns is how many PipelineRuns the API server lists, read from one page of
// one (the list's remaining count).
func servedRuns(ctx context.Context, c ctrlclient.Client) (int64, error) {
	var page tektonv1.PipelineRunList
	if err := c.List(ctx, &page, ctrlclient.Limit(1)); err != nil {
		return 0, fmt.Errorf("listing PipelineRuns: %w", err)
	}
	served := int64(len(page.Items))
	if page.RemainingItemCount != nil {
		served += *page.RemainingItemCount
	}
	return served, nil
}

// minAvailableMemory is the machine's available memory below which the writing
// stops, to spare a shared machine. The bench's kube-apiserver keeps no watch cache
// for PipelineRuns (which took about 0.5 MB per 29 KB run: 22 GB at 43,000 on a
// 23 GiB machine); etcd and the API server stayed under 2 GB at 100,000.
const minAvailableMemory = 2 << 30

// guardMemory cancels ctx, saying why, when the machine's available memory falls
// under minAvailableMemory while the runs are written.
func guardMemory(parent context.Context, written *atomic.Int64) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				if avail, ok := availableMemory(); ok && avail < minAvailableMemory {
					cancel(fmt.Errorf("stopped after %d PipelineRuns: the machine has %d MiB of memory left; "+
						"run fewer (--plrs) or on a larger machine", written.Load(), avail>>20))
					return
				}
			}
		}
	}()
	return ctx, func() { close(stop); cancel(nil) }
}

// availableMemory is MemAvailable of /proc/meminfo, in bytes.
func availableMemory() (int64, bool) {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// retryTransient runs write until it succeeds, fails for a reason a retry does not
// change (invalid, forbidden, a conflict), or failed for about three minutes (a
// machine shared with other jobs stalls etcd for a minute at times).
func retryTransient(ctx context.Context, write func() error) error {
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		if err = write(); err == nil || apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsConflict(err) || apierrors.IsBadRequest(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(time.Duration(min(attempt+1, 10)) * time.Second):
		}
	}
	return err
}

// objectSize is the JSON size of the first build PipelineRun of ns.
func objectSize(ctx context.Context, c ctrlclient.Client, ns string) (int, error) {
	var list tektonv1.PipelineRunList
	if err := c.List(ctx, &list, ctrlclient.InNamespace(ns), ctrlclient.MatchingLabels{konflux.LabelPipelineType: "build"}, ctrlclient.Limit(1)); err != nil {
		return 0, err
	}
	if len(list.Items) == 0 {
		return 0, errors.New("no build")
	}
	raw, err := json.Marshal(list.Items[0])
	return len(raw), err
}

// measureBridgeProcess runs one `nudgeflow bridge` process of binary on the webhook
// address the API server calls, measures it and stops it.
func (s *stack) measureBridgeProcess(ctx context.Context, binary string, n int) error {
	metricsAddr, err := freeAddress()
	if err != nil {
		return err
	}
	wio := s.cp.Env.WebhookInstallOptions
	args := []string{"--kubeconfig", s.kubeconfig, "--task-queue", taskQueue,
		"--webhook-port", strconv.Itoa(wio.LocalServingPort), "--webhook-cert-dir", wio.LocalServingCertDir,
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", "", "--forge-webhook-bind-address", ""}
	// The bench scrapes plain HTTP on loopback; a bridge that serves its metrics
	// over HTTPS with authentication by default is told not to.
	if help, err := exec.CommandContext(ctx, binary, "bridge", "--help").CombinedOutput(); err == nil && strings.Contains(string(help), "--metrics-secure") {
		args = append(args, "--metrics-secure=false")
	}
	args = append(args, s.opts.BridgeArgs...)
	env := append(os.Environ(), "TEMPORAL_ADDRESS="+s.tmp.Address, "TEMPORAL_NAMESPACE="+s.tmp.Namespace, "GOMEMLIMIT="+bridgeGOMEMLIMIT, "GOGC="+bridgeGOGC)
	logPath := filepath.Join(s.logDir, fmt.Sprintf("bridge-scale-%d.log", n))
	s.progress("starting %s bridge (log %s)", binary, logPath)
	began := time.Now()
	p, err := startCommand(binary, "bridge", args, env, logPath)
	if err != nil {
		return err
	}
	defer p.stop(30 * time.Second)
	if err := waitFor(ctx, 30*time.Minute, "every controller of the bridge has synced its cache", func() (bool, error) {
		if err := p.exited(); err != nil {
			return false, &fatalError{err}
		}
		if rss, _, err := ProcessMemory(p.pid()); err == nil && rss > bridgeRSSCeiling {
			return false, &fatalError{errOverCeiling{rss: rss, after: time.Since(began)}}
		}
		return controllersStarted(logPath)
	}); err != nil {
		var over errOverCeiling
		if errors.As(err, &over) {
			s.progress("bridge %s stopped before its cache synced: RSS %.0f MiB after %s, over %d MiB", binary, mb(over.rss), over.after.Round(time.Second), bridgeRSSCeiling>>20)
			s.result("bridge-scale plrs=%d rss_mib=%.0f intercept_p99_ms=NaN sync_s=NaN", s.opts.PipelineRuns, mb(over.rss))
			return nil
		}
		return err
	}
	synced := time.Since(began)
	_, syncPeak, err := ProcessMemory(p.pid())
	if err != nil {
		return err
	}
	s.progress("bridge synced in %s (VmHWM %.0f MiB)", synced.Round(100*time.Millisecond), mb(syncPeak))
	scrape := func() ([]*dto.MetricFamily, error) { return scrapeMetrics(ctx, "http://"+metricsAddr+"/metrics") }
	gcsAtSync, err := gcCount(scrape)
	if err != nil {
		return err
	}

	intercept := &probe{metric: changegroupcontroller.AdmissionMetric, labels: map[string]string{"webhook": changegroupcontroller.WebhookIntercept, "operation": "CREATE"}}
	var handler, nudgeClient, buildClient samples
	families, err := scrape()
	if err != nil {
		return err
	}
	for i := 0; i < s.opts.Samples; i++ {
		intercept.arm(families)
		nudge := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{GenerateName: "renovate-pipeline-", Namespace: nsScaleProbe,
			Labels: map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue},
			Annotations: map[string]string{konflux.AnnotationNudging: "component-0", konflux.AnnotationNudged: "bundle-0",
				konflux.AnnotationNudgingImg: imageRegistry + "component-0:bench"}},
			Spec: tektonv1.PipelineRunSpec{PipelineSpec: &tektonv1.PipelineSpec{Tasks: []tektonv1.PipelineTask{{Name: "renovate"}}}}}
		t := time.Now()
		if err := s.kube.Create(ctx, nudge); err != nil {
			return fmt.Errorf("creating nudge PipelineRun: %w", err)
		}
		nudgeClient = append(nudgeClient, time.Since(t))
		if families, err = scrape(); err != nil {
			return err
		}
		d, err := intercept.read(families, fmt.Sprintf("nudge sample %d", i))
		if err != nil {
			return err
		}
		handler = append(handler, d)
		build := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{GenerateName: "component-0-on-push-", Namespace: nsScaleProbe,
			Labels:      map[string]string{konflux.LabelComponent: "component-0", konflux.LabelPipelineType: "build"},
			Annotations: map[string]string{konflux.AnnotationEventType: "push"}},
			Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "docker-build"}}}
		t = time.Now()
		if err := s.kube.Create(ctx, build); err != nil {
			return fmt.Errorf("creating build PipelineRun: %w", err)
		}
		buildClient = append(buildClient, time.Since(t))
		// The build's admission went through the interceptor too: the next nudge
		// sample is measured from here.
		if families, err = scrape(); err != nil {
			return err
		}
	}
	if err := waitFor(ctx, 5*time.Minute, "the bridge ran a garbage collection after the samples", func() (bool, error) {
		if err := p.exited(); err != nil {
			return false, &fatalError{err}
		}
		gcs, err := gcCount(scrape)
		return gcs > gcsAtSync, err
	}); err != nil {
		return err
	}
	rss, peak, err := ProcessMemory(p.pid())
	if err != nil {
		return err
	}
	families, err = scrape()
	if err != nil {
		return err
	}
	heap, _ := gaugeIn(families, "go_memstats_heap_inuse_bytes")
	s.progress("bridge %s: rss %.0f MiB, peak (VmHWM) %.0f MiB, heap in use %.0f MiB, sync %.1f s; intercept handler p50 %s p99 %s; "+
		"client p99: nudge %s, push build (build routing) %s; %d samples each",
		binary, mb(rss), mb(peak), heap/(1<<20), synced.Seconds(), ms(handler.quantile(0.5)), ms(handler.quantile(0.99)),
		ms(nudgeClient.quantile(0.99)), ms(buildClient.quantile(0.99)), s.opts.Samples)
	s.result("bridge-scale plrs=%d rss_mib=%.0f intercept_p99_ms=%.3f sync_s=%.1f", s.opts.PipelineRuns, mb(rss),
		float64(handler.quantile(0.99))/float64(time.Millisecond), synced.Seconds())
	return nil
}

// errOverCeiling: the bridge's RSS passed bridgeRSSCeiling.
type errOverCeiling struct {
	rss   int64
	after time.Duration
}

func (e errOverCeiling) Error() string {
	return fmt.Sprintf("RSS %.0f MiB after %s, over %d MiB", mb(e.rss), e.after.Round(time.Second), bridgeRSSCeiling>>20)
}

// controllersStarted reads the bridge's (controller-runtime's JSON) log: every
// controller that logged "Starting Controller" has also logged "Starting workers",
// which it does once its informers have synced.
func controllersStarted(logPath string) (bool, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return false, err
	}
	defer f.Close()
	starting, working := map[string]bool{}, map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg        string `json:"msg"`
			Controller string `json:"controller"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Controller == "" {
			continue
		}
		switch line.Msg {
		case "Starting Controller":
			starting[line.Controller] = true
		case "Starting workers":
			working[line.Controller] = true
		}
	}
	if err := sc.Err(); err != nil {
		return false, err
	}
	if len(starting) == 0 {
		return false, nil
	}
	for c := range starting {
		if !working[c] {
			return false, nil
		}
	}
	return true, nil
}

// scrapeMetrics reads a metrics endpoint in the protobuf exposition format, the
// one that carries native histograms.
func scrapeMetrics(ctx context.Context, url string) ([]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	var families []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err != nil {
			if errors.Is(err, io.EOF) {
				return families, nil
			}
			return nil, fmt.Errorf("decoding the metrics of %s: %w", url, err)
		}
		families = append(families, mf)
	}
}

// gcCount is how many garbage collections the scraped process has completed.
func gcCount(scrape func() ([]*dto.MetricFamily, error)) (uint64, error) {
	families, err := scrape()
	if err != nil {
		return 0, err
	}
	for _, f := range families {
		if f.GetName() == "go_gc_duration_seconds" && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetSummary().GetSampleCount(), nil
		}
	}
	return 0, errors.New("no go_gc_duration_seconds in the bridge's metrics")
}

// gaugeIn reads an unlabelled gauge of a scrape.
func gaugeIn(families []*dto.MetricFamily, name string) (float64, bool) {
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// freeAddress is a loopback address with a port free right now.
func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}
