package devenv_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/nudgeflow/nudgeflow/test/devenv"
)

// checkNudgeLatency reads what the walkthrough's `nudgeflow-dev dev nudge-latency
// -n 1` printed on the running `nudgeflow-dev dev --forgejo` (a smoke, as
// test/bench's: the lines are printed with sane fields, never how fast anything
// was): the idle line, a line per writer, each nudge written by that writer (the
// command fails otherwise), and the ratio line.
func checkNudgeLatency(t *testing.T, out string) {
	t.Helper()
	lines := map[string]map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "nudge-latency" {
			continue // the command's progress, on stderr
		}
		key := f[1]
		fields := map[string]string{}
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				key = kv // "idle", "ratio"
				continue
			}
			fields[k] = v
		}
		if w, ok := fields["writer"]; ok {
			key = w
		}
		lines[key] = fields
	}
	num := func(line, field string) float64 {
		t.Helper()
		v, ok := lines[line][field]
		if !ok {
			t.Fatalf("line %s has no %s: %v", line, field, lines[line])
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("line %s: %s=%s: %v", line, field, v, err)
		}
		return n
	}
	if len(lines) != 4 {
		t.Fatalf("want the idle, renovate, direct and ratio lines, got %v", lines)
	}
	if num("idle", "seconds") != 1 || num("idle", "cpu_s_per_s") < 0 {
		t.Fatalf("idle line: %v", lines["idle"])
	}
	for _, w := range []string{devenv.LatencyRenovate, devenv.LatencyDirect} {
		if num(w, "n") != 1 || num(w, "p50_s") <= 0 || num(w, "p99_s") < num(w, "p50_s") || num(w, "cpu_s_per_nudge") <= 0 ||
			num(w, "wall_s") < num(w, "p50_s") || num(w, "polls") < 1 {
			t.Fatalf("%s line: %v", w, lines[w])
		}
		// The Gitea server wrote the pull request for both.
		if !strings.Contains(lines[w]["cpu_s"], "gitea:") {
			t.Fatalf("%s line's CPU names no gitea: %v", w, lines[w])
		}
	}
	// Renovate's run is a process the runner reaped; the direct writer runs none.
	if !strings.Contains(lines[devenv.LatencyRenovate]["cpu_s"], "nudgeflow-dev-reaped:") {
		t.Fatalf("the renovate line's CPU has no reaped Renovate run: %v", lines[devenv.LatencyRenovate])
	}
	if lines["ratio"]["of"] != "direct/renovate" || num("ratio", "p50") <= 0 || num("ratio", "cpu") <= 0 {
		t.Fatalf("ratio line: %v", lines["ratio"])
	}
}
