// Package bench_test runs `nudgeflow-dev bench --quick` with every measure named: the real servers, the bridge
// (in process, and as its own process for bridge-scale) and a worker process,
// small sizes. It checks that every measure prints its line
// with sane fields, never how fast anything was.
package bench_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	nfworker "github.com/nudgeflow/nudgeflow/worker"
)

func TestBenchQuickPrintsEveryMeasure(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "nudgeflow-dev")
	build := exec.Command("go", "build", "-o", bin, "./cmd/nudgeflow-dev")
	build.Dir = filepath.Join(localenv.RepoRoot(), "test")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building nudgeflow-dev: %s", out)

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "bench", "--quick", "--only", "bridge,intercept,changegroup-admission,worker,bridge-scale")
	cmd.Env = os.Environ()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	t.Logf("nudgeflow-dev bench --quick:\n%s%s", stdout.String(), stderr.String())
	require.NoError(t, err)

	lines := map[string]map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		f := strings.Fields(line)
		// The bridge-scale line names its measure first: "bridge-scale plrs=...".
		if len(f) > 0 && f[0] == "bridge-scale" {
			f = append([]string{"bench"}, f...)
		}
		require.GreaterOrEqual(t, len(f), 3, "line %q", line)
		require.Equal(t, "bench", f[0], "every stdout line is a result: %q", line)
		fields := map[string]string{}
		for _, kv := range f[2:] {
			k, v, ok := strings.Cut(kv, "=")
			require.True(t, ok, "field %q of %q", kv, line)
			fields[k] = v
		}
		require.NotContains(t, lines, f[1], "one line per measure")
		lines[f[1]] = fields
	}
	require.Len(t, lines, 5, "bridge, intercept, changegroup-admission, worker, bridge-scale")

	num := func(measure, field string) float64 {
		t.Helper()
		v, ok := lines[measure][field]
		require.True(t, ok, "%s has %s", measure, field)
		n, err := strconv.ParseFloat(strings.TrimSuffix(v, "ms"), 64)
		require.NoError(t, err, "%s %s=%s", measure, field, v)
		return n
	}
	positive := func(measure string, fields ...string) {
		t.Helper()
		for _, f := range fields {
			require.Greater(t, num(measure, f), 0.0, "%s %s", measure, f)
		}
	}

	require.Equal(t, 40.0, num("bridge", "builds"))
	require.Equal(t, 160.0, num("bridge", "signals"), "builds × edges")
	require.Equal(t, float64(bridge.DefaultMaxConcurrentReconciles), num("bridge", "reconciles"), "the builds controller runs the default concurrency")
	positive("bridge", "seconds", "builds_per_s", "signals_per_s", "direct_signals_per_s", "direct_sequential_signals_per_s", "first_signal_s", "after_first_signals_per_s")
	// Where the CPU went, in the bridge's run and the direct one: the Temporal
	// server worked in both, and the machine was busy.
	positive("bridge", "temporal_cpu_ms_per_signal", "direct_temporal_cpu_ms_per_signal", "busy_cores", "direct_busy_cores", "cores")
	require.Regexp(t, regexp.MustCompile(`(^|,)temporal:`), lines["bridge"]["cpu_s"])
	require.Regexp(t, regexp.MustCompile(`(^|,)temporal:`), lines["bridge"]["direct_cpu_s"])

	for _, m := range []string{"intercept", "changegroup-admission"} {
		require.Equal(t, 20.0, num(m, "groups"), m)
		positive(m, "samples", "p50", "p99", "baseline_p50", "baseline_p99", "ratio", "client_p50", "client_p99", "client_baseline_p99")
		require.GreaterOrEqual(t, num(m, "p99"), num(m, "p50"), m)
	}
	require.Equal(t, 20.0, num("intercept", "samples"))
	require.Equal(t, 15.0, num("intercept", "held"), "three in four sample nudges are held")
	positive("intercept", "held_p99", "passed_p99", "http_p99", "http_baseline_p99")

	require.Equal(t, 40.0, num("worker", "groups"))
	require.Equal(t, float64(nfworker.DefaultStickyCacheSize), num("worker", "sticky_cache"), "the worker runs its defaults")
	positive("worker", "baseline_mb", "rss_mb", "peak_mb", "seconds")
	num("worker", "per_group_kb")

	require.Equal(t, 2000.0, num("bridge-scale", "plrs"))
	positive("bridge-scale", "rss_mib", "intercept_p99_ms", "sync_s")
}
