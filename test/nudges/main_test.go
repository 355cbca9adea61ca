// Package nudges runs immediate and validated nudges end to end against the real
// servers: routing, Renovate PipelineRuns, pruning, parity with build-service and
// integration-service.
package nudges

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
)

func TestMain(m *testing.M) {
	// The bridge logs errors only (reconcile failures), to stderr.
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel)))
	// The builds feature's admission webhook (the build-routing finalizer) is the
	// only one this package's bridge serves, so it is the only one installed.
	os.Exit(world.Main(m, world.Options{
		WebhookManifests: []string{filepath.Join(localenv.RepoRoot(), "deploy", "webhooks")},
		Webhooks:         []string{builds.HoldWebhookName},
		Start:            startStack,
	}))
}
