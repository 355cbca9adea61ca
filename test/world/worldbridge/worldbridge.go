// Package worldbridge starts nudgeflow's bridge in a test package's world
// (localbridge.Start wired to the world's API server, webhook address and Temporal
// client). It is apart from package world because world is imported by tests inside
// packages the bridge imports (activities/renovate): world importing the bridge would
// make an import cycle.
package worldbridge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nudgeflow/nudgeflow/test/localbridge"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// Options configure Start.
type Options struct {
	// Bridge is what localbridge.Start takes. Start fills Config, the manager's
	// webhook address and its CA from the world, and Deps.Temporal when nil.
	Bridge localbridge.Options
	// OwnLogger says the package set controller-runtime's logger itself, before
	// world.Main (test/nudges: errors only, to stderr). Otherwise the bridge logs
	// everything, in development mode, to bridge.log beside the servers' logs, kept
	// when a test fails.
	OwnLogger bool
}

// Start starts a bridge in this process whose manager serves the admission webhooks
// where the world's API server sends them, and returns once it is ready (see
// localbridge.Start). Its Stop belongs in the stop function of world.Options.Start.
func Start(w *world.World, opts Options) (*localbridge.Running, error) {
	if !opts.OwnLogger {
		bridgeLog, err := os.Create(filepath.Join(w.LogDir, "bridge.log"))
		if err != nil {
			return nil, err
		}
		ctrl.SetLogger(zap.New(zap.WriteTo(bridgeLog), zap.UseDevMode(true)))
	}
	o := opts.Bridge
	o.Config = w.Config()
	o.Manager.WebhookHost, o.Manager.WebhookPort, o.Manager.WebhookCertDir = w.WebhookServer()
	o.WebhookCA = w.ControlPlane.Env.WebhookInstallOptions.LocalServingCAData
	if o.Deps.Temporal == nil {
		o.Deps.Temporal = w.TemporalClient
	}
	b, err := localbridge.Start(context.Background(), o)
	if err != nil {
		return nil, fmt.Errorf("starting the bridge: %w", err)
	}
	return b, nil
}
