// Package bench is `nudgeflow-dev bench`: it starts the real system on this machine —
// kube-apiserver + etcd with every CRD and webhook, the Temporal dev server, the
// GitHub emulator, the bridge (in this process, its admission webhooks registered in
// the API server) and `nudgeflow worker` as a separate process — loads it to a
// tenant's scale and prints one line per measure:
//
//	bench bridge builds=B ...                  build PipelineRuns -> Temporal signals per second
//	bench intercept groups=N ...               nudge PipelineRun interception, N active groups vs none
//	bench changegroup-admission groups=N ...   ChangeGroup create admission, N groups vs none
//	bench worker groups=G ...                  worker RSS with G open, idle ChangeGroups
//	bridge-scale plrs=P ...                    `nudgeflow bridge` (its own process) with P PipelineRuns
//	                                           in the cluster: RSS, interception p99, cache sync
//	nudge-latency writer=W n=N ...             immediate nudges, Renovate's and the direct writer's, on
//	                                           a `nudgeflow-dev dev --forgejo` of its own (devenv.MeasureNudgeLatency)
//
// Waits are on conditions with deadlines (counted signals, CR status, the task
// queue's backlog, Temporal visibility), never on sleeps. The ChangeGroup workflows
// the bench starts get a 24h debounce: a build a group collects stays parked in it,
// so no pull request is pushed while the bench measures.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/ownership/ownershiptest"
	"github.com/nudgeflow/nudgeflow/internal/temporalconn"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
	"github.com/nudgeflow/nudgeflow/test/localbridge"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	nfworker "github.com/nudgeflow/nudgeflow/worker"
	cgwf "github.com/nudgeflow/nudgeflow/workflows/changegroup"
)

// The measures, in the order they run.
const (
	PhaseBridge    = "bridge"
	PhaseIntercept = "intercept"
	PhaseAdmission = "changegroup-admission"
	PhaseWorker    = "worker"
	PhaseScale     = "bridge-scale"
	// PhaseNudgeLatency runs on a stack of its own (`nudgeflow-dev dev --forgejo`),
	// only when named.
	PhaseNudgeLatency = "nudge-latency"
)

// Phases are every measure, in order.
var Phases = []string{PhaseBridge, PhaseIntercept, PhaseAdmission, PhaseWorker, PhaseScale, PhaseNudgeLatency}

// Options size the bench.
type Options struct {
	// Groups active ChangeGroups in the namespace of the admission measures,
	// GroupsPerBundle of them per nudged component (each with 3 members).
	Groups          int
	GroupsPerBundle int
	// Samples is how many admissions each admission measure times (the ChangeGroup
	// measure takes at most two per bundle).
	Samples int
	// Builds succeeded push builds with Edges validated nudge edges each.
	Builds int
	Edges  int
	// WorkerGroups open ChangeGroups for the worker's memory.
	WorkerGroups int
	// MaxConcurrentReconciles of the bridge (zero: the bridge's default).
	MaxConcurrentReconciles int
	// PipelineRuns in the cluster for the bridge-scale measure.
	PipelineRuns int
	// BridgeBinaries are the nudgeflow binaries whose `nudgeflow bridge` the
	// bridge-scale measure runs, one after the other on the same PipelineRuns (nil:
	// this one), to compare two builds without writing the runs twice.
	BridgeBinaries []string
	// Nudges per writer of the nudge-latency measure.
	Nudges int
	// WorkerArgs are extra flags of `nudgeflow worker` (its tuning).
	WorkerArgs []string
	// BridgeArgs are extra flags of the bridge-scale measure's `nudgeflow bridge`.
	BridgeArgs []string
	// TemporalArgs are extra flags of `temporal server start-dev`.
	TemporalArgs []string
	// Phases to run (nil: all but PhaseScale, which runs when named).
	Phases []string
	// Out receives the result lines, Log the progress.
	Out, Log io.Writer
	// KeepLogs keeps the servers', bridge's and worker's logs after a success.
	KeepLogs bool
	// ProfileDir, when set, receives a CPU profile and an allocation profile of this
	// process (the bench's clients and the in-process bridge) per measure:
	// cpu-<measure>.pprof and allocs-<measure>.pprof.
	ProfileDir string
}

// Defaults are a large tenant's sizes (1,000 groups, 1,000 builds, 10,000 open
// groups) and a Konflux cluster's (100,000 PipelineRuns).
func Defaults() Options {
	return Options{Groups: 1000, GroupsPerBundle: 10, Samples: 500, Builds: 1000, Edges: 4, WorkerGroups: 10000, PipelineRuns: 100000, Nudges: 10}
}

// Quick are small sizes for a smoke run (tens of seconds).
func Quick() Options {
	return Options{Groups: 20, GroupsPerBundle: 10, Samples: 20, Builds: 40, Edges: 4, WorkerGroups: 40, PipelineRuns: 2000, Nudges: 2}
}

// runs: the measures asked for with --only, else every measure but bridge-scale,
// which is asked for by name: 100,000 PipelineRuns take the better part of an hour
// to write on 2 cores; and nudge-latency, which starts a stack of its own with the
// Gitea server.
func (o Options) runs(phase string) bool {
	if len(o.Phases) == 0 {
		return phase != PhaseScale && phase != PhaseNudgeLatency
	}
	return slices.Contains(o.Phases, phase)
}

// Validate checks the sizes.
func (o Options) Validate() error {
	for _, p := range o.Phases {
		if !slices.Contains(Phases, p) {
			return fmt.Errorf("unknown measure %q (measures: %s)", p, strings.Join(Phases, ", "))
		}
	}
	if o.Groups < 1 || o.GroupsPerBundle < 1 || o.Samples < 1 || o.Builds < 1 || o.Edges < 1 || o.WorkerGroups < 1 || o.PipelineRuns < 1 || o.Nudges < 1 {
		return errors.New("every size must be at least 1")
	}
	return nil
}

// The bench's names.
const (
	taskQueue     = nfworker.DefaultTaskQueue
	forgeToken    = "ghs_benchTokenNeverLogged0000000000000001"
	credentialsNS = "forge-credentials"
)

// etcdQuota is etcd's backend quota: the bridge-scale measure's 100,000
// PipelineRuns of about 30 KB each, and their history until the API server
// compacts it, outgrow etcd's 2 GiB default. 8 GiB is etcd's largest recommended.
const etcdQuota = 8 << 30

// benchSettings park what a group collects: no push while the bench measures.
var benchSettings = cgwf.Settings{Debounce: 24 * time.Hour}

// stack is the running system.
type stack struct {
	opts       Options
	log        io.Writer
	logDir     string
	self       string
	cp         *localenv.ControlPlane
	tmp        *localenv.Temporal
	kube       ctrlclient.Client
	tc         client.Client // the bench's own Temporal client
	bridgeTC   client.Client // the bridge's, counting what it sends
	counter    *signalCounter
	emu        *githubemu.Server
	kubeconfig string
	worker     *workerProcess
	mgr        ctrl.Manager
	stopMgr    func() error
	managers   int
	stops      []func()
	seeded     map[string]bool
}

// Run starts the system, runs the measures and stops everything.
func Run(ctx context.Context, opts Options) (err error) {
	if err := opts.Validate(); err != nil {
		return err
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	s := &stack{opts: opts, log: opts.Log, seeded: map[string]bool{}}
	if s.self, err = os.Executable(); err != nil {
		return fmt.Errorf("finding the nudgeflow binary: %w", err)
	}
	if s.logDir, err = os.MkdirTemp("", "nudgeflow-bench-"); err != nil {
		return err
	}
	s.progress("logs in %s", s.logDir)
	defer func() {
		for i := len(s.stops) - 1; i >= 0; i-- {
			s.stops[i]()
		}
		if err != nil || opts.KeepLogs {
			s.progress("logs kept in %s", s.logDir)
		} else {
			_ = os.RemoveAll(s.logDir)
		}
	}()
	// nudge-latency brings its own stack; the others share this one.
	if slices.ContainsFunc(Phases, func(p string) bool { return p != PhaseNudgeLatency && opts.runs(p) }) {
		if err := s.start(ctx); err != nil {
			return err
		}
	}
	measures := map[string]func(context.Context) error{
		PhaseBridge: s.benchBridge, PhaseIntercept: s.benchIntercept, PhaseAdmission: s.benchAdmission, PhaseWorker: s.benchWorker,
		PhaseScale: s.benchBridgeScale,
		PhaseNudgeLatency: func(ctx context.Context) error {
			return benchNudgeLatency(ctx, s.opts, s.logDir, s.progress)
		},
	}
	for _, p := range Phases {
		if !opts.runs(p) {
			continue
		}
		began := time.Now()
		s.progress("measure %s…", p)
		stopProfile, err := startProfile(opts.ProfileDir, p)
		if err != nil {
			return err
		}
		err = measures[p](ctx)
		if perr := stopProfile(); err == nil && perr != nil {
			err = perr
		}
		if err != nil {
			return fmt.Errorf("measure %s: %w", p, err)
		}
		s.progress("measure %s done in %s", p, time.Since(began).Round(time.Second))
	}
	return nil
}

func (s *stack) progress(format string, args ...any) {
	fmt.Fprintf(s.log, "bench: %s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func (s *stack) result(format string, args ...any) {
	fmt.Fprintf(s.opts.Out, format+"\n", args...)
}

func (s *stack) openLog(name string) (*os.File, error) {
	f, err := os.Create(filepath.Join(s.logDir, name))
	if err != nil {
		return nil, err
	}
	s.stops = append(s.stops, func() { _ = f.Close() })
	return f, nil
}

// start brings up the servers, the emulator, the worker process and the bridge.
func (s *stack) start(ctx context.Context) error {
	cpLog, err := s.openLog("kube-apiserver-etcd.log")
	if err != nil {
		return err
	}
	tLog, err := s.openLog("temporal.log")
	if err != nil {
		return err
	}
	shims := filepath.Join(s.logDir, "shims")
	var wg sync.WaitGroup
	var cpErr, tErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		localenv.OnLongLivedThread(func() {
			o := localenv.ControlPlaneOptions{
				Log: cpLog, EtcdDataDir: filepath.Join(s.logDir, "etcd"), DieWithParentDir: shims,
				WebhookManifests: []string{filepath.Join(localenv.RepoRoot(), "deploy", "webhooks")},
			}
			// The bridge-scale measure's PipelineRuns.
			ScaleControlPlane(&o)
			s.cp, cpErr = localenv.StartControlPlane(o)
		})
	}()
	go func() {
		defer wg.Done()
		localenv.OnLongLivedThread(func() {
			s.tmp, tErr = localenv.StartTemporal(ctx, localenv.TemporalOptions{Log: tLog, DieWithParentDir: shims, ExtraArgs: s.opts.TemporalArgs})
		})
	}()
	wg.Wait()
	// A server that will not stop is reported, not silently left behind.
	if s.cp != nil {
		s.stops = append(s.stops, func() {
			if err := s.cp.Stop(); err != nil {
				s.progress("stopping kube-apiserver and etcd: %v", err)
			}
		})
	}
	if s.tmp != nil {
		s.stops = append(s.stops, func() {
			if err := s.tmp.Stop(); err != nil {
				s.progress("stopping Temporal: %v", err)
			}
		})
	}
	if err := errors.Join(cpErr, tErr); err != nil {
		return err
	}
	s.progress("kube-apiserver, etcd and Temporal answer")
	c, err := ctrlclient.New(s.cp.Config, ctrlclient.Options{Scheme: kube.NewScheme()})
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	// The Components it creates are onboarded as build-service onboards them: their
	// namespaces own their repositories (the worker writes to no other).
	s.kube = ownershiptest.Onboarding(c)
	if s.tc, err = s.tmp.Dial(); err != nil {
		return fmt.Errorf("temporal client: %w", err)
	}
	s.stops = append(s.stops, s.tc.Close)
	s.counter = newSignalCounter()
	sdkLog, err := s.openLog("bridge-temporal-client.log")
	if err != nil {
		return err
	}
	// The bridge's client is configured as `nudgeflow bridge` configures its own by
	// default (temporalconn), as is the bench's, which sends the direct baseline.
	bridgeOpts := client.Options{HostPort: s.tmp.Address, Namespace: s.tmp.Namespace,
		Logger: sdklog.NewStructuredLogger(slogTo(sdkLog)), Interceptors: []interceptor.ClientInterceptor{s.counter}}
	if err := temporalconn.Apply(&bridgeOpts, temporalconn.DefaultCompression); err != nil {
		return err
	}
	if s.bridgeTC, err = client.Dial(bridgeOpts); err != nil {
		return fmt.Errorf("temporal client of the bridge: %w", err)
	}
	s.stops = append(s.stops, s.bridgeTC.Close)

	s.emu = githubemu.New()
	// The token has an installation token's prefix: its account is an App's bot
	// user, with the id-based noreply address GitHub gives it (as the dev stack's).
	s.emu.AddToken(forgeToken, githubemu.AppBotUser("nudgeflow", 1, s.emu.Host()))
	s.stops = append(s.stops, s.emu.Close)

	user, err := s.cp.Env.AddUser(envtest.User{Name: "bench-worker", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding the worker's user to the API server: %w", err)
	}
	raw, err := user.KubeConfig()
	if err != nil {
		return err
	}
	s.kubeconfig = filepath.Join(s.logDir, "kubeconfig")
	if err := os.WriteFile(s.kubeconfig, raw, 0o600); err != nil {
		return err
	}
	if err := s.startWorker(ctx, "worker.log"); err != nil {
		return err
	}
	bridgeLog, err := s.openLog("bridge.log")
	if err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(bridgeLog), zap.JSONEncoder()))
	return s.startBridge(ctx)
}

// startWorker starts a `nudgeflow worker` process and waits until it polls.
func (s *stack) startWorker(ctx context.Context, logName string) error {
	args := append([]string{"--kubeconfig", s.kubeconfig, "--task-queue", taskQueue}, s.opts.WorkerArgs...)
	env := append(os.Environ(), "TEMPORAL_ADDRESS="+s.tmp.Address, "TEMPORAL_NAMESPACE="+s.tmp.Namespace)
	p, err := startWorker(s.self, args, env, filepath.Join(s.logDir, logName))
	if err != nil {
		return err
	}
	s.worker = p
	s.stops = append(s.stops, func() {
		if s.worker == p {
			p.stop(30 * time.Second)
		}
	})
	return waitFor(ctx, time.Minute, "nudgeflow worker polls the task queue", func() (bool, error) {
		if err := p.exited(); err != nil {
			return false, err
		}
		return polling(ctx, s.tc, s.tmp.Namespace, taskQueue, p.pid())
	})
}

// startBridge starts a bridge manager (reconcilers and webhooks) and waits until its
// cache is synced and its webhooks serve.
func (s *stack) startBridge(ctx context.Context) error {
	wio := s.cp.Env.WebhookInstallOptions
	// Every manager after the first registers its controllers' names again (counted
	// before Start: a failed start may have registered them already).
	skipNames := s.managers > 0
	s.managers++
	b, err := localbridge.Start(ctx, localbridge.Options{
		Config: s.cp.Config,
		Manager: bridge.ManagerOptions{
			WebhookHost: wio.LocalServingHost, WebhookPort: wio.LocalServingPort, WebhookCertDir: wio.LocalServingCertDir,
			MaxConcurrentReconciles: s.opts.MaxConcurrentReconciles, SkipControllerNameValidation: skipNames,
		},
		Deps: bridge.Deps{Temporal: s.bridgeTC, TaskQueue: taskQueue, ChangeGroup: benchSettings},
	})
	if err != nil {
		return err
	}
	s.mgr, s.stopMgr = b.Manager, b.Stop
	s.stops = append(s.stops, func() { _ = b.Stop() })
	return nil
}

// waitFor polls cond until it holds, fails at the deadline or when cond errs for
// good (an exited process); transient errors are retried.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok && err == nil {
			return nil
		}
		if err != nil {
			last = err
			var fatal *fatalError
			if errors.As(err, &fatal) {
				return fmt.Errorf("waiting until %s: %w", what, err)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting until %s: gave up after %s (last error: %v)", what, timeout, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting until %s: %w", what, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// fatalError ends a wait at once.
type fatalError struct{ err error }

func (f *fatalError) Error() string { return f.err.Error() }
func (f *fatalError) Unwrap() error { return f.err }

// parallel runs fn(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(ctx, i); err != nil {
					cancel(err)
				}
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}
