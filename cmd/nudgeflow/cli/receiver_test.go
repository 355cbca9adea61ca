package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The bridge refuses the receiver's old flags before it connects to anything: an
// operator who kept them learns where the receiver went instead of losing it.
func TestBridgeRefusesTheRemovedReceiverFlags(t *testing.T) {
	for _, args := range [][]string{
		{"bridge", "--forge-webhook-bind-address=:8181"},
		{"bridge", "--forge-webhook-secret-file=/etc/secret"},
	} {
		root := NewRoot()
		root.SetArgs(args)
		root.SetErr(os.Stderr)
		err := root.Execute()
		require.ErrorContains(t, err, "nudgeflow receiver", "%v", args)
	}
}

// The receiver needs the shared secret and the bridge's address, CA and token; it
// names what is missing.
func TestReceiverNeedsItsInputs(t *testing.T) {
	dir := t.TempDir()
	secret, empty := filepath.Join(dir, "secret"), filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(secret, []byte("s\n"), 0o600))
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	t.Setenv("NUDGEFLOW_FORGE_WEBHOOK_SECRET", "")
	for want, args := range map[string][]string{
		"the shared secret": {"receiver"},
		"is empty":          {"receiver", "--webhook-secret-file=" + empty},
		"bridge's URL":      {"receiver", "--webhook-secret-file=" + secret},
		"is not https":      {"receiver", "--webhook-secret-file=" + secret, "--bridge-url=http://bridge", "--bridge-ca-file=x", "--bridge-token-file=y"},
		"CA bundle":         {"receiver", "--webhook-secret-file=" + secret, "--bridge-url=https://bridge", "--bridge-ca-file=" + filepath.Join(dir, "none"), "--bridge-token-file=y"},
	} {
		root := NewRoot()
		root.SetArgs(args)
		require.ErrorContains(t, root.Execute(), want, "%v", args)
	}
}
