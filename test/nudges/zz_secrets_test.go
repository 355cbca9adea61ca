package nudges

import (
	"testing"

	"github.com/nudgeflow/nudgeflow/test/world"
)

// TestZZNoSecretInAnyHistory runs last in the package (Go runs files in name order):
// the forge token the nudges use must not appear in any workflow history.
func TestZZNoSecretInAnyHistory(t *testing.T) {
	world.Get(t).AssertNoSecretInHistories(t, token)
}
