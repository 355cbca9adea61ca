package bench

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"time"

	dto "github.com/prometheus/client_model/go"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/api/workflowservice/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/bridge/changegroupcontroller"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/workflows/validatednudge"
)

const (
	nsBridge   = "bench-bridge"
	nsGroups   = "bench-groups"
	nsBaseline = "bench-baseline"
	nsWorker   = "bench-worker"
	// buildsPerSource spreads the builds over source components: each validated
	// edge's workflow receives about this many builds.
	buildsPerSource = 20
	gatingGroup     = "gate"
)

// benchBridge: B succeeded push builds, each with E validated nudge edges, finish
// while the bridge is down; then a new bridge starts (as after a restart or a
// rollout: the informer's first list delivers them all) and the measure runs until
// every build reached every edge's workflow — B·E SignalWithStart calls the
// Temporal server acknowledged. The bridge is the real one: cached reads,
// concurrent reconcilers, the webhooks serving. first_signal_s is its start (the
// manager, the informers' first lists) until the first acknowledged signal, which
// the direct baseline does not pay; after_first_signals_per_s the rate from then on.
func (s *stack) benchBridge(ctx context.Context) error {
	b, e := s.opts.Builds, s.opts.Edges
	sources := max(1, (b+buildsPerSource-1)/buildsPerSource)
	if err := s.kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsBridge}}); err != nil {
		return err
	}
	src := func(i int) string { return fmt.Sprintf("src-%d", i) }
	dst := func(j int) string { return fmt.Sprintf("dst-%d", j) }
	err := parallel(ctx, sources+e, createWorkers, func(ctx context.Context, i int) error {
		name := src(i)
		if i >= sources {
			name = dst(i - sources)
		}
		return s.kube.Create(ctx, &mirrorv1alpha1.Component{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: nsBridge},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: name, ContainerImage: imageRegistry + name,
				Source: mirrorv1alpha1.ComponentSource{GitSource: &mirrorv1alpha1.GitSource{URL: "https://github.com/org/" + name}}},
		})
	})
	if err != nil {
		return fmt.Errorf("creating components: %w", err)
	}
	gate := &mirrorv1beta2.ComponentGroup{ObjectMeta: metav1.ObjectMeta{Name: gatingGroup, Namespace: nsBridge}}
	nc := &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName, Namespace: nsBridge}}
	for i := 0; i < sources; i++ {
		gate.Spec.Components = append(gate.Spec.Components, mirrorv1beta2.ComponentGroupMember{Name: src(i)})
		for j := 0; j < e; j++ {
			nc.Spec.Nudges = append(nc.Spec.Nudges, konfluxv1alpha1.NudgeRelationship{From: src(i), To: dst(j),
				Mode: konfluxv1alpha1.ModeValidated, GatingGroup: gatingGroup})
		}
	}
	if err := s.kube.Create(ctx, gate); err != nil {
		return fmt.Errorf("creating ComponentGroup: %w", err)
	}
	if err := s.kube.Create(ctx, nc); err != nil {
		return fmt.Errorf("creating NudgeConfig (admitted by the bridge's webhook): %w", err)
	}

	s.progress("bridge stopped; %d builds of %d components finish meanwhile", b, sources)
	if err := s.stopMgr(); err != nil {
		return fmt.Errorf("stopping the bridge: %w", err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	err = parallel(ctx, b, createWorkers, func(ctx context.Context, i int) error {
		component, n := src(i%sources), i/sources
		plr := &tektonv1.PipelineRun{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-on-push-%d", component, n), Namespace: nsBridge,
				Labels:      map[string]string{konflux.LabelComponent: component, konflux.LabelPipelineType: "build"},
				Annotations: map[string]string{konflux.AnnotationEventType: "push", konflux.AnnotationRepo: fmt.Sprintf("https://github.com/org/%s/tree/%040x", component, n)}},
			Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "docker-build"}},
		}
		if err := s.kube.Create(ctx, plr); err != nil {
			return fmt.Errorf("creating build %s: %w", plr.Name, err)
		}
		started, finished := metav1.NewTime(t0.Add(time.Duration(n)*time.Minute)), metav1.NewTime(t0.Add(time.Duration(n)*time.Minute+30*time.Second))
		plr.Status.StartTime, plr.Status.CompletionTime = &started, &finished
		plr.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue, Reason: "Succeeded"}}
		plr.Status.Results = []tektonv1.PipelineRunResult{
			{Name: konflux.ResultImageURL, Value: *tektonv1.NewStructuredValues(fmt.Sprintf("%s%s:on-push-%d", imageRegistry, component, n))},
			{Name: konflux.ResultImageDigest, Value: *tektonv1.NewStructuredValues(digestOf(component, n))},
		}
		if err := s.kube.Status().Update(ctx, plr); err != nil {
			return fmt.Errorf("marking build %s succeeded: %w", plr.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}

	want := b * e
	done := s.counter.expect(validatednudge.WorkflowID(nsBridge, "", "")[:len("validated-nudge/"+nsBridge+"/")], want)
	s.progress("bridge starting with %d builds waiting: %d signals expected", b, want)
	began := time.Now()
	bridgeCPU, err := measureCPU(s.worker.pid(), func() error {
		if err := s.startBridge(ctx); err != nil {
			return err
		}
		deadline := time.After(10*time.Minute + time.Duration(want)*10*time.Millisecond)
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return nil
			case <-tick.C:
				s.progress("%d of %d signals", s.counter.count(), want)
			case <-deadline:
				return fmt.Errorf("only %d of %d signals reached Temporal", s.counter.count(), want)
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
	})
	if err != nil {
		return err
	}
	took := time.Since(began)
	startup := s.counter.firstAt().Sub(began)
	reconciles, _ := gatherGauge("controller_runtime_max_concurrent_reconciles", map[string]string{"controller": "nudge-builds"})

	// Cross-check in Temporal itself: one ValidatedNudge workflow per edge.
	query := fmt.Sprintf("WorkflowType = '%s' AND KubeNamespace = '%s'", validatednudge.WorkflowName, nsBridge)
	if err := waitFor(ctx, 2*time.Minute, "Temporal lists a workflow per edge", func() (bool, error) {
		resp, err := s.tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
		if err != nil {
			return false, err
		}
		if resp.GetCount() != int64(sources*e) {
			return false, fmt.Errorf("%d workflows, want %d", resp.GetCount(), sources*e)
		}
		return true, nil
	}); err != nil {
		return err
	}
	if err := s.settle(ctx); err != nil {
		return err
	}
	var direct float64
	directCPU, err := measureCPU(s.worker.pid(), func() (err error) {
		direct, err = s.directSignals(ctx, "bench-direct", b, e, sources, max(int(reconciles), 1), true)
		return err
	})
	if err != nil {
		return err
	}
	if err := s.settle(ctx); err != nil {
		return err
	}
	sequential, err := s.directSignals(ctx, "bench-direct-seq", b, e, sources, max(int(reconciles), 1), false)
	if err != nil {
		return err
	}
	rate := float64(want) / took.Seconds()
	perSignal := func(u cpuUse, names ...string) float64 { return 1000 * u.of(names...) / float64(want) }
	s.result("bench bridge builds=%d edges=%d reconciles=%.0f signals=%d seconds=%.2f builds_per_s=%.1f signals_per_s=%.1f "+
		"direct_signals_per_s=%.1f ratio=%.2f direct_sequential_signals_per_s=%.1f first_signal_s=%.2f after_first_signals_per_s=%.1f "+
		"bridge_cpu_ms_per_signal=%.2f temporal_cpu_ms_per_signal=%.2f kube_cpu_ms_per_build=%.2f busy_cores=%.2f "+
		"direct_client_cpu_ms_per_signal=%.2f direct_temporal_cpu_ms_per_signal=%.2f direct_busy_cores=%.2f cores=%d cpu_s=%s direct_cpu_s=%s",
		b, e, reconciles, want, took.Seconds(), float64(b)/took.Seconds(), rate, direct, rate/direct, sequential,
		startup.Seconds(), float64(want-1)/(took-startup).Seconds(),
		perSignal(bridgeCPU, "bench+bridge"), perSignal(bridgeCPU, "temporal"),
		1000*bridgeCPU.of("kube-apiserver", "etcd")/float64(b), bridgeCPU.busyCores,
		perSignal(directCPU, "bench+bridge"), perSignal(directCPU, "temporal"), directCPU.busyCores, runtime.NumCPU(),
		bridgeCPU, directCPU)
	return s.settle(ctx)
}

// directSignals sends what the bridge sent — the same SignalWithStart calls, as
// many builds at once as the bridge has reconcilers, a build's edges at once as the
// bridge sends them (concurrentEdges) or one after the other as it did before —
// straight from a Temporal client configured as the bridge's, without Kubernetes:
// what the Temporal server itself allows on this machine, for comparison. The
// workflows live under another (Kubernetes) namespace name, ns.
func (s *stack) directSignals(ctx context.Context, ns string, b, e, sources, concurrency int, concurrentEdges bool) (float64, error) {
	o := builds.Options{Temporal: s.tc, TaskQueue: taskQueue}
	began := time.Now()
	err := parallel(ctx, b, concurrency, func(ctx context.Context, i int) error {
		from, n := fmt.Sprintf("src-%d", i%sources), i/sources
		build := validatednudge.Build{ImageURL: fmt.Sprintf("%s%s:on-push-%d", imageRegistry, from, n), Digest: digestOf(from, n),
			BuildPipelineRun: fmt.Sprintf("%s-on-push-%d", from, n), BuildUID: fmt.Sprintf("direct-%d", i),
			BuiltAt: time.Date(2026, 1, 1, 0, n, 0, 0, time.UTC)}
		build.PullSpec = imageRegistry + from + "@" + build.Digest
		signal := func(ctx context.Context, j int) error {
			edge := builds.Edge{From: from, To: fmt.Sprintf("dst-%d", j), Mode: konfluxv1alpha1.ModeValidated, GatingGroup: gatingGroup}
			return builds.SignalValidated(ctx, o, ns, edge, validatednudge.SignalBuild, build)
		}
		if concurrentEdges {
			return parallel(ctx, e, e, signal)
		}
		for j := 0; j < e; j++ {
			if err := signal(ctx, j); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("signalling directly: %w", err)
	}
	return float64(b*e) / time.Since(began).Seconds(), nil
}

// ensureGroups seeds the baseline namespace (no groups) and the groups namespace
// with its Groups active ChangeGroups, and waits until their workflows idle.
func (s *stack) ensureGroups(ctx context.Context) error {
	if s.seeded[nsGroups] {
		return nil
	}
	nb := s.bundlesFor(s.opts.Groups)
	for _, ns := range []string{nsBaseline, nsGroups} {
		if err := s.seedNamespace(ctx, ns, nb); err != nil {
			return err
		}
	}
	began := time.Now()
	cpu0 := cpuSeconds(s.worker.pid())
	s.progress("creating %d ChangeGroups in %s", s.opts.Groups, nsGroups)
	if err := s.createGroups(ctx, nsGroups, s.opts.Groups); err != nil {
		return err
	}
	if err := s.waitGroupsIdle(ctx, nsGroups, s.opts.Groups); err != nil {
		return err
	}
	s.progress("%d ChangeGroups active and idle after %s (CPU seconds: %s)", s.opts.Groups, time.Since(began).Round(time.Second),
		cpuDelta(cpu0, cpuSeconds(s.worker.pid())))
	return nil
}

// series is what one series of admissions measured, one entry per admission.
type series struct {
	handler samples // the bridge's handler time (nudgeflow_admission_duration_seconds)
	http    samples // the webhook server's time (controller_runtime_webhook_latency_seconds)
	client  samples // the create as the API client saw it
	held    []bool
}

func (r *series) subset(held bool) samples {
	var out samples
	for i, h := range r.held {
		if h == held {
			out = append(out, r.handler[i])
		}
	}
	return out
}

// probe reads what one admission added to a histogram of the registry: the
// snapshot before the create, then the one observation after it (its bucket's
// upper bound). Per-admission attribution lets the two series interleave, so both
// run under the same background load (the worker and the bridge handling what the
// previous admissions started).
type probe struct {
	metric string
	labels map[string]string
	before nativeHist
}

func (p *probe) arm(families []*dto.MetricFamily) {
	p.before = histIn(families, p.metric, p.labels)
}

func (p *probe) read(families []*dto.MetricFamily, what string) (time.Duration, error) {
	d := histIn(families, p.metric, p.labels).minus(p.before)
	if d.total() != 1 {
		return 0, fmt.Errorf("%s: %s observed %d admissions for one create (is the webhook registered?)", what, p.metric, d.total())
	}
	return d.quantile(1), nil
}

// admit runs create once per namespace and sample, alternating between the
// baseline and the groups namespace, and times each admission. The registry is
// gathered once per admission, after it: that snapshot is the next admission's
// "before" (the bench admits one object at a time). Gathering is not free — the
// whole registry of the process, which is also the bridge's — and its garbage is
// collected while the next admissions run: one gather per admission, not one per
// probe before and after.
func admit(n int, probes []*probe, create func(ns string, i int) (held bool, err error)) (base, grp series, err error) {
	families, err := gatherAll()
	if err != nil {
		return base, grp, err
	}
	for i := 0; i < n; i++ {
		for _, ns := range []string{nsBaseline, nsGroups} {
			for _, p := range probes {
				p.arm(families)
			}
			began := time.Now()
			held, err := create(ns, i)
			if err != nil {
				return base, grp, err
			}
			took := time.Since(began)
			r := &base
			if ns == nsGroups {
				r = &grp
			}
			r.client, r.held = append(r.client, took), append(r.held, held)
			if families, err = gatherAll(); err != nil {
				return base, grp, err
			}
			for k, p := range probes {
				d, err := p.read(families, fmt.Sprintf("sample %d in %s", i, ns))
				if err != nil {
					return base, grp, err
				}
				if k == 0 {
					r.handler = append(r.handler, d)
				} else {
					r.http = append(r.http, d)
				}
			}
		}
	}
	return base, grp, nil
}

// benchIntercept: nudge PipelineRuns created one after the other, alternately in a
// namespace without ChangeGroups (baseline) and in the one with Groups active
// groups. Three in four name a source some group holds (never every member of a
// group, so no group completes), one in four a source no group holds.
func (s *stack) benchIntercept(ctx context.Context) error {
	if err := s.ensureGroups(ctx); err != nil {
		return err
	}
	nb, gpb := s.bundlesFor(s.opts.Groups), s.opts.GroupsPerBundle
	probes := []*probe{
		{metric: changegroupcontroller.AdmissionMetric, labels: map[string]string{"webhook": changegroupcontroller.WebhookIntercept, "operation": "CREATE"}},
		{metric: "controller_runtime_webhook_latency_seconds", labels: map[string]string{"webhook": changegroupcontroller.InterceptPath}},
	}
	base, grp, err := admit(s.opts.Samples, probes, func(ns string, i int) (bool, error) {
		b, round := i%nb, i/nb
		source := operand(membersPerGroup*gpb + i%freeOperands)
		if i%4 != 3 {
			source = operand(membersPerGroup*(round%gpb) + (round/gpb)%2)
		}
		plr := &tektonv1.PipelineRun{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "renovate-pipeline-", Namespace: ns,
				Labels: map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue},
				Annotations: map[string]string{
					konflux.AnnotationNudging:    source,
					konflux.AnnotationNudged:     bundleOf(b),
					konflux.AnnotationNudgingImg: imageRegistry + source + ":bench",
				}},
			Spec: tektonv1.PipelineRunSpec{PipelineSpec: &tektonv1.PipelineSpec{Tasks: []tektonv1.PipelineTask{{Name: "renovate"}}}},
		}
		if err := s.kube.Create(ctx, plr); err != nil {
			return false, fmt.Errorf("creating nudge PipelineRun in %s: %w", ns, err)
		}
		return plr.Spec.Status == tektonv1.PipelineRunSpecStatusCancelled, nil
	})
	if err != nil {
		return err
	}
	held := 0
	for _, h := range grp.held {
		if h {
			held++
		}
	}
	p99, b99 := grp.handler.quantile(0.99), base.handler.quantile(0.99)
	s.result("bench intercept groups=%d samples=%d held=%d p50=%s p99=%s baseline_p50=%s baseline_p99=%s ratio=%.2f "+
		"held_p99=%s passed_p99=%s http_p50=%s http_p99=%s http_baseline_p99=%s client_p50=%s client_p99=%s client_baseline_p99=%s",
		s.opts.Groups, len(grp.handler), held, ms(grp.handler.quantile(0.5)), ms(p99), ms(base.handler.quantile(0.5)), ms(b99), ratio(p99, b99),
		ms(grp.subset(true).quantile(0.99)), ms(grp.subset(false).quantile(0.99)),
		ms(grp.http.quantile(0.5)), ms(grp.http.quantile(0.99)), ms(base.http.quantile(0.99)),
		ms(grp.client.quantile(0.5)), ms(grp.client.quantile(0.99)), ms(base.client.quantile(0.99)))
	return s.settle(ctx)
}

// benchAdmission: ChangeGroups created one after the other, alternately in the
// baseline namespace (no other group of their bundle) and in the groups namespace
// (their bundle's GroupsPerBundle groups exist): each sample collects five operands
// no other group of its bundle collects, so all are admitted.
func (s *stack) benchAdmission(ctx context.Context) error {
	if err := s.ensureGroups(ctx); err != nil {
		return err
	}
	nb, first := s.bundlesFor(s.opts.Groups), membersPerGroup*s.opts.GroupsPerBundle
	n := min(s.opts.Samples, 2*nb)
	probes := []*probe{{metric: changegroupcontroller.AdmissionMetric, labels: map[string]string{"webhook": changegroupcontroller.WebhookChangeGroup, "operation": "CREATE"}}}
	base, grp, err := admit(n, probes, func(ns string, i int) (bool, error) {
		set := (i / nb) % 2
		cg := &appstudiov1alpha1.ChangeGroup{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sample-%d", i), Namespace: ns},
			Spec:       appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: bundleOf(i % nb)},
		}
		for m := 0; m < freeOperands/2; m++ {
			cg.Spec.NudgingComponents = append(cg.Spec.NudgingComponents, appstudiov1alpha1.NudgingComponentRef{Name: operand(first + set*freeOperands/2 + m)})
		}
		if err := s.kube.Create(ctx, cg); err != nil {
			return false, fmt.Errorf("creating ChangeGroup %s/%s: %w", ns, cg.Name, err)
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	p99, b99 := grp.handler.quantile(0.99), base.handler.quantile(0.99)
	s.result("bench changegroup-admission groups=%d samples=%d p50=%s p99=%s baseline_p50=%s baseline_p99=%s ratio=%.2f "+
		"client_p50=%s client_p99=%s client_baseline_p99=%s",
		s.opts.Groups, n, ms(grp.handler.quantile(0.5)), ms(p99), ms(base.handler.quantile(0.5)), ms(b99), ratio(p99, b99),
		ms(grp.client.quantile(0.5)), ms(grp.client.quantile(0.99)), ms(base.client.quantile(0.99)))
	return s.settle(ctx)
}

// benchWorker: a fresh `nudgeflow worker` process (its own flags' defaults unless
// WorkerArgs say otherwise); its RSS once it polls, then after WorkerGroups
// ChangeGroups were created, their workflows started, resolved, wrote their status
// and idle waiting for builds.
func (s *stack) benchWorker(ctx context.Context) error {
	old := s.worker
	old.stop(time.Minute)
	if err := s.startWorker(ctx, "worker-measured.log"); err != nil {
		return err
	}
	pid := s.worker.pid()
	before, _, err := ProcessMemory(pid)
	if err != nil {
		return err
	}
	g := s.opts.WorkerGroups
	if err := s.seedNamespace(ctx, nsWorker, s.bundlesFor(g)); err != nil {
		return err
	}
	s.progress("worker pid %d at %.1f MB; creating %d ChangeGroups", pid, mb(before), g)
	cpu0 := cpuSeconds(pid)
	began := time.Now()
	if err := s.createGroups(ctx, nsWorker, g); err != nil {
		return err
	}
	if err := s.waitGroupsIdle(ctx, nsWorker, g); err != nil {
		return err
	}
	took := time.Since(began)
	cpu := cpuDelta(cpu0, cpuSeconds(pid))
	query := fmt.Sprintf("WorkflowType = 'ChangeGroup' AND KubeNamespace = '%s' AND ExecutionStatus = 'Running'", nsWorker)
	resp, err := s.tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
	if err != nil {
		return err
	}
	if resp.GetCount() != int64(g) {
		return fmt.Errorf("%d ChangeGroup workflows run in %s, want %d", resp.GetCount(), nsWorker, g)
	}
	after, peak, err := ProcessMemory(pid)
	if err != nil {
		return err
	}
	s.result("bench worker groups=%d sticky_cache=%s baseline_mb=%.1f rss_mb=%.1f peak_mb=%.1f per_group_kb=%.1f seconds=%.1f groups_per_s=%.1f cpu_s=%s",
		g, s.workerSetting("stickyCacheSize"), mb(before), mb(after), mb(peak), float64(after-before)/1024/float64(g), took.Seconds(), float64(g)/took.Seconds(), cpu)
	return nil
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// workerSetting reads a setting from the worker's "worker starting" log line.
func (s *stack) workerSetting(key string) string {
	raw, err := os.ReadFile(s.worker.log.Name())
	if err != nil {
		return "?"
	}
	return loggedSetting(raw, key)
}

// loggedSetting is the first value logged under key, "?" when none is. The worker
// logs JSON ("key":value) by default, text (key=value) with --log-format=text.
func loggedSetting(log []byte, key string) string {
	m := regexp.MustCompile(`"?\b` + regexp.QuoteMeta(key) + `"?[=:]"?([^\s",}]+)`).FindSubmatch(log)
	if m == nil {
		return "?"
	}
	return string(m[1])
}
