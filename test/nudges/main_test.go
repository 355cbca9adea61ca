package nudges

import (
	"os"
	"testing"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nudgeflow/nudgeflow/test/world"
)

func TestMain(m *testing.M) {
	// The bridge logs errors only (reconcile failures), to stderr.
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel)))
	os.Exit(world.Main(m, world.Options{}))
}
