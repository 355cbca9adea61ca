package localenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/nudgeflow/nudgeflow/internal/searchattr"
	"github.com/nudgeflow/nudgeflow/internal/temporalconn"
	nfworker "github.com/nudgeflow/nudgeflow/worker"
)

// DefaultNamespace is the Temporal namespace nudgeflow uses unless told otherwise.
const DefaultNamespace = nfworker.DefaultNamespace

// TemporalOptions configures a local Temporal dev server.
type TemporalOptions struct {
	// Namespace to create; DefaultNamespace when empty.
	Namespace string
	// Port for the frontend; a free one when zero.
	Port int
	// UIPort enables the Web UI on that port when non-zero.
	UIPort int
	// DBFile persists the server's state; in memory when empty.
	DBFile string
	// Log receives the server's output.
	Log io.Writer
	// ExtraArgs go to `temporal server start-dev` (for example dynamic config).
	ExtraArgs []string
	// DieWithParentDir, when set, makes the server die with this process on Linux
	// (see ControlPlaneOptions.DieWithParentDir).
	DieWithParentDir string
}

// temporalStopWait bounds Stop's wait for the dev server to exit after SIGINT.
// The SDK's DevServer.Stop sends SIGINT and waits for the process with no
// deadline: a server that hangs on its way out would hang `nudgeflow-dev dev`'s
// shutdown and the test worlds' cleanup with it. start-dev exits within a second
// or two; 30 s leaves a loaded machine plenty.
const temporalStopWait = 30 * time.Second

// temporalKillWait bounds the wait for the SDK to see the server gone after Stop
// has killed it.
const temporalKillWait = 5 * time.Second

// devServer is what Stop needs of testsuite.DevServer (a fake in tests).
type devServer interface{ Stop() error }

// Temporal is a running dev server.
type Temporal struct {
	server devServer
	// proc is the server's process, nil when it could not be found: the SDK keeps
	// its exec.Cmd to itself.
	proc      *os.Process
	Address   string
	Namespace string
	UIAddress string
}

// startAttempts is how often StartTemporal tries when it picks the ports itself.
// A port FreePort found free can be taken before the server binds it: the dev
// server's internal services listen on ports of their own, and packages start
// servers side by side. CI saw a frontend dial answered "unknown service
// temporal.api.workflowservice.v1.WorkflowService" (another server's internal
// gRPC listener on the chosen port); fresh ports end that race.
const startAttempts = 3

// freePort and attemptTimeout are seams for the start-up retry's test: where the
// ports come from, and a deadline per attempt (zero: the SDK's own, 60 s of dialing).
var (
	freePort       = FreePort
	attemptTimeout time.Duration
)

// StartTemporal starts `temporal server start-dev` with nudgeflow's namespace and
// search attributes registered, and waits until it answers. When opts.Port is zero
// a failed start is tried again on fresh ports, after killing the server it left.
func StartTemporal(ctx context.Context, opts TemporalOptions) (*Temporal, error) {
	cli, err := TemporalCLI()
	if err != nil {
		return nil, err
	}
	if opts.DieWithParentDir != "" {
		// The SDK starts the CLI with no process attributes of ours: give it the shim.
		if cli, err = parentDeathShim(opts.DieWithParentDir, cli); err != nil {
			return nil, err
		}
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	attempts := 1
	if opts.Port == 0 {
		attempts = startAttempts
	}
	var errs []error
	for attempt := 1; attempt <= attempts; attempt++ {
		o := opts
		if o.Port == 0 {
			if o.Port, err = freePort(); err != nil {
				return nil, err
			}
		}
		actx, cancel := ctx, context.CancelFunc(func() {})
		if attemptTimeout > 0 {
			actx, cancel = context.WithTimeout(ctx, attemptTimeout)
		}
		t, err := startTemporalOnce(actx, cli, o)
		cancel()
		if err == nil {
			return t, nil
		}
		errs = append(errs, err)
		// The SDK leaves the process running when it could not connect.
		if pid := childWithPort(o.Port); pid != 0 {
			if p, findErr := os.FindProcess(pid); findErr == nil {
				_ = p.Kill()
				_, _ = p.Wait()
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// startTemporalOnce starts one dev server on opts.Port (set) and free http and
// metrics ports.
func startTemporalOnce(ctx context.Context, cli string, opts TemporalOptions) (*Temporal, error) {
	address := net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.Port))
	// start-dev's http and metrics ports default to fixed numbers; pick free ones so
	// several servers (one per test package) can run at once.
	httpPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	metricsPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	extra := []string{"--http-port", strconv.Itoa(httpPort), "--metrics-port", strconv.Itoa(metricsPort)}
	extra = append(extra, searchattr.DevServerFlags()...)
	extra = append(extra, opts.ExtraArgs...)
	dso := testsuite.DevServerOptions{
		ExistingPath:  cli,
		ClientOptions: &client.Options{HostPort: address, Namespace: opts.Namespace, Logger: warnLogger()},
		DBFilename:    opts.DBFile,
		LogLevel:      "warn",
		ExtraArgs:     extra,
		Stdout:        opts.Log,
		Stderr:        opts.Log,
	}
	t := &Temporal{Address: address, Namespace: opts.Namespace}
	if opts.UIPort != 0 {
		dso.EnableUI = true
		dso.UIPort = strconv.Itoa(opts.UIPort)
		t.UIAddress = fmt.Sprintf("http://127.0.0.1:%d", opts.UIPort)
	}
	if t.server, err = testsuite.StartDevServer(ctx, dso); err != nil {
		return nil, fmt.Errorf("starting temporal dev server on %s: %w", address, err)
	}
	if pid := childWithPort(opts.Port); pid != 0 {
		// On Linux FindProcess holds a pidfd: a kill cannot reach a process that
		// takes the pid later. The server is this process's child and only the SDK's
		// Stop reaps it, so until then the pid is the server's.
		t.proc, _ = os.FindProcess(pid)
	}
	return t, nil
}

// childWithPort is the pid of this process's child started with "--port port" (as
// the SDK starts the dev server), 0 when there is none or no /proc to read.
func childWithPort(port int) int {
	entries, _ := os.ReadDir("/proc")
	self, want := strconv.Itoa(os.Getpid()), []byte("\x00--port\x00"+strconv.Itoa(port)+"\x00")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !bytes.Contains(cmdline, want) {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err == nil && strings.Contains(string(status), "\nPPid:\t"+self+"\n") {
			return pid
		}
	}
	return 0
}

// Dial returns a client for the dev server's namespace, with the connection settings
// nudgeflow's commands use by default (temporalconn).
// Its logger keeps warnings and errors only: the SDK's debug lines drown test output.
func (t *Temporal) Dial() (client.Client, error) {
	opts := client.Options{HostPort: t.Address, Namespace: t.Namespace, Logger: warnLogger()}
	if err := temporalconn.Apply(&opts, temporalconn.DefaultCompression); err != nil {
		return nil, err
	}
	return client.Dial(opts)
}

// warnLogger keeps the SDK's warnings and errors only.
func warnLogger() sdklog.Logger {
	return sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

// Stop stops the server: SIGINT, then, when it still runs temporalStopWait later,
// SIGKILL if its pid is known. It gives up waiting in the end rather than hang.
func (t *Temporal) Stop() error { return t.stop(temporalStopWait, temporalKillWait) }

func (t *Temporal) stop(wait, killWait time.Duration) error {
	if t.proc != nil {
		defer t.proc.Release()
	}
	done := make(chan error, 1) // the SDK's Stop may never return: its goroutine must not block on us
	go func() { done <- t.server.Stop() }()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("stopping temporal dev server on %s: %w", t.Address, err)
		}
		return nil
	case <-timer.C:
	}
	if t.proc == nil {
		return fmt.Errorf("temporal dev server on %s (pid unknown) still running %s after SIGINT: stopped waiting, it may still run", t.Address, wait)
	}
	how := "killed it"
	if err := t.proc.Kill(); errors.Is(err, os.ErrProcessDone) {
		how = "it exited as it was being killed"
	} else if err != nil {
		return fmt.Errorf("temporal dev server on %s (pid %d) still running %s after SIGINT; killing it: %w", t.Address, t.proc.Pid, wait, err)
	}
	select {
	case <-done:
		return fmt.Errorf("temporal dev server on %s (pid %d) still running %s after SIGINT: %s", t.Address, t.proc.Pid, wait, how)
	case <-time.After(killWait):
		return fmt.Errorf("temporal dev server on %s (pid %d) still running %s after SIGINT and %s after SIGKILL: stopped waiting",
			t.Address, t.proc.Pid, wait, killWait)
	}
}

// FreePort asks the kernel for a free TCP port on the loopback address.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
