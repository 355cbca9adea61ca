package integration

import (
	"os"
	"testing"

	"github.com/nudgeflow/nudgeflow/test/world"
)

func TestMain(m *testing.M) {
	os.Exit(world.Main(m, world.Options{}))
}
