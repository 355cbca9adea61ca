// Package nudgeconfig_test proves ADR 67's NudgeConfig rules against a real API server
// with the bridge's admission webhook registered, the stale-reference controller, the
// migration from build-nudges-ref and the graph export.
package nudgeconfig_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/bridge/nudgeconfig"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
)

func TestMain(m *testing.M) {
	os.Exit(world.Main(m, world.Options{
		WithoutTemporal:  true,
		WebhookManifests: []string{filepath.Join(localenv.RepoRoot(), "deploy", "webhooks", "nudgeconfig.yaml")},
	}))
}

var (
	bridgeOnce sync.Once
	bridgeErr  error
)

// startBridge starts, once per test binary, a bridge manager in this process serving
// the NudgeConfig webhook where envtest registered it, and running the controller. It
// returns once the webhook answers and the caches are synced.
func startBridge(t *testing.T) *world.World {
	t.Helper()
	w := world.Get(t)
	bridgeOnce.Do(func() {
		logFile, err := os.Create(filepath.Join(w.LogDir, "bridge.log"))
		if err != nil {
			bridgeErr = err
			return
		}
		ctrl.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(logFile, prefix, args) }, funcr.Options{Verbosity: 1}))
		host, port, certDir := w.WebhookServer()
		mgr, err := bridge.NewManager(w.Config(), bridge.ManagerOptions{WebhookHost: host, WebhookPort: port, WebhookCertDir: certDir})
		if err != nil {
			bridgeErr = err
			return
		}
		if bridgeErr = nudgeconfig.Setup(mgr); bridgeErr != nil {
			return
		}
		// The manager lives as long as the test binary: the world is torn down after m.Run.
		go func() {
			if err := mgr.Start(context.Background()); err != nil {
				fmt.Fprintln(logFile, "manager stopped:", err)
			}
		}()
		started := mgr.GetWebhookServer().StartedChecker()
		if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true,
			func(context.Context) (bool, error) { return started(nil) == nil, nil }); err != nil {
			bridgeErr = fmt.Errorf("webhook server did not start within 30s: %w", err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			bridgeErr = fmt.Errorf("bridge caches did not sync within 30s")
		}
	})
	require.NoError(t, bridgeErr, "starting the bridge")
	return w
}

// warnings collects the API server's warning headers of one client.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (c *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, text)
}

func (c *warnings) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.msgs...)
}

// clientWithWarnings is a client of the world's API server that records warnings.
func clientWithWarnings(t *testing.T, w *world.World) (ctrlclient.Client, *warnings) {
	t.Helper()
	cfg := w.Config()
	got := &warnings{}
	cfg.WarningHandlerWithContext = got
	cfg.WarningHandler = nil
	c, err := ctrlclient.New(rest.CopyConfig(cfg), ctrlclient.Options{Scheme: kube.NewScheme()})
	require.NoError(t, err)
	return c, got
}

// createComponents creates Components with the given names (and build-nudges-ref from
// refs), a few at a time: the 5000-edge case needs 150 of them.
func createComponents(t *testing.T, w *world.World, ns string, names []string, refs map[string][]string) {
	t.Helper()
	sem := make(chan struct{}, 8)
	errs := make(chan error, len(names))
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c := &mirrorv1alpha1.Component{
				ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns},
				Spec: mirrorv1alpha1.ComponentSpec{
					ComponentName:  n,
					ContainerImage: "quay.io/tenant/" + n,
					BuildNudgesRef: refs[n],
				},
			}
			if err := w.Kube.Create(context.Background(), c); err != nil {
				errs <- fmt.Errorf("creating component %s: %w", n, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
