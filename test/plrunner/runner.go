// Package plrunner runs nudge PipelineRuns the way Tekton would, for the dev
// stack and the tests (never imported by cmd/nudgeflow): it watches
// PipelineRuns labelled build.appstudio.redhat.com/type=nudge, leaves pending
// ones alone until released, runs each task's steps as local processes and
// writes Tekton-shaped status back.
//
// What it does differently from Tekton, because it runs processes, not pods:
//   - Volumes: ConfigMap and Secret volumes are written as files under a
//     per-run directory (<StateDir>/work/<ns>/<name>/volumes/<volume>), and
//     every mount path (e.g. /configs, or the trusted-CA bundle's file path) is
//     rewritten to its local path in the step's script, command, args and env
//     values. Longest mount paths are rewritten first so nested mounts win.
//   - $(results.<name>.path) becomes a file under the run directory; what the
//     step writes there becomes status.results (pipeline results that refer to
//     $(tasks.<task>.results.<name>) are resolved from them).
//   - The trusted-CA mount (renovate.CAMountPath) is also passed to Node as
//     NODE_EXTRA_CA_CERTS: Node does not read the system bundle path.
//   - Each step gets its own TMPDIR (<run dir>/<task>/step-<i>/tmp), as each
//     step's container has its own /tmp: Renovate keeps its clones and package
//     cache there, which runs must not share.
//   - The step's image is ignored: its command runs on this machine with
//     ToolPath first on PATH (the pinned `renovate` from the tool cache).
//   - One TaskRun is reported in childReferences per task, named
//     <run>-<task>; no TaskRun object is created.
//   - Each run's output (all steps) goes to <StateDir>/runs/<ns>/<name>.log,
//     with a line per step giving its exit code, wall time, CPU and max RSS.
//   - A Renovate config file (a .json key of a ConfigMap volume) naming
//     platform "forgejo" is written with platform "gitea": the pinned Renovate
//     (39.x) has no forgejo platform (see pinnedPlatform). The log says so.
//
// Not done: params, workspaces, sidecars, finally tasks, service-account pull
// secrets (a test passes registry credentials through the run's Secret).
package plrunner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"knative.dev/pkg/apis"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
)

// Tekton's condition reasons the runner writes.
const (
	ReasonRunning   = "Running"
	ReasonSucceeded = "Succeeded"
	ReasonFailed    = "Failed"
	ReasonCancelled = "Cancelled"
)

// Runner runs nudge PipelineRuns.
type Runner struct {
	Client ctrlclient.WithWatch
	// StateDir keeps runs/<ns>/<name>.log and the per-run work directories.
	StateDir string
	// ToolPath goes first on the steps' PATH (the directory holding `renovate`).
	ToolPath string
	// Env is the base environment of every step (os.Environ() when nil).
	Env []string
	// Namespace limits the runner to one namespace ("" runs every namespace's
	// nudge runs): a test beside others that end runs themselves runs only its own.
	Namespace string
	// BeforeRun, when set, is called once a run has started, before its first
	// step: a test's stand-in for what happens in the world while a run waits for
	// its pod (an image push arriving late). An error fails the run.
	BeforeRun func(ctx context.Context, plr *tektonv1.PipelineRun) error
	// Select, when set, says which of the watched runs this runner runs (a test
	// beside another service's nudge runs runs only nudgeflow's).
	Select func(plr *tektonv1.PipelineRun) bool

	mu      sync.Mutex
	running map[types.NamespacedName]context.CancelFunc
	wg      sync.WaitGroup
}

// Run watches nudge PipelineRuns until ctx ends, then stops the running steps
// and waits for them.
func (r *Runner) Run(ctx context.Context) error {
	r.mu.Lock()
	r.running = map[types.NamespacedName]context.CancelFunc{}
	r.mu.Unlock()
	defer r.wg.Wait()
	for ctx.Err() == nil {
		if err := r.watchOnce(ctx); err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

// Start runs r in the background until stop is called; stop stops the running
// steps, waits for them and returns what Run returned.
func (r *Runner) Start(ctx context.Context) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return func() error { cancel(); return <-done }
}

func (r *Runner) watchOnce(ctx context.Context) error {
	// The watch starts with an ADDED event per existing run, so runs created
	// before the runner started are picked up too.
	w, err := r.Client.Watch(ctx, &tektonv1.PipelineRunList{},
		ctrlclient.MatchingLabels{renovate.LabelType: renovate.LabelTypeNudge}, ctrlclient.InNamespace(r.Namespace))
	if err != nil {
		return fmt.Errorf("watch nudge PipelineRuns: %w", err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil // the server closed the watch; watch again
			}
			plr, isRun := ev.Object.(*tektonv1.PipelineRun)
			if !isRun || (ev.Type != watch.Added && ev.Type != watch.Modified) || (r.Select != nil && !r.Select(plr)) {
				continue
			}
			r.observe(ctx, plr)
		}
	}
}

func isCancelled(s tektonv1.PipelineRunSpecStatus) bool {
	return s == tektonv1.PipelineRunSpecStatusCancelled ||
		s == tektonv1.PipelineRunSpecStatusCancelledRunFinally ||
		s == tektonv1.PipelineRunSpecStatusStoppedRunFinally
}

// observe starts a released run that has not started, and stops a running one
// that was cancelled.
func (r *Runner) observe(ctx context.Context, plr *tektonv1.PipelineRun) {
	key := types.NamespacedName{Namespace: plr.Namespace, Name: plr.Name}
	r.mu.Lock()
	defer r.mu.Unlock()
	if stop, ok := r.running[key]; ok {
		if isCancelled(plr.Spec.Status) {
			stop()
		}
		return
	}
	if plr.Spec.Status == tektonv1.PipelineRunSpecStatusPending || plr.Status.StartTime != nil {
		return
	}
	if isCancelled(plr.Spec.Status) {
		// Cancelled before it started (as nudgeflow cancels held runs): end it
		// the way Tekton does, without running anything.
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			now := metav1.Now()
			_ = r.writeStatus(ctx, key, func(s *tektonv1.PipelineRunStatus) {
				s.StartTime, s.CompletionTime = &now, &now
				s.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionFalse,
					Reason: ReasonCancelled, Message: "PipelineRun cancelled before it started"})
			})
		}()
		return
	}
	runCtx, cancel := context.WithCancel(ctx)
	r.running[key] = cancel
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer cancel()
		r.execute(runCtx, plr.DeepCopy())
		// The entry stays: a finished run is never started again by this runner.
	}()
}

// statusRetry retries a status write that met a conflict: other controllers (the
// bridge's branch queue, a ChangeGroup's hold, supersession) annotate a run while
// it runs, several at once when bridges run side by side, and a run's end that is
// never written leaves its Nudge waiting for good. retry.DefaultRetry gives up
// after about 50 ms; this keeps trying for about 15 s.
var statusRetry = wait.Backoff{Steps: 30, Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Cap: time.Second}

func (r *Runner) writeStatus(ctx context.Context, key types.NamespacedName, mutate func(*tektonv1.PipelineRunStatus)) error {
	err := retry.RetryOnConflict(statusRetry, func() error {
		var cur tektonv1.PipelineRun
		if err := r.Client.Get(ctx, key, &cur); err != nil {
			return err
		}
		mutate(&cur.Status)
		return r.Client.Status().Update(ctx, &cur)
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("write status of PipelineRun %s: %w", key, err)
	}
	return nil
}

// execute runs every task of plr in order and writes the outcome. Status write
// errors after the start are retried with a fresh context: a cancelled run
// still has to say so.
func (r *Runner) execute(ctx context.Context, plr *tektonv1.PipelineRun) {
	key := types.NamespacedName{Namespace: plr.Namespace, Name: plr.Name}
	now := metav1.Now()
	var children []tektonv1.ChildStatusReference
	if plr.Spec.PipelineSpec != nil {
		for _, t := range plr.Spec.PipelineSpec.Tasks {
			children = append(children, tektonv1.ChildStatusReference{
				TypeMeta:         runtimeTypeMeta(),
				Name:             plr.Name + "-" + t.Name,
				PipelineTaskName: t.Name,
			})
		}
	}
	if err := r.writeStatus(ctx, key, func(s *tektonv1.PipelineRunStatus) {
		s.StartTime = &now
		s.ChildReferences = children
		s.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionUnknown,
			Reason: ReasonRunning, Message: "Tasks Completed: 0 (Failed: 0, Cancelled 0), Incomplete: 1, Skipped: 0"})
	}); err != nil {
		return
	}
	var results map[string]map[string]string
	runErr := r.beforeRun(ctx, plr)
	if runErr == nil {
		results, runErr = r.runTasks(ctx, plr)
	}
	cond := &apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue, Reason: ReasonSucceeded,
		Message: "Tasks Completed: 1 (Failed: 0, Cancelled 0), Skipped: 0"}
	switch {
	case ctx.Err() != nil:
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, ReasonCancelled, fmt.Sprintf("PipelineRun %q was cancelled", plr.Name)
	case runErr != nil:
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, ReasonFailed, runErr.Error()
	}
	done := metav1.Now()
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := r.writeStatus(bg, key, func(s *tektonv1.PipelineRunStatus) {
		s.CompletionTime = &done
		s.Results = pipelineResults(plr, results)
		s.SetCondition(cond)
	}); err != nil {
		// Said in the run's log: a run whose end is not written looks running forever.
		r.noteInLog(plr, "writing the run's end failed: "+err.Error())
	}
}

// noteInLog appends a runner's line to the run's log.
func (r *Runner) noteInLog(plr *tektonv1.PipelineRun, note string) {
	f, err := os.OpenFile(r.LogPath(plr.Namespace, plr.Name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "--- runner: %s\n", note)
}

func (r *Runner) beforeRun(ctx context.Context, plr *tektonv1.PipelineRun) error {
	if r.BeforeRun == nil {
		return nil
	}
	if err := r.BeforeRun(ctx, plr); err != nil {
		return fmt.Errorf("before the run: %w", err)
	}
	return nil
}

// resultPath is Tekton's $(results.<name>.path) placeholder.
var resultPath = regexp.MustCompile(`\$\(results\.([A-Za-z0-9_-]+)\.path\)`)

func runtimeTypeMeta() (tm runtime.TypeMeta) {
	tm.APIVersion, tm.Kind = "tekton.dev/v1", "TaskRun"
	return tm
}

// pipelineResults resolves the pipeline's results ("$(tasks.T.results.R)") from
// what the tasks wrote.
func pipelineResults(plr *tektonv1.PipelineRun, taskResults map[string]map[string]string) []tektonv1.PipelineRunResult {
	if plr.Spec.PipelineSpec == nil {
		return nil
	}
	var out []tektonv1.PipelineRunResult
	for _, pr := range plr.Spec.PipelineSpec.Results {
		v := pr.Value.StringVal
		for task, rs := range taskResults {
			for name, val := range rs {
				v = strings.ReplaceAll(v, "$(tasks."+task+".results."+name+")", val)
			}
		}
		if strings.Contains(v, "$(") {
			continue // Tekton omits results whose task result was never written
		}
		out = append(out, tektonv1.PipelineRunResult{Name: pr.Name, Value: *tektonv1.NewStructuredValues(v)})
	}
	return out
}

// runTasks runs the tasks in order; it returns each task's results.
func (r *Runner) runTasks(ctx context.Context, plr *tektonv1.PipelineRun) (map[string]map[string]string, error) {
	if plr.Spec.PipelineSpec == nil {
		return nil, errors.New("the runner only runs embedded pipelineSpecs")
	}
	logPath := filepath.Join(r.StateDir, "runs", plr.Namespace, plr.Name+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, fmt.Errorf("make the run log directory: %w", err)
	}
	// 0600: Renovate masks the tokens it knows, but debug logs are verbose.
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create the run log: %w", err)
	}
	defer logFile.Close()
	workDir := filepath.Join(r.StateDir, "work", plr.Namespace, plr.Name)
	if err := os.RemoveAll(workDir); err != nil {
		return nil, fmt.Errorf("clear the run's work directory: %w", err)
	}
	all := map[string]map[string]string{}
	for _, t := range plr.Spec.PipelineSpec.Tasks {
		if t.TaskSpec == nil {
			return all, fmt.Errorf("task %s: the runner only runs embedded taskSpecs", t.Name)
		}
		res, err := r.runTask(ctx, plr.Namespace, filepath.Join(workDir, t.Name), t.TaskSpec.TaskSpec, logFile)
		all[t.Name] = res
		if err != nil {
			return all, fmt.Errorf("task %s: %w", t.Name, err)
		}
	}
	return all, nil
}

func (r *Runner) runTask(ctx context.Context, ns, dir string, spec tektonv1.TaskSpec, log *os.File) (map[string]string, error) {
	volumes, notes, err := r.materialiseVolumes(ctx, ns, filepath.Join(dir, "volumes"), spec.Volumes)
	if err != nil {
		return nil, err
	}
	for _, n := range notes {
		fmt.Fprintf(log, "--- runner: %s\n", n)
	}
	resultsDir := filepath.Join(dir, "results")
	home := filepath.Join(dir, "home")
	for _, d := range []string{resultsDir, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("make %s: %w", d, err)
		}
	}
	var stepErr error
	for i, step := range spec.Steps {
		fmt.Fprintf(log, "--- step %s\n", step.Name)
		if stepErr = r.runStep(ctx, ns, filepath.Join(dir, fmt.Sprintf("step-%d", i)), home, resultsDir, step, volumes, log); stepErr != nil {
			stepErr = fmt.Errorf("step %s: %w", step.Name, stepErr)
			break
		}
	}
	results := map[string]string{}
	for _, res := range spec.Results {
		b, err := os.ReadFile(filepath.Join(resultsDir, res.Name))
		if err == nil {
			results[res.Name] = string(b)
		}
	}
	return results, stepErr
}

// materialiseVolumes writes ConfigMap and Secret volumes as files: volume name
// → its local directory. notes say what it changed on the way (platformForPinned).
func (r *Runner) materialiseVolumes(ctx context.Context, ns, dir string, volumes []corev1.Volume) (out map[string]string, notes []string, err error) {
	out = map[string]string{}
	for _, v := range volumes {
		var data map[string][]byte
		var items []corev1.KeyToPath
		switch {
		case v.ConfigMap != nil:
			var cm corev1.ConfigMap
			if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: v.ConfigMap.Name}, &cm); err != nil {
				return nil, nil, fmt.Errorf("volume %s: read ConfigMap %s: %w", v.Name, v.ConfigMap.Name, err)
			}
			data = map[string][]byte{}
			for k, s := range cm.Data {
				b, note := platformForPinned(k, []byte(s))
				if note != "" {
					notes = append(notes, fmt.Sprintf("volume %s: %s: %s", v.Name, k, note))
				}
				data[k] = b
			}
			for k, b := range cm.BinaryData {
				data[k] = b
			}
			items = v.ConfigMap.Items
		case v.Secret != nil:
			var sec corev1.Secret
			if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: v.Secret.SecretName}, &sec); err != nil {
				return nil, nil, fmt.Errorf("volume %s: read Secret %s: %w", v.Name, v.Secret.SecretName, err)
			}
			data, items = sec.Data, v.Secret.Items
		default:
			return nil, nil, fmt.Errorf("volume %s: only ConfigMap and Secret volumes are supported", v.Name)
		}
		vdir := filepath.Join(dir, v.Name)
		if err := os.MkdirAll(vdir, 0o700); err != nil {
			return nil, nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		if len(items) == 0 {
			for k := range data {
				items = append(items, corev1.KeyToPath{Key: k, Path: k})
			}
		}
		for _, it := range items {
			b, ok := data[it.Key]
			if !ok {
				return nil, nil, fmt.Errorf("volume %s: key %s is missing", v.Name, it.Key)
			}
			p := filepath.Join(vdir, it.Path)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				return nil, nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			if err := os.WriteFile(p, b, 0o600); err != nil {
				return nil, nil, fmt.Errorf("volume %s: write %s: %w", v.Name, it.Path, err)
			}
		}
		out[v.Name] = vdir
	}
	return out, notes, nil
}

// pinnedPlatform maps a Renovate platform the mintmaker image's Renovate has to
// the one the pinned Renovate (39.x) runs for it. Renovate added its forgejo
// platform in 41.x, a line that needs Node 22; the gitea platform of 39.x
// speaks the API Forgejo and Gitea share (/api/v1), which is what the forgejo
// platform of 41.x calls too. nudgeflow writes platform forgejo, as
// build-service does; the runner, standing in for the mintmaker image, runs it
// as gitea so that config is used unchanged everywhere else.
var pinnedPlatform = map[string]string{"forgejo": "gitea"}

// platformForPinned rewrites the platform of a Renovate config file (a .json
// ConfigMap key holding an object with a platform the pinned Renovate lacks),
// keeping every other key as written; note says what it did ("" when nothing).
func platformForPinned(key string, b []byte) ([]byte, string) {
	if !strings.HasSuffix(key, ".json") {
		return b, ""
	}
	var cfg map[string]json.RawMessage
	var platform string
	if json.Unmarshal(b, &cfg) != nil || json.Unmarshal(cfg["platform"], &platform) != nil {
		return b, ""
	}
	to, ok := pinnedPlatform[platform]
	if !ok {
		return b, ""
	}
	cfg["platform"], _ = json.Marshal(to)
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return b, ""
	}
	return out, fmt.Sprintf("platform %q run as %q (the pinned Renovate has no %s platform)", platform, to, platform)
}

func (r *Runner) runStep(ctx context.Context, ns, dir, home, resultsDir string, step tektonv1.Step, volumes map[string]string, log *os.File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("make the step directory: %w", err)
	}
	// mount path → local path, longest first so /a/b is rewritten before /a.
	type mount struct{ from, to string }
	var mounts []mount
	var caFile string
	for _, m := range step.VolumeMounts {
		local, ok := volumes[m.Name]
		if !ok {
			return fmt.Errorf("mount %s: no such volume", m.Name)
		}
		if m.SubPath != "" {
			local = filepath.Join(local, m.SubPath)
		}
		mounts = append(mounts, mount{from: m.MountPath, to: local})
		if m.MountPath == renovate.CAMountPath {
			caFile = local
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i].from) > len(mounts[j].from) })
	rewrite := func(s string) string {
		for _, m := range mounts {
			s = strings.ReplaceAll(s, m.from, m.to)
		}
		return resultPath.ReplaceAllString(s, filepath.Join(resultsDir, "$1"))
	}

	env := r.Env
	if env == nil {
		env = os.Environ()
	}
	// A step's container has its own /tmp: Renovate keeps its clones and its
	// package cache under os.tmpdir()/renovate, and runs sharing one would read
	// each other's cached lookups (a later run would see an earlier run's
	// registry answers). TMPDIR gives each step its own.
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return fmt.Errorf("make the step's TMPDIR: %w", err)
	}
	env = append(append([]string{}, env...), "HOME="+home, "TMPDIR="+tmp, "PATH="+r.ToolPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	if caFile != "" {
		env = append(env, "NODE_EXTRA_CA_CERTS="+caFile)
	}
	for _, ef := range step.EnvFrom {
		kv, err := r.envFrom(ctx, ns, ef)
		if err != nil {
			return err
		}
		for k, v := range kv {
			env = append(env, ef.Prefix+k+"="+v)
		}
	}
	for _, e := range step.Env {
		if e.ValueFrom != nil {
			return fmt.Errorf("env %s: valueFrom is not supported", e.Name)
		}
		env = append(env, e.Name+"="+rewrite(e.Value))
	}

	var argv []string
	if step.Script != "" {
		script := filepath.Join(dir, "script")
		body := rewrite(step.Script)
		if !strings.HasPrefix(body, "#!") {
			body = "#!/bin/sh\nset -e\n" + body // Tekton's default for a script without a shebang
		}
		if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
			return fmt.Errorf("write the step script: %w", err)
		}
		argv = []string{script}
	} else {
		for _, a := range append(append([]string{}, step.Command...), step.Args...) {
			argv = append(argv, rewrite(a))
		}
	}
	if len(argv) == 0 {
		return errors.New("the step has neither script nor command (image entrypoints are not known here)")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, log, log
	// Its own process group: cancelling kills Renovate and its children, not
	// just the shell that started them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", argv[0], err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		// What one run costs (Renovate and its children): the measure the README quotes.
		if st, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			fmt.Fprintf(log, "--- step %s exited %d: wall %s, cpu user %s sys %s, max rss %d KiB\n", step.Name,
				cmd.ProcessState.ExitCode(), time.Since(started).Round(time.Millisecond), cmd.ProcessState.UserTime().Round(time.Millisecond),
				cmd.ProcessState.SystemTime().Round(time.Millisecond), st.Maxrss)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", argv[0], err)
		}
		return nil
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
		fmt.Fprintf(log, "--- step %s killed: the run was cancelled\n", step.Name)
		return ctx.Err()
	}
}

func (r *Runner) envFrom(ctx context.Context, ns string, ef corev1.EnvFromSource) (map[string]string, error) {
	out := map[string]string{}
	switch {
	case ef.SecretRef != nil:
		var sec corev1.Secret
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: ef.SecretRef.Name}, &sec); err != nil {
			return nil, fmt.Errorf("envFrom Secret %s: %w", ef.SecretRef.Name, err)
		}
		for k, v := range sec.Data {
			out[k] = string(v)
		}
	case ef.ConfigMapRef != nil:
		var cm corev1.ConfigMap
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: ef.ConfigMapRef.Name}, &cm); err != nil {
			return nil, fmt.Errorf("envFrom ConfigMap %s: %w", ef.ConfigMapRef.Name, err)
		}
		for k, v := range cm.Data {
			out[k] = v
		}
	}
	return out, nil
}
