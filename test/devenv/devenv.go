// Package devenv is `nudgeflow-dev dev`: the whole system on one machine. It starts a
// real kube-apiserver + etcd with every CRD and webhook, the Temporal dev server
// with its Web UI, the GitHub emulator with its web pages, the bridge and the
// worker; seeds a demo namespace; and keeps their state under one folder so a
// restart resumes where it stopped. The simulator (simulate.go) stands in for the
// Konflux services a local world lacks.
package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nudgeflow/nudgeflow/activities/changegrouppr"
	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/temporalconn"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
	glemu "github.com/nudgeflow/nudgeflow/test/forgeemu/gitlab"
	"github.com/nudgeflow/nudgeflow/test/localbridge"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	nfworker "github.com/nudgeflow/nudgeflow/worker"
	cgwf "github.com/nudgeflow/nudgeflow/workflows/changegroup"
	prgroupwf "github.com/nudgeflow/nudgeflow/workflows/prgroup"
)

// Ports are where the parts listen on 127.0.0.1.
type Ports struct {
	APIServer  int // kube-apiserver (HTTPS)
	Temporal   int // Temporal frontend (gRPC)
	TemporalUI int // Temporal Web UI
	Forge      int // GitHub emulator: API and web pages
	ForgeHook  int // the bridge's forge webhook receiver
	GitLab     int // GitLab emulator: API and web pages
	Forgejo    int // the real Gitea server (API and web UI), with Options.Forgejo
	Registry   int // the OCI image registry (HTTPS, the stack's CA)
}

// DefaultPorts are the documented defaults.
var DefaultPorts = Ports{APIServer: 16443, Temporal: 7233, TemporalUI: 8233, Forge: 8180, ForgeHook: 8181, GitLab: 8182, Forgejo: 8183, Registry: 8184}

// Options configure Run.
type Options struct {
	// Home holds the state (see Home); created when missing.
	Home  string
	Ports Ports
	// Out receives the progress lines and the ready banner.
	Out io.Writer
	// Settings tune the ChangeGroup workflows (short debounce and poll for a demo).
	Settings cgwf.Settings
	// NoParentDeathSignal starts the servers without the parent-death signal, so
	// they outlive a killed `nudgeflow-dev dev` (tests of the recovery in the next start).
	NoParentDeathSignal bool
	// Worker sizes the worker (zero fields: worker's defaults).
	Worker nfworker.Tuning
	// MaxConcurrentReconciles of the bridge's controllers (zero: bridge's default).
	MaxConcurrentReconciles int
	// Forgejo also starts the real Gitea server (the API Forgejo shares) on
	// Ports.Forgejo with the third bundle. Opt-in: its first build costs about 770
	// CPU-seconds and each start a migration and a web server.
	Forgejo bool
}

// ForgejoPassword is the password of the Forgejo person (localenv.ForgejoHuman) who
// merges and edits in the web UI: a local demo credential, printed in the banner,
// that only ever signs in to the loopback server `nudgeflow-dev dev --forgejo` starts.
const ForgejoPassword = "nudgeflow-demo"

// BotUser is nudgeflow's account on the local GitHub emulator: an App's bot user,
// as the bot token ("ghs_…", an installation token's prefix) says it is, with
// an id of its own and GitHub's id-based noreply address. Renovate, given that
// token, asks the forge who it is (GraphQL viewer) and expects the commits it
// makes through the API to carry that address; the emulator authors them so.
var BotUser = githubemu.AppBotUser("nudgeflow", devAppID, "127.0.0.1")

// devAppID is the id of the App the dev stack's bot user belongs to (none is
// registered: the bot token is handed out as is).
const devAppID = 1

// Bot is the commit identity of nudgeflow in the local world: BotUser's, so a
// commit nudgeflow writes and one Renovate makes through the API read as the
// same bot's.
var Bot = forge.Signature{Name: BotUser.Login, Email: BotUser.Email}

// devPRGroupPoll is how often the demo's PR groups read their originating PRs and
// look for push builds.
const devPRGroupPoll = 10 * time.Second

// Run starts everything, prints the ready banner and blocks until ctx ends, then
// stops everything in order. State under opts.Home survives for the next Run.
func Run(ctx context.Context, opts Options) (err error) {
	began := time.Now()
	out := opts.Out
	if opts.Settings == (cgwf.Settings{}) {
		opts.Settings = cgwf.Settings{Debounce: 2 * time.Second, PollInterval: 10 * time.Second}
	}
	logs := filepath.Join(opts.Home, dirLogs)
	for _, d := range []string{opts.Home, filepath.Join(opts.Home, dirEtcd), logs} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	if err := recoverCrash(opts.Home, out); err != nil {
		return err
	}
	if err := checkPorts(opts.Ports, opts.Forgejo); err != nil {
		return err
	}
	// From here on running.json names this process, then its servers: a crash
	// leaves the next start what to stop.
	run := Running{PID: os.Getpid(), Owner: self()}
	if err := writeJSONFile(filepath.Join(opts.Home, fileRunning), run); err != nil {
		return err
	}
	tok, err := loadTokens(opts.Home)
	if err != nil {
		return err
	}

	var stops []func() // run in reverse order
	defer func() {
		parts := "Renovate runner, worker, bridge, GitHub and GitLab emulators, image registry, Temporal, kube-apiserver and etcd"
		if opts.Forgejo {
			parts = "Renovate runner, worker, bridge, GitHub and GitLab emulators, image registry, Forgejo (Gitea), Temporal, kube-apiserver and etcd"
		}
		fmt.Fprintln(out, "stopping: "+parts)
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		_ = os.Remove(filepath.Join(opts.Home, fileRunning))
		if err == nil {
			fmt.Fprintf(out, "stopped; the state stays in %s: `make run` resumes it\n", opts.Home)
		}
	}()
	openLog := func(name string) (*os.File, error) {
		f, err := os.OpenFile(filepath.Join(logs, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("opening log %s: %w", name, err)
		}
		stops = append(stops, func() { _ = f.Close() })
		return f, nil
	}

	// The control plane and Temporal start side by side.
	cpLog, err := openLog("kube-apiserver-etcd.log")
	if err != nil {
		return err
	}
	tLog, err := openLog("temporal.log")
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "starting kube-apiserver + etcd and the Temporal dev server…")
	var (
		wg     sync.WaitGroup
		cp     *localenv.ControlPlane
		tmp    *localenv.Temporal
		fj     *localenv.Forgejo
		cpErr  error
		tmpErr error
		fjErr  error
	)
	// The servers get SIGKILL from the kernel when this process dies (Linux), so
	// a crash cannot leave them running; each is started from a thread that
	// lives as long as the process, as that signal follows the parent thread.
	shims := filepath.Join(opts.Home, dirShims)
	if opts.NoParentDeathSignal {
		shims = ""
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		localenv.OnLongLivedThread(func() {
			cp, cpErr = localenv.StartControlPlane(localenv.ControlPlaneOptions{
				Log: cpLog, EtcdDataDir: filepath.Join(opts.Home, dirEtcd), APIServerPort: opts.Ports.APIServer,
				WebhookManifests: []string{filepath.Join(localenv.RepoRoot(), "deploy", "webhooks")},
				DieWithParentDir: shims,
				// nudgeflow alone, as on a cluster without integration-service.
				WithoutShippedNudgeConfig: true,
			})
		})
	}()
	go func() {
		defer wg.Done()
		localenv.OnLongLivedThread(func() {
			tmp, tmpErr = localenv.StartTemporal(ctx, localenv.TemporalOptions{
				Port: opts.Ports.Temporal, UIPort: opts.Ports.TemporalUI, DBFile: filepath.Join(opts.Home, fileTemporalDB), Log: tLog,
				DieWithParentDir: shims,
			})
		})
	}()
	if opts.Forgejo {
		fjLog, err := openLog("gitea.log")
		if err != nil {
			return err
		}
		fmt.Fprintln(out, "starting Forgejo (the real Gitea server; when it is not in the tool cache yet, hack/tools.sh builds it first from the Go module proxy: about 770 CPU-seconds, several minutes)…")
		wg.Add(1)
		go func() {
			defer wg.Done()
			// StartForgejo starts the server from a long-lived thread itself, with
			// the parent-death signal unless told otherwise.
			fj, fjErr = localenv.StartForgejoWith(ctx, filepath.Join(opts.Home, dirForgejo), localenv.ForgejoOptions{
				Port: opts.Ports.Forgejo, Log: fjLog, HumanPassword: ForgejoPassword, NoParentDeathSignal: opts.NoParentDeathSignal})
			if fjErr != nil {
				fjErr = fmt.Errorf("starting Forgejo (Gitea): %w", fjErr)
			}
		}()
	}
	wg.Wait()
	if fj != nil {
		stops = append(stops, func() { logStop("Forgejo", fj.Stop()) })
	}
	if cp != nil {
		stops = append(stops, func() { logStop("kube-apiserver and etcd", cp.Stop()) })
		run.TempDirs = cp.TempDirs()
	}
	if tmp != nil {
		stops = append(stops, func() { logStop("Temporal", tmp.Stop()) })
	}
	// This process's children now are the servers (the tool look-ups and envtest's
	// flag checks have exited).
	run.Children = childrenOf(os.Getpid())
	if err := writeJSONFile(filepath.Join(opts.Home, fileRunning), run); err != nil {
		return err
	}
	if err := errors.Join(cpErr, tmpErr, fjErr); err != nil {
		return fmt.Errorf("%w (logs in %s)", err, logs)
	}
	fmt.Fprintf(out, "  kube-apiserver and Temporal answer (%s)\n", time.Since(began).Round(100*time.Millisecond))

	workerLog, err := openLog("worker.log")
	if err != nil {
		return err
	}
	tcOpts := client.Options{HostPort: tmp.Address, Namespace: tmp.Namespace,
		Logger: sdklog.NewStructuredLogger(slog.New(slog.NewJSONHandler(workerLog, &slog.HandlerOptions{Level: slog.LevelInfo})))}
	if err := temporalconn.Apply(&tcOpts, temporalconn.DefaultCompression); err != nil {
		return err
	}
	tc, err := client.Dial(tcOpts)
	if err != nil {
		return fmt.Errorf("connecting to Temporal at %s: %w", tmp.Address, err)
	}
	stops = append(stops, tc.Close)
	kc, err := ctrlclient.New(cp.Config, ctrlclient.Options{Scheme: kube.NewScheme()})
	if err != nil {
		return fmt.Errorf("creating a Kubernetes client: %w", err)
	}

	// The image registry the simulated builds push to and Renovate reads, trusted
	// through the worker's trusted CA bundle; a restart pushes the builds' images
	// again (it keeps them in memory).
	reg, regCA, err := startRegistry(opts.Home, opts.Ports.Registry)
	if err != nil {
		return err
	}
	stops = append(stops, func() { logStop("image registry", reg.Close()) })
	if err := trustRegistry(ctx, kc, regCA); err != nil {
		return err
	}
	if err := republishBuiltImages(ctx, kc, reg); err != nil {
		return err
	}

	// The GitHub emulator, with the state of the last run.
	emu, err := githubemu.NewAt(net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.Ports.Forge)))
	if err != nil {
		return err
	}
	emuFile := filepath.Join(opts.Home, fileEmulator)
	emuStop := make(chan struct{})
	emuDone := make(chan struct{})
	stops = append(stops, func() {
		close(emuStop)
		<-emuDone
		emu.Close()
		logStop("saving the GitHub emulator's state", emu.Save(emuFile))
	})
	if _, err := emu.Load(emuFile); err != nil {
		close(emuDone)
		return err
	}
	go saveLoop(emu, emuFile, emuStop, emuDone)
	emu.AddToken(tok.Bot, BotUser)
	emu.AddToken(tok.Maintainer, githubemu.User{Login: "maintainer", Name: "Demo Maintainer", Email: "maintainer@example.com"})
	seedForge(emu, reg.Host)

	// The GitLab emulator, with the state of the last run: the second bundle's forge.
	gl, err := glemu.NewAt(net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.Ports.GitLab)))
	if err != nil {
		return err
	}
	glFile := filepath.Join(opts.Home, fileGitLabEmulator)
	glStop := make(chan struct{})
	glDone := make(chan struct{})
	stops = append(stops, func() {
		close(glStop)
		<-glDone
		gl.Close()
		logStop("saving the GitLab emulator's state", gl.Save(glFile))
	})
	if _, err := gl.Load(glFile); err != nil {
		close(glDone)
		return err
	}
	go saveLoop(gl, glFile, glStop, glDone)
	gl.AddToken(tok.Bot, glemu.User{Username: "project_1_bot", Name: Bot.Name, Email: Bot.Email})
	gl.AddToken(tok.Maintainer, glemu.User{Username: "maintainer", Name: "Demo Maintainer", Email: "maintainer@example.com"})
	seedGitLab(gl, reg.Host)

	// The bridge: reconcilers, admission webhooks, forge webhook receiver.
	bridgeLog, err := openLog("bridge.log")
	if err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(bridgeLog), zap.JSONEncoder()))
	wio := cp.Env.WebhookInstallOptions
	b, err := localbridge.Start(ctx, localbridge.Options{
		Config: cp.Config,
		Manager: bridge.ManagerOptions{WebhookHost: wio.LocalServingHost, WebhookPort: wio.LocalServingPort, WebhookCertDir: wio.LocalServingCertDir,
			MaxConcurrentReconciles: opts.MaxConcurrentReconciles},
		Deps: bridge.Deps{Temporal: tc, TaskQueue: nfworker.DefaultTaskQueue, ChangeGroup: opts.Settings,
			// The demo's PR groups poll every 10 s, as its ChangeGroups do: a missed
			// wake-up (a push build a second after the merge) costs seconds, not 5 min.
			PRGroup: prgroupwf.Settings{PollInterval: devPRGroupPoll}},
		// One receiver for every forge, as it ships: GitHub and Gitea sign with the
		// shared secret, GitLab sends it as X-Gitlab-Token. The two emulated bundles
		// are bound to the demo namespace under its own secret, as a cluster admin
		// binds a tenant's repositories: their repository hooks sign with it, and the
		// shared hook's deliveries about them are refused (401 in logs/bridge.log).
		ForgeHook: &localbridge.ForgeHook{Secret: tok.WebhookSecret, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.Ports.ForgeHook)),
			Forges: []localbridge.Forge{emu, gl},
			Bound: []localbridge.BoundSecret{{Name: "webhook-" + DemoNamespace, Namespace: DemoNamespace, Secret: tok.BoundWebhookSecret,
				Repositories: []string{emu.URL() + "/" + DemoNamespace + "/" + Bundle, gl.URL() + "/" + DemoNamespace + "/" + GitLabBundle}}}},
		WebhookCA: wio.LocalServingCAData,
	})
	if err != nil {
		return err
	}
	stops = append(stops, func() { logStop("bridge", b.Stop()) })
	hookURL := b.ForgeHookURL
	if fj != nil {
		// The Gitea server tells the bridge of every pull request event at once (the
		// workflow's poll stays the fallback); a resumed server keeps its hook.
		if err := fj.AddSystemWebhook(hookURL, tok.WebhookSecret); err != nil {
			return err
		}
	}

	// The worker, with ReleasePlanAdmissions read through a cache as in a cluster.
	wkc, err := kube.WithReleaseCache(ctx, cp.Config, kc)
	if err != nil {
		return err
	}
	wk := nfworker.New(tc, nfworker.Deps{Kube: wkc, Temporal: tc, OperatorNamespace: OperatorNamespace,
		PullRequest: changegrouppr.Config{Bot: Bot, Transport: http.DefaultTransport}}, nfworker.Options{Tuning: opts.Worker})
	if err := wk.Start(); err != nil {
		return fmt.Errorf("starting the worker: %w", err)
	}
	stops = append(stops, wk.Stop)

	// Tekton's part for the nudge PipelineRuns: the runner runs each released one
	// with the pinned Renovate, its log in logs/renovate/<namespace>/<run>.log.
	renovateLogs, err := startRenovateRunner(ctx, cp.Config, opts.Home, out, &stops)
	if err != nil {
		return err
	}

	seed := seedOptions{forgeURL: emu.URL(), gitlabURL: gl.URL(), botToken: tok.Bot, registry: reg.Host}
	if fj != nil {
		if err := seedForgejo(fj, reg.Host); err != nil {
			return err
		}
		seed.forgejoURL, seed.forgejoBotToken = fj.URL, fj.BotToken
	}
	if err := seedCluster(ctx, kc, seed); err != nil {
		return err
	}
	kubeconfig := filepath.Join(opts.Home, fileKubeconfig)
	if err := writeKubeconfig(kubeconfig, cp.Config, DemoNamespace); err != nil {
		return err
	}
	if err := waitUntil(ctx, 60*time.Second, "the Temporal Web UI", func() error { return httpOK(tmp.UIAddress) }); err != nil {
		return err
	}
	if err := waitUntil(ctx, 10*time.Second, "the GitHub emulator", func() error { return httpOK(emu.URL()) }); err != nil {
		return err
	}
	if err := waitUntil(ctx, 10*time.Second, "the GitLab emulator", func() error { return httpOK(gl.URL()) }); err != nil {
		return err
	}
	run.GitLabURL = gl.URL()
	if fj != nil {
		run.ForgejoURL = fj.URL
	}
	run.Kubeconfig, run.APIServer, run.TemporalAddress, run.TemporalUI = kubeconfig, cp.Config.Host, tmp.Address, tmp.UIAddress
	run.Namespace, run.ForgeURL, run.ForgeHookURL, run.Logs = tmp.Namespace, emu.URL(), hookURL, logs
	run.Registry, run.RenovateLogs = reg.Host, renovateLogs
	if err := writeJSONFile(filepath.Join(opts.Home, fileRunning), run); err != nil {
		return err
	}
	printReady(out, &run, time.Since(began))
	<-ctx.Done()
	fmt.Fprintln(out)
	return nil
}

func printReady(out io.Writer, r *Running, took time.Duration) {
	forgejo := ""
	if r.ForgejoURL != "" {
		forgejo = fmt.Sprintf(`  Forgejo (Gitea)     %s   (the third bundle's pull requests; sign in as %q,
                      password %q: a local demo credential of this loopback server only)
`, r.ForgejoURL, localenv.ForgejoHuman, ForgejoPassword)
	}
	fmt.Fprintf(out, `
nudgeflow-dev dev is ready (started in %s)

  Temporal Web UI     %s/namespaces/%s/workflows
  GitHub emulator     %s   (repositories, pull requests, CI events)
  GitLab emulator     %s   (the second bundle's merge requests and pipelines)
%s  image registry      %s   (the simulated builds' images; HTTPS, CA in %s)
  Renovate runs' logs %s
  kube-apiserver      %s
  kubeconfig          %s   (context namespace: %s)
  Temporal frontend   %s   (namespace %s)
  logs                %s

Next, in another terminal:

  eval "$(./bin/nudgeflow-dev dev env)"     # KUBECONFIG, TEMPORAL_ADDRESS, PATH with kubectl and temporal
  kubectl get components,nudgeconfigs
  # then follow "Walkthrough" in README.md

Ctrl-C stops everything; `+"`make run`"+` again resumes where it was.
`, took.Round(100*time.Millisecond), r.TemporalUI, r.Namespace, r.ForgeURL, r.GitLabURL, forgejo, r.Registry, fileRegistryCA, r.RenovateLogs, r.APIServer, r.Kubeconfig, DemoNamespace,
		r.TemporalAddress, r.Namespace, r.Logs)
}

// checkPorts refuses to start when a port is taken, naming it and its flag.
func checkPorts(p Ports, forgejo bool) error {
	type check struct {
		port       int
		what, flag string
	}
	checks := []check{{p.APIServer, "kube-apiserver", "--apiserver-port"}, {p.Temporal, "Temporal frontend", "--temporal-port"},
		{p.TemporalUI, "Temporal Web UI", "--ui-port"}, {p.Forge, "GitHub emulator", "--forge-port"},
		{p.ForgeHook, "forge webhook receiver", "--forge-hook-port"}, {p.GitLab, "GitLab emulator", "--gitlab-port"},
		{p.Registry, "image registry", "--registry-port"}}
	if forgejo {
		checks = append(checks, check{p.Forgejo, "Forgejo (Gitea) server", "--forgejo-port"})
	}
	for _, c := range checks {
		if c.port == 0 {
			return fmt.Errorf("%s needs a port (%s)", c.what, c.flag)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)))
		if err != nil {
			return fmt.Errorf("port %d for the %s is taken (%w): stop what uses it, or choose another with %s", c.port, c.what, err, c.flag)
		}
		_ = l.Close()
	}
	return nil
}

// recoverCrash reads the running.json a previous start left. It refuses when that
// `nudgeflow-dev dev` still runs; otherwise it crashed (kill -9, power loss): it stops
// the servers it left running, removes envtest's folders it left behind and the
// file, so the start goes on as usual.
func recoverCrash(home string, out io.Writer) error {
	r, err := readRunningFile(home)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		fmt.Fprintf(out, "ignoring %s: %v\n", fileRunning, err)
		return os.Remove(filepath.Join(home, fileRunning))
	}
	if r.ownerAlive() {
		return fmt.Errorf("nudgeflow-dev dev is already running with this state folder, pid %d (%s): stop it first, or set %s to another folder",
			r.PID, home, HomeEnv)
	}
	fmt.Fprintf(out, "the last `nudgeflow-dev dev` with %s (pid %d) did not stop cleanly: cleaning up\n", home, r.PID)
	stopProcs(r.Children, 15*time.Second, out)
	for _, d := range r.TempDirs {
		// Only envtest's folders under the temporary folder, whatever the file says.
		if rel, err := filepath.Rel(os.TempDir(), d); err == nil && filepath.IsLocal(rel) {
			_ = os.RemoveAll(d)
		}
	}
	return os.Remove(filepath.Join(home, fileRunning))
}

func processAlive(pid int) bool {
	if pid <= 0 || pid == os.Getpid() {
		return false
	}
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

func httpOK(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// waitUntil polls check until it succeeds, ctx ends or timeout passes.
func waitUntil(ctx context.Context, timeout time.Duration, what string, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// emulator is what saveLoop needs of an emulator.
type emulator interface {
	State() ([]byte, error)
	Save(path string) error
}

// saveLoop writes the emulator's state whenever it changed, every two seconds, so
// even a killed `nudgeflow-dev dev` loses little; Run saves once more when it stops.
func saveLoop(emu emulator, path string, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	var last []byte
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			b, err := emu.State()
			if err != nil || string(b) == string(last) {
				continue
			}
			if err := emu.Save(path); err != nil {
				slog.Error("saving an emulator's state", "path", path, "error", err)
				continue
			}
			last = b
		}
	}
}

func logStop(what string, err error) {
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, os.ErrProcessDone) {
		slog.Warn("stopping", "part", what, "error", err)
	}
}

// Both emulators take repository hooks: the bound bundles' deliveries are signed
// with the demo namespace's own secret.
var (
	_ localbridge.RepoForge = (*githubemu.Server)(nil)
	_ localbridge.RepoForge = (*glemu.Server)(nil)
)
