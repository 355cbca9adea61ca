package nudges

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/test/landingforge"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// TestZZNoSecretInAnyHistory runs last in the package (Go runs files in name order):
// the forge tokens and the registry passwords the nudges use must not appear in any
// workflow history, nor in anything the worker logged. The emulators' bot tokens
// are the SCM Secrets of the landing tests (landing_test.go).
func TestZZNoSecretInAnyHistory(t *testing.T) {
	secrets := []string{token, registryPassword, wideRegistryPassword, landingforge.GitHubBotToken, landingforge.GitLabBotToken}
	world.Get(t).AssertNoSecretInHistories(t, secrets...)
	logs := workerLogs.String()
	require.NotEmpty(t, logs, "the worker's logs were captured")
	for _, s := range secrets {
		require.NotContains(t, logs, s, "the worker logged a secret")
	}
}
