// Package world gives the tests of a package one real world, started once in
// TestMain: a kube-apiserver + etcd with every CRD installed, a Temporal dev server
// with nudgeflow's namespace and search attributes, and clients for both. The logs
// of both servers are kept when a test fails.
package world

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/ownership/ownershiptest"
	"github.com/nudgeflow/nudgeflow/test/localenv"
)

// Options chooses what a package's world holds.
type Options struct {
	// WithoutTemporal skips the dev server for packages that only need Kubernetes.
	WithoutTemporal bool
	// WebhookManifests are webhook configurations to register with the API server.
	WebhookManifests []string
	// Webhooks, when set, names the only webhooks of WebhookManifests to register
	// (for a package that serves only some of the bridge's webhooks).
	Webhooks []string
	// ExtraCRDDirs are loaded beside deploy/crds and test/crds (for example the
	// kinds of cluster operators the manifests use: cert-manager, Prometheus).
	ExtraCRDDirs []string
	// ControlPlane, when set, changes how kube-apiserver and etcd run (for example
	// test/bench's ScaleControlPlane, for a world of 100,000 PipelineRuns).
	ControlPlane func(*localenv.ControlPlaneOptions)
	// Start runs once the servers are up, before the tests (for example to start a
	// bridge and a worker); the returned stop runs after the tests, before teardown.
	Start func(w *World) (stop func(), err error)
}

// World is what a test package gets.
type World struct {
	ControlPlane *localenv.ControlPlane
	Temporal     *localenv.Temporal
	// Kube is a client of the real API server with nudgeflow's scheme. A Component
	// it creates is onboarded as build-service onboards it: the Pipelines as Code
	// Repository of its git URL is in the namespace before Create returns, so the
	// namespace owns the repository (internal/ownership). A client of its own (a
	// tenant's, impersonated) onboards nothing.
	Kube ctrlclient.Client
	// TemporalClient is connected to the dev server's nudgeflow namespace.
	TemporalClient client.Client
	// LogDir holds apiserver-etcd.log and temporal.log.
	LogDir string
}

var current *World

// Get returns the package's world. It fails the test when TestMain did not call Main.
func Get(t testing.TB) *World {
	t.Helper()
	if current == nil {
		t.Fatal("world.Get: the package's TestMain must call world.Main")
	}
	return current
}

// Config is a copy of the API server's client configuration.
func (w *World) Config() *rest.Config { return rest.CopyConfig(w.ControlPlane.Config) }

// Main starts the world, runs the package's tests and tears the world down. It
// returns the exit code for os.Exit.
func Main(m *testing.M, opts Options) int {
	w, err := start(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "world: %v\n", err)
		if w != nil {
			fmt.Fprintf(os.Stderr, "world: server logs kept in %s\n", w.LogDir)
			w.stop()
		}
		return 1
	}
	current = w
	stopHook := func() {}
	if opts.Start != nil {
		if stopHook, err = opts.Start(w); err != nil {
			fmt.Fprintf(os.Stderr, "world: starting the package's services: %v\nworld: server logs kept in %s\n", err, w.LogDir)
			w.stop()
			return 1
		}
	}
	code := m.Run()
	stopHook()
	w.stop()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "world: tests failed; server logs kept in %s\n", w.LogDir)
	} else {
		_ = os.RemoveAll(w.LogDir)
	}
	return code
}

func start(opts Options) (*World, error) {
	logDir, err := os.MkdirTemp("", "nudgeflow-world-")
	if err != nil {
		return nil, err
	}
	w := &World{LogDir: logDir}
	kubeLog, err := os.Create(filepath.Join(logDir, "apiserver-etcd.log"))
	if err != nil {
		return w, err
	}
	webhooks := opts.WebhookManifests
	if len(opts.Webhooks) > 0 {
		dir := filepath.Join(logDir, "webhooks")
		if err := os.Mkdir(dir, 0o700); err != nil {
			return w, err
		}
		selected, err := selectWebhooks(webhooks, opts.Webhooks, dir)
		if err != nil {
			return w, err
		}
		webhooks = []string{selected}
	}
	cpOpts := localenv.ControlPlaneOptions{
		Log:              kubeLog,
		WebhookManifests: webhooks,
		ExtraCRDDirs:     opts.ExtraCRDDirs,
	}
	if opts.ControlPlane != nil {
		opts.ControlPlane(&cpOpts)
	}
	if w.ControlPlane, err = localenv.StartControlPlane(cpOpts); err != nil {
		return w, err
	}
	c, err := ctrlclient.New(w.ControlPlane.Config, ctrlclient.Options{Scheme: kube.NewScheme()})
	if err != nil {
		return w, fmt.Errorf("kubernetes client: %w", err)
	}
	w.Kube = ownershiptest.Onboarding(c)
	if opts.WithoutTemporal {
		return w, nil
	}
	temporalLog, err := os.Create(filepath.Join(logDir, "temporal.log"))
	if err != nil {
		return w, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if w.Temporal, err = localenv.StartTemporal(ctx, localenv.TemporalOptions{Log: temporalLog}); err != nil {
		return w, err
	}
	if w.TemporalClient, err = w.Temporal.Dial(); err != nil {
		return w, fmt.Errorf("temporal client: %w", err)
	}
	return w, nil
}

func (w *World) stop() {
	if w.TemporalClient != nil {
		w.TemporalClient.Close()
	}
	if w.Temporal != nil {
		if err := w.Temporal.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "world: stopping temporal: %v\n", err)
		}
	}
	if w.ControlPlane != nil {
		if err := w.ControlPlane.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "world: stopping control plane: %v\n", err)
		}
	}
}

// WebhookServer is where the API server sends admission requests in this world; a
// bridge manager started by a test serves its webhooks there.
func (w *World) WebhookServer() (host string, port int, certDir string) {
	o := w.ControlPlane.Env.WebhookInstallOptions
	return o.LocalServingHost, o.LocalServingPort, o.LocalServingCertDir
}
