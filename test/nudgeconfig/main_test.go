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

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/bridge/nudgeconfig"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/test/localbridge"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
	"github.com/nudgeflow/nudgeflow/test/world/worldbridge"
)

func TestMain(m *testing.M) {
	os.Exit(world.Main(m, world.Options{
		WithoutTemporal:  true,
		WebhookManifests: []string{filepath.Join(localenv.RepoRoot(), "deploy", "webhooks", "nudgeconfig.yaml")},
		Start:            startBridge,
	}))
}

// startBridge starts, for the package, a bridge in this process with only the
// NudgeConfig feature: its webhook, served where the API server sends it, and its
// stale-reference controller. The returned stop ends it before the servers go.
func startBridge(w *world.World) (func(), error) {
	b, err := worldbridge.Start(w, worldbridge.Options{Bridge: localbridge.Options{
		Setup: func(mgr ctrl.Manager) (*bridge.Bridge, error) { return nil, nudgeconfig.Setup(mgr, builds.Peers{}) },
	}})
	if err != nil {
		return nil, err
	}
	return func() {
		if err := b.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "bridge manager: %v\n", err)
		}
	}, nil
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
