package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/temporalconn"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/ociregistry"
)

// `nudgeflow-dev dev nudge-latency` measures immediate nudges on the running
// `nudgeflow-dev dev --forgejo`, both writers side by side in one run: from a
// simulated push build reported succeeded to the pull request on the Gitea server
// carrying the build's digest in the nudged file, and the CPU every process of the
// stack spent per nudge (issue 35, item 4).

// LatencyNamespace is the namespace the measure seeds: per writer, a nudging
// component and the bundle it nudges on Forgejo, so the demo's own story is left
// alone.
const LatencyNamespace = "nudge-latency"

// The writers the measure compares, as the Nudge's result names them.
const (
	LatencyRenovate = nudgeapi.WriterRenovate
	LatencyDirect   = nudgeapi.WriterDirect
)

// LatencyOptions size the measure.
type LatencyOptions struct {
	// N nudges per writer, one after the other (each waits for the previous
	// nudge's workflow to end), so no latency includes a queue; the writers take
	// turns.
	N int
	// Writers in the order they take turns (default renovate, then direct).
	Writers []string
	// Idle is how long the stack's idle CPU is read before the first nudge (0: not read).
	Idle time.Duration
	// Poll, when set, also reads the pull requests at this interval (besides the
	// webhook deliveries): a finer clock for the latencies, at the cost of the
	// reads' CPU on the Gitea server, which the figures include.
	Poll time.Duration
	// Timeout bounds each nudge (default 5 minutes).
	Timeout time.Duration
	// Out receives the result lines, Log the progress.
	Out, Log io.Writer
}

// LatencyResult is one writer's figures.
type LatencyResult struct {
	Writer    string
	Latencies []time.Duration
	// Starts are from the build reported succeeded to its Nudge workflow's start
	// (the bridge and Temporal): the rest of a latency is the writer's.
	Starts       []time.Duration
	CPUSeconds   float64            // every process of the stack, over the writer's windows
	CPUByProcess map[string]float64 // the same, by process name
	Wall         time.Duration      // the writer's windows, one per nudge
	BusyCores    float64            // the whole machine's busy cores over the windows (other jobs too)
	Polls        int                // the measure's own reads of the forge
}

// Quantile is the nearest-rank quantile q of the latencies.
func (r LatencyResult) Quantile(q float64) time.Duration { return quantile(r.Latencies, q) }

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[max(int(math.Ceil(q*float64(len(s))))-1, 0)]
}

// forgeProcess is the forge's process name in the stack (with the git processes
// it reaped).
const forgeProcess = "gitea"

// CPUPerNudgeWithoutForge is CPUPerNudge less the forge's: what nudgeflow, the
// Renovate runs, Temporal and the API server spent.
func (r LatencyResult) CPUPerNudgeWithoutForge() float64 {
	return (r.CPUSeconds - r.CPUByProcess[forgeProcess]) / float64(len(r.Latencies))
}

// CPUPerNudge is the stack's CPU seconds per nudge.
func (r LatencyResult) CPUPerNudge() float64 { return r.CPUSeconds / float64(len(r.Latencies)) }

// Line is the result line of the writer.
func (r LatencyResult) Line() string {
	return fmt.Sprintf("nudge-latency writer=%s n=%d p50_s=%.2f p99_s=%.2f cpu_s_per_nudge=%.2f start_p50_s=%.2f cpu_s_per_nudge_without_forge=%.2f wall_s=%.2f busy_cores=%.2f polls=%d cpu_s=%s",
		r.Writer, len(r.Latencies), r.Quantile(0.5).Seconds(), r.Quantile(0.99).Seconds(), r.CPUPerNudge(),
		quantile(r.Starts, 0.5).Seconds(), r.CPUPerNudgeWithoutForge(), r.Wall.Seconds(), r.BusyCores, r.Polls, formatCPU(r.CPUByProcess))
}

// RatioLine compares direct to renovate: each figure is direct's over Renovate's.
func RatioLine(renovateRes, direct LatencyResult) string {
	div := func(a, b float64) float64 {
		if b == 0 {
			return math.NaN()
		}
		return a / b
	}
	return fmt.Sprintf("nudge-latency ratio of=direct/renovate p50=%.3f p99=%.3f cpu=%.3f cpu_without_forge=%.3f",
		div(direct.Quantile(0.5).Seconds(), renovateRes.Quantile(0.5).Seconds()),
		div(direct.Quantile(0.99).Seconds(), renovateRes.Quantile(0.99).Seconds()),
		div(direct.CPUPerNudge(), renovateRes.CPUPerNudge()),
		div(direct.CPUPerNudgeWithoutForge(), renovateRes.CPUPerNudgeWithoutForge()))
}

// latencyEnv is what the measure uses of the running stack.
type latencyEnv struct {
	opts LatencyOptions
	run  *Running
	kube ctrlclient.Client
	tc   client.Client
	fj   *localenv.Forgejo
	reg  *ociregistry.Registry
	// hooks wakes the wait for a pull request at the bundles' webhook deliveries.
	hooks *hookWaker
}

// MeasureNudgeLatency seeds LatencyNamespace in the `nudgeflow-dev dev --forgejo`
// running in home, then nudges N times per writer, the writers taking turns, and
// prints a line per writer and the ratio line. Each writer's bundle repository is made anew, so the first
// nudge opens the pull request and the others update it, for both writers.
func MeasureNudgeLatency(ctx context.Context, home string, opts LatencyOptions) ([]LatencyResult, error) {
	if opts.N < 1 {
		return nil, errors.New("nudge-latency: N must be at least 1")
	}
	if len(opts.Writers) == 0 {
		opts.Writers = []string{LatencyRenovate, LatencyDirect}
	}
	for _, w := range opts.Writers {
		if w != LatencyRenovate && w != LatencyDirect {
			return nil, fmt.Errorf("nudge-latency: unknown writer %q (renovate or direct)", w)
		}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Minute
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	e := &latencyEnv{opts: opts}
	var err error
	if e.run, err = ReadRunning(home); err != nil {
		return nil, err
	}
	if e.run.ForgejoURL == "" {
		return nil, errors.New("nudge-latency measures on the Gitea server: start the stack with `nudgeflow-dev dev --forgejo` (make run-forgejo)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", e.run.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", e.run.Kubeconfig, err)
	}
	if e.kube, err = ctrlclient.New(cfg, ctrlclient.Options{Scheme: kube.NewScheme()}); err != nil {
		return nil, fmt.Errorf("a Kubernetes client: %w", err)
	}
	if e.fj, err = localenv.ConnectForgejo(filepath.Join(home, dirForgejo), e.run.ForgejoURL); err != nil {
		return nil, err
	}
	if e.reg, err = RegistryClient(home); err != nil {
		return nil, err
	}
	tcOpts := client.Options{HostPort: e.run.TemporalAddress, Namespace: e.run.Namespace}
	if err := temporalconn.Apply(&tcOpts, temporalconn.DefaultCompression); err != nil {
		return nil, err
	}
	if e.tc, err = client.Dial(tcOpts); err != nil {
		return nil, fmt.Errorf("connecting to Temporal at %s: %w", e.run.TemporalAddress, err)
	}
	defer e.tc.Close()
	if e.hooks, err = startHookWaker(); err != nil {
		return nil, err
	}
	defer e.hooks.srv.Close()

	if err := e.seed(ctx); err != nil {
		return nil, err
	}
	if opts.Idle > 0 {
		e.progress("reading the idle stack's CPU for %s", opts.Idle)
		before, _ := TreeCPU(e.run.PID)
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(opts.Idle):
		}
		after, _ := TreeCPU(e.run.PID)
		fmt.Fprintf(opts.Out, "nudge-latency idle seconds=%.0f cpu_s_per_s=%.3f\n", opts.Idle.Seconds(), (after-before)/opts.Idle.Seconds())
	}
	// The writers take turns, nudge by nudge: on a machine other jobs share, both
	// see the same load.
	results := make([]LatencyResult, len(opts.Writers))
	for j, w := range opts.Writers {
		results[j] = LatencyResult{Writer: w, CPUByProcess: map[string]float64{}}
	}
	busy := make([]float64, len(opts.Writers))
	for i := 1; i <= opts.N; i++ {
		for j := range results {
			b, err := e.nudge(ctx, &results[j], i)
			if err != nil {
				return nil, fmt.Errorf("writer %s: %w", results[j].Writer, err)
			}
			busy[j] += b
		}
	}
	for j := range results {
		results[j].BusyCores = busy[j] / results[j].Wall.Seconds()
		fmt.Fprintln(opts.Out, results[j].Line())
	}
	if len(results) == 2 && results[0].Writer == LatencyRenovate && results[1].Writer == LatencyDirect {
		fmt.Fprintln(opts.Out, RatioLine(results[0], results[1]))
	}
	return results, nil
}

func (e *latencyEnv) progress(format string, args ...any) {
	fmt.Fprintf(e.opts.Log, "nudge-latency: %s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// latencyNudger and latencyBundle are the writer's components.
func latencyNudger(writer string) string { return "nl-" + writer }
func latencyBundle(writer string) string { return "nl-bundle-" + writer }

// seed makes the namespace, the forge Secret, the components, their onboarding
// and the NudgeConfig (each edge pinned to its writer), and each bundle's
// repository on Gitea anew.
func (e *latencyEnv) seed(ctx context.Context) error {
	ns := LatencyNamespace
	for _, w := range e.opts.Writers {
		if err := e.freshRepo(ns, latencyBundle(w), latencyNudger(w)); err != nil {
			return err
		}
	}
	objs := []ctrlclient.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		// The Gitea bot's token for the host: the bundles are the only
		// repositories of the namespace on it.
		scmSecret(ns, forgejoSecret, localenv.ForgejoBot, e.fj.BotToken),
	}
	nc := &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName, Namespace: ns}}
	for _, w := range e.opts.Writers {
		objs = append(objs, bundleOn(ns, latencyBundle(w), []string{latencyNudger(w)}, "forgejo", e.run.ForgejoURL, e.run.ForgeURL, e.run.Registry)...)
		nc.Spec.Nudges = append(nc.Spec.Nudges, konfluxv1alpha1.NudgeRelationship{From: latencyNudger(w), To: latencyBundle(w),
			Mode: konfluxv1alpha1.ModeImmediate, ImmediateWriter: konfluxv1alpha1.ImmediateWriter(w)})
	}
	objs = append(objs, nc)
	if err := createOnboarded(ctx, e.kube, objs); err != nil {
		return err
	}
	// A NudgeConfig a previous measure left with other writers gets these edges.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur konfluxv1alpha1.NudgeConfig
		if err := e.kube.Get(ctx, ctrlclient.ObjectKeyFromObject(nc), &cur); err != nil {
			return err
		}
		if slices.Equal(cur.Spec.Nudges, nc.Spec.Nudges) {
			return nil
		}
		cur.Spec.Nudges = nc.Spec.Nudges
		return e.kube.Update(ctx, &cur)
	}); err != nil {
		return fmt.Errorf("writing NudgeConfig %s/%s: %w", ns, nc.Name, err)
	}
	var nudgers []string
	for _, w := range e.opts.Writers {
		nudgers = append(nudgers, latencyNudger(w))
	}
	return promoteDigestZero(ctx, e.kube, ns, e.run.Registry, nudgers)
}

// freshRepo deletes owner/name on Gitea when a previous measure left it, then
// creates it as the demo's Forgejo bundle is: a CSV referencing the nudger's
// digest 0, and the nudge label.
func (e *latencyEnv) freshRepo(owner, name, nudger string) error {
	var ae *localenv.APIError
	switch err := e.fj.API(http.MethodDelete, "/repos/"+owner+"/"+name, e.fj.AdminToken, nil, nil); {
	case err == nil:
		e.progress("deleted %s/%s, left by a previous measure", owner, name)
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
	default:
		return fmt.Errorf("deleting %s/%s on Gitea: %w", owner, name, err)
	}
	csv := csvDescription + fmt.Sprintf("  - name: %s\n    image: %s@%s\n", nudger, ImageOf(e.run.Registry, nudger), DigestOf(owner, nudger, 0))
	if err := e.fj.CreateRepo(owner, name, defaultBranch, map[string]string{CSVPath: csv, "README.md": "# " + name + "\n"}); err != nil {
		return fmt.Errorf("creating %s/%s on Gitea: %w", owner, name, err)
	}
	if err := e.fj.API(http.MethodPost, "/repos/"+owner+"/"+name+"/labels", e.fj.AdminToken,
		map[string]string{"name": renovate.NudgeLabel, "color": "#00aabb"}, nil); err != nil {
		return fmt.Errorf("creating the nudge label on %s/%s: %w", owner, name, err)
	}
	if err := e.fj.API(http.MethodPost, "/repos/"+owner+"/"+name+"/hooks", e.fj.AdminToken, map[string]any{
		"type": "gitea", "active": true, "events": []string{"push", "pull_request"},
		"config": map[string]string{"url": e.hooks.url, "content_type": "json"}}, nil); err != nil {
		return fmt.Errorf("adding the measure's webhook to %s/%s: %w", owner, name, err)
	}
	return nil
}

// nudge runs the i-th nudge of res's writer and adds it to res: its latency, its
// workflow's start, and the stack's CPU from before the build to after the
// nudge's end (the Renovate run reaped). It returns the machine's busy CPU
// seconds over that window.
func (e *latencyEnv) nudge(ctx context.Context, res *LatencyResult, i int) (float64, error) {
	writer := res.Writer
	ns, nudger, bundle := LatencyNamespace, latencyNudger(writer), latencyBundle(writer)
	cpu0, by0 := TreeCPU(e.run.PID)
	busy0, began := MachineBusy(), time.Now()
	b, err := Build(ctx, e.kube, e.reg, ns, nudger)
	if err != nil {
		return 0, err
	}
	want := ImageOf(e.run.Registry, nudger) + "@" + b.Digest
	pr, polls, err := e.waitVisible(ctx, ns, bundle, want, b.Succeeded.Add(e.opts.Timeout))
	res.Polls += polls
	if err != nil {
		return 0, fmt.Errorf("nudge %d (%s): %w", i, b.Build, err)
	}
	lat := pr.seen.Sub(b.Succeeded)
	var plr tektonv1.PipelineRun
	if err := e.kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: b.Build}, &plr); err != nil {
		return 0, fmt.Errorf("reading build %s/%s: %w", ns, b.Build, err)
	}
	id := nudgeapi.WorkflowID(ns, string(plr.UID), bundle)
	out, err := e.waitNudge(ctx, id, b.Succeeded.Add(e.opts.Timeout))
	if err != nil {
		return 0, fmt.Errorf("nudge %d (%s): %w", i, b.Build, err)
	}
	cpu1, by1 := TreeCPU(e.run.PID)
	busy := MachineBusy() - busy0
	res.Wall += time.Since(began)
	// The figure is the writer's: a nudge another writer wrote (a fallback) fails
	// the measure rather than count for this one.
	if out.Phase != nudgeapi.PhaseSucceeded || (out.Writer != writer && (writer != LatencyRenovate || out.Writer != "")) {
		return 0, fmt.Errorf("nudge %d (%s) ended %s by writer %q (%s), want Succeeded by %s", i, b.Build, out.Phase, out.Writer, out.WriterReason, writer)
	}
	desc, err := e.tc.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return 0, fmt.Errorf("describing Nudge %s: %w", id, err)
	}
	res.Starts = append(res.Starts, desc.GetWorkflowExecutionInfo().GetStartTime().AsTime().Sub(b.Succeeded))
	res.Latencies = append(res.Latencies, lat)
	res.CPUSeconds += cpu1 - cpu0
	for k, v := range by1 {
		res.CPUByProcess[k] += v - by0[k]
	}
	e.progress("writer %s nudge %d/%d: %s -> PR #%d with the digest after %.2fs; CPU %.2fs, of it the forge's %.2fs", writer, i, e.opts.N, b.Build,
		pr.number, lat.Seconds(), cpu1-cpu0, by1[forgeProcess]-by0[forgeProcess])
	return busy, nil
}

type visiblePR struct {
	number int
	seen   time.Time
}

// waitVisible reads the bundle's open pull requests until one's head holds want
// in the CSV, or deadline: at once, then at each of the repository's webhook
// deliveries (a push or a pull request event: the forge says something changed)
// and every two seconds without one. It reads the file only at a head it has not
// read yet. So the measure's own reads, whose cost on the Gitea server is in the
// stack's CPU, stay a few per nudge, and a latency is high by the delivery's delay
// at most (two seconds when a delivery is lost).
func (e *latencyEnv) waitVisible(ctx context.Context, owner, name, want string, deadline time.Time) (visiblePR, int, error) {
	began := time.Now()
	polls := 0
	read := map[string]bool{} // heads whose file lacked want
	for {
		polls++
		var prs []localenv.ForgejoPR
		if err := e.fj.API(http.MethodGet, "/repos/"+owner+"/"+name+"/pulls?state=open&limit=50", e.fj.AdminToken, nil, &prs); err != nil {
			return visiblePR{}, polls, fmt.Errorf("listing the pull requests of %s/%s: %w", owner, name, err)
		}
		for _, p := range prs {
			if read[p.Head.SHA] {
				continue
			}
			if csv, ok := e.fj.FileAt(owner, name, p.Head.SHA, CSVPath); ok && strings.Contains(csv, want) {
				return visiblePR{number: p.Number, seen: time.Now()}, polls, nil
			}
			read[p.Head.SHA] = true
		}
		if time.Now().After(deadline) {
			return visiblePR{}, polls, fmt.Errorf("no open pull request of %s/%s holds %s after %s", owner, name, want, time.Since(began).Round(time.Second))
		}
		wait := 2 * time.Second
		if e.opts.Poll > 0 {
			wait = e.opts.Poll
		}
		select {
		case <-ctx.Done():
			return visiblePR{}, polls, context.Cause(ctx)
		case <-e.hooks.wake:
		case <-time.After(wait):
		}
	}
}

// hookWaker receives the bundles' webhook deliveries: each wakes waitVisible.
type hookWaker struct {
	url  string
	wake chan struct{}
	srv  *http.Server
}

func startHookWaker() (*hookWaker, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the bundles' webhooks: %w", err)
	}
	w := &hookWaker{url: "http://" + ln.Addr().String() + "/", wake: make(chan struct{}, 1)}
	w.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case w.wake <- struct{}{}:
		default: // a wake-up is pending already
		}
		rw.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = w.srv.Serve(ln) }()
	return w, nil
}

// nudgeOutcome is what the measure reads of a Nudge's result.
type nudgeOutcome struct {
	Phase        string `json:"phase"`
	Writer       string `json:"writer"`
	WriterReason string `json:"writerReason"`
}

// waitNudge waits for the Nudge workflow id to end (it wrote the pull request, so
// it exists) and returns its result.
func (e *latencyEnv) waitNudge(ctx context.Context, id string, deadline time.Time) (nudgeOutcome, error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var out nudgeOutcome
	for {
		err := e.tc.GetWorkflow(ctx, id, "").Get(ctx, &out)
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) && ctx.Err() == nil {
			// Not visible to this frontend yet: a moment later it is.
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		if err != nil {
			return out, fmt.Errorf("waiting for Nudge %s: %w", id, err)
		}
		return out, nil
	}
}
