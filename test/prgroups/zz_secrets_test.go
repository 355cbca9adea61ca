package prgroups_test

import (
	"testing"

	"github.com/nudgeflow/nudgeflow/test/world"
)

// TestZZNoSecretInAnyHistory runs last in the package (Go runs files in name order):
// no history of the PR group workflows (nor the nudges the push builds started)
// holds the forge token or the webhook secret.
func TestZZNoSecretInAnyHistory(t *testing.T) {
	world.Get(t).AssertNoSecretInHistories(t, forgeToken, webhookSecret)
}
