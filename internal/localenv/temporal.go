package localenv

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/nudgeflow/nudgeflow/internal/searchattr"
	"github.com/nudgeflow/nudgeflow/internal/temporalconn"
)

// DefaultNamespace is the Temporal namespace nudgeflow uses unless told otherwise.
const DefaultNamespace = "nudgeflow"

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

// Temporal is a running dev server.
type Temporal struct {
	server    *testsuite.DevServer
	Address   string
	Namespace string
	UIAddress string
}

// StartTemporal starts `temporal server start-dev` with nudgeflow's namespace and
// search attributes registered, and waits until it answers.
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
	if opts.Port == 0 {
		if opts.Port, err = FreePort(); err != nil {
			return nil, err
		}
	}
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
	t.server, err = testsuite.StartDevServer(ctx, dso)
	if err != nil {
		return nil, fmt.Errorf("starting temporal dev server on %s: %w", address, err)
	}
	return t, nil
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

// Stop stops the server.
func (t *Temporal) Stop() error { return t.server.Stop() }

// FreePort asks the kernel for a free TCP port on the loopback address.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
