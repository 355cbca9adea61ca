// Package receiver_test attacks the forge webhook receiver as it ships
// (bridge/receiver, what `nudgeflow receiver` runs) in front of the bridge's
// receiver API, on a real kube-apiserver (the bound webhook Secrets, the
// TokenReviews of the receiver's token) and a real Temporal dev server (the
// signals a delivery sends, read back from the workflows' histories). No worker
// runs: a workflow the bridge starts, or a test starts, waits on its first task,
// and every signal it is sent is in its history.
package receiver_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/test/localbridge"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
	"github.com/nudgeflow/nudgeflow/test/world/worldbridge"
)

const (
	// taskQueue has no worker: workflows wait, signals stay in their histories.
	taskQueue    = "receiver-attacks-no-worker"
	sharedSecret = "receiver-attacks-shared-secret"
)

var running *localbridge.Running

func TestMain(m *testing.M) {
	os.Exit(world.Main(m, world.Options{
		WebhookManifests: []string{filepath.Join(localenv.RepoRoot(), "deploy", "webhooks")},
		Start: func(w *world.World) (func(), error) {
			b, err := worldbridge.Start(w, worldbridge.Options{Bridge: localbridge.Options{
				Deps:      bridge.Deps{TaskQueue: taskQueue},
				ForgeHook: &localbridge.ForgeHook{Secret: sharedSecret},
			}})
			if err != nil {
				return nil, err
			}
			running = b
			return func() { _ = b.Stop() }, nil
		},
	}))
}
