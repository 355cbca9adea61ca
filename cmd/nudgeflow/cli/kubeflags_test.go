package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	nfworker "github.com/nudgeflow/nudgeflow/worker"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts:
- {name: team, context: {cluster: c, user: u, namespace: from-context}}
- {name: bare, context: {cluster: c, user: u}}
current-context: team
`

// TestKubeFlagsResolveLikeKubectl: the namespace comes from -n, else the context; the
// kubeconfig from --kubeconfig, else $KUBECONFIG.
func TestKubeFlagsResolveLikeKubectl(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(path, []byte(testKubeconfig), 0o600))
	t.Setenv("KUBECONFIG", path)

	resolve := func(args ...string) (string, error) {
		cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		kf := addKubeFlags(cmd, true)
		require.NoError(t, cmd.ParseFlags(args))
		return kf.targetNamespace()
	}
	ns, err := resolve()
	require.NoError(t, err)
	require.Equal(t, "from-context", ns, "$KUBECONFIG's current context")
	ns, err = resolve("-n", "explicit")
	require.NoError(t, err)
	require.Equal(t, "explicit", ns)
	ns, err = resolve("--context", "bare")
	require.NoError(t, err)
	require.Equal(t, "default", ns, "a context without namespace means default, as in kubectl")
	ns, err = resolve("-A")
	require.NoError(t, err)
	require.Empty(t, ns, "-A selects every namespace")
	_, err = resolve("-A", "-n", "x")
	require.EqualError(t, err, "--namespace and --all-namespaces exclude each other")

	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	ns, err = resolve("--kubeconfig", path)
	require.NoError(t, err)
	require.Equal(t, "from-context", ns, "--kubeconfig wins over $KUBECONFIG")
}

// TestRateFlags: no client-side limit unless --kube-api-qps sets one.
func TestRateFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(path, []byte(testKubeconfig), 0o600))
	t.Setenv("KUBECONFIG", path)
	qps := func(args ...string) (float32, int) {
		cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		kf := addKubeFlags(cmd, false)
		kf.addRateFlags(cmd)
		require.NoError(t, cmd.ParseFlags(args))
		cfg, err := kf.restConfig()
		require.NoError(t, err)
		return cfg.QPS, cfg.Burst
	}
	q, _ := qps()
	require.Equal(t, float32(-1), q, "client-go's 5 QPS limiter is off")
	q, b := qps("--kube-api-qps", "50")
	require.Equal(t, float32(50), q)
	require.Equal(t, 100, b, "burst defaults to twice the QPS")
	_, b = qps("--kube-api-qps", "50", "--kube-api-burst", "60")
	require.Equal(t, 60, b)
}

// TestWorkerTuningFlags parse into the worker's tuning, defaulting to its defaults.
func TestWorkerTuningFlags(t *testing.T) {
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	tuning := addWorkerTuningFlags(cmd)
	want := nfworker.Tuning{}.WithDefaults()
	want.StopTimeout = nfworker.DefaultStopTimeout
	require.Equal(t, want, *tuning, "the stop timeout defaults to a drain below the pod's grace period")
	require.NoError(t, cmd.ParseFlags([]string{"--sticky-cache-size", "10000", "--workflow-task-pollers", "8"}))
	require.Equal(t, 10000, tuning.StickyCacheSize)
	require.Equal(t, 8, tuning.WorkflowTaskPollers)
	require.Equal(t, nfworker.DefaultMaxConcurrentActivities, tuning.MaxConcurrentActivities)
	require.NoError(t, cmd.ParseFlags([]string{"--worker-stop-timeout", "45s"}))
	require.Equal(t, 45*time.Second, tuning.StopTimeout)
}
