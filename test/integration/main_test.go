// Package integration runs the ChangeGroup workflow, the bridge and the worker through
// the real kube-apiserver and Temporal dev server.
package integration

import (
	"os"
	"testing"

	"github.com/nudgeflow/nudgeflow/test/world"
)

func TestMain(m *testing.M) {
	os.Exit(world.Main(m, world.Options{}))
}
