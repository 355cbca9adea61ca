package cli

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
)

// runLogged runs `nudgeflow <command> args` with a RunE that logs through every
// logger a process has, and returns what reached stderr.
func runLogged(t *testing.T, command string, args ...string) (string, error) {
	t.Helper()
	prev := slog.Default()
	t.Cleanup(func() { slog.SetDefault(prev) })
	root := NewRoot()
	var stderr bytes.Buffer
	root.SetErr(&stderr)
	root.SetOut(&stderr)
	// A stand-in for the real command of that name: same name, so the same default format.
	for _, c := range root.Commands() {
		if c.Name() == command {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(&cobra.Command{Use: command, RunE: func(*cobra.Command, []string) error {
		slog.Debug("slog debug")
		slog.Info("slog info", "forgeToken", "ghp_secret", "secretsNamespace", "nudgeflow-system", "apiKey", true)
		ctrl.Log.WithName("controller").Info("controller-runtime info")
		ctrl.Log.V(1).Info("controller-runtime debug")
		ctrl.Log.Error(nil, "controller-runtime error")
		klog.InfoS("klog info")
		temporalLogger().Info("sdk info")
		temporalLogger().Warn("sdk warn")
		return nil
	}})
	root.SetArgs(append([]string{command}, args...))
	err := root.Execute()
	return stderr.String(), err
}

// One place configures every logger: the bridge and the worker log JSON by
// default, other commands text; --log-level filters nudgeflow's, controller-runtime's,
// klog's and the Temporal SDK's lines alike. (controller-runtime takes its logger
// once per process, as a real process sets it: the first run checks it.)
func TestLogFlagsConfigureEveryLogger(t *testing.T) {
	out, err := runLogged(t, "bridge", "--log-level=debug")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var msgs []string
	for _, l := range lines {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec), "every line is JSON: %q", l)
		msgs = append(msgs, rec["msg"].(string))
		if rec["msg"] == "slog info" {
			require.Equal(t, "REDACTED", rec["forgeToken"], "a credential-named attribute never carries its value")
			require.Equal(t, "nudgeflow-system", rec["secretsNamespace"])
			require.Equal(t, true, rec["apiKey"], "a boolean saying a key is set is kept")
		}
		if rec["msg"] == "sdk info" {
			require.Equal(t, "temporal-sdk", rec["logger"])
		}
	}
	require.Equal(t, []string{"slog debug", "slog info", "controller-runtime info", "controller-runtime debug", "controller-runtime error", "klog info", "sdk info", "sdk warn"}, msgs)
	require.NotContains(t, out, "ghp_secret")

	out, err = runLogged(t, "worker", "--log-format=text", "--log-level=warn")
	require.NoError(t, err)
	require.NotContains(t, out, "info")
	require.Contains(t, out, `level=WARN msg="sdk warn" logger=temporal-sdk`)
	require.False(t, strings.HasPrefix(out, "{"), "text: %s", out)
	h, err := (&logFlags{level: "warn"}).handler("bridge", &bytes.Buffer{})
	require.NoError(t, err)
	require.False(t, logr.FromSlogHandler(h).Enabled(), "controller-runtime's info lines follow --log-level too")

	out, err = runLogged(t, "graph")
	require.NoError(t, err)
	require.Contains(t, out, `level=INFO msg="slog info"`, "commands a person runs log text")

	_, err = runLogged(t, "worker", "--log-format=yaml")
	require.ErrorContains(t, err, "--log-format")
	_, err = runLogged(t, "worker", "--log-level=loud")
	require.ErrorContains(t, err, "--log-level")
}
