package nudges

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/test/world"
)

// TestZZNoSecretInAnyHistory runs last in the package (Go runs files in name order):
// the forge token and the registry passwords the nudges use must not appear in any
// workflow history, nor in anything the worker logged.
func TestZZNoSecretInAnyHistory(t *testing.T) {
	secrets := []string{token, registryPassword, wideRegistryPassword}
	world.Get(t).AssertNoSecretInHistories(t, secrets...)
	logs := workerLogs.String()
	require.NotEmpty(t, logs, "the worker's logs were captured")
	for _, s := range secrets {
		require.NotContains(t, logs, s, "the worker logged a secret")
	}
}
