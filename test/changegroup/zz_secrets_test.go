package changegroup_test

import (
	"testing"

	"github.com/nudgeflow/nudgeflow/test/world"
)

// TestZZNoSecretInAnyHistory runs last in the package (Go runs files in name order):
// it scans the history of every workflow the suite ran for the forge tokens and the
// webhook secret. Histories are shown in the Web UI; secrets must never be there.
func TestZZNoSecretInAnyHistory(t *testing.T) {
	secrets := []string{forgeToken, webhookSecret}
	if tok := shared.forgejo.botToken(); tok != "" {
		secrets = append(secrets, tok)
	}
	world.Get(t).AssertNoSecretInHistories(t, secrets...)
}
