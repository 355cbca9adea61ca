package devenv

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Proc names one process beyond its pid, which the kernel recycles: its start time
// (field 22 of /proc/PID/stat, clock ticks after boot) and its executable
// (/proc/PID/exe). A pid whose start time or executable differs is another process.
type Proc struct {
	Name  string `json:"name"`
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	Exe   string `json:"exe"`
}

func (p Proc) String() string { return fmt.Sprintf("%s (pid %d)", p.Name, p.PID) }

// procState reads /proc/PID/stat: the parent pid, the state letter and the start time.
func procState(pid int) (ppid int, state byte, start uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	// "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so
	// the fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, 0, 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[19] field 22 (starttime).
	if ppid, err = strconv.Atoi(f[1]); err != nil {
		return 0, 0, 0, fmt.Errorf("/proc/%d/stat: ppid: %w", pid, err)
	}
	if start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return 0, 0, 0, fmt.Errorf("/proc/%d/stat: starttime: %w", pid, err)
	}
	return ppid, f[0][0], start, nil
}

// procOf describes pid as it runs now; false when it is gone or a zombie (dead,
// not yet reaped: an orphan's new parent may never reap it).
func procOf(pid int) (Proc, bool) {
	_, state, start, err := procState(pid)
	if err != nil || state == 'Z' || state == 'X' {
		return Proc{}, false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return Proc{}, false
	}
	return Proc{Name: filepath.Base(exe), PID: pid, Start: start, Exe: exe}, true
}

// Alive reports whether p still runs: its pid lives with the same start time and
// executable. A recycled pid is not p.
func (p Proc) Alive() bool {
	if p.PID <= 0 {
		return false
	}
	_, state, start, err := procState(p.PID)
	if err != nil || start != p.Start {
		return false
	}
	if state == 'Z' || state == 'X' {
		// A zombie is dead, unless it is a leader that exited before its other
		// threads: until they are gone the process holds its ports and files.
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", p.PID))
		return len(tasks) > 1
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.PID))
	return err == nil && exe == p.Exe
}

// self is this process.
func self() Proc {
	p, _ := procOf(os.Getpid())
	p.PID = os.Getpid()
	return p
}

// childrenOf lists the live processes whose parent is pid.
func childrenOf(pid int) []Proc {
	entries, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _, _, err := procState(child); err != nil || ppid != pid {
			continue
		}
		if p, ok := procOf(child); ok {
			out = append(out, p)
		}
	}
	return out
}

// stopProcs stops every p that still runs (and is still the same process), the
// last started first (kube-apiserver before etcd: without etcd it takes 20 s to
// stop): SIGTERM, then SIGKILL when it still runs after grace. It names each on
// log and returns those it stopped.
func stopProcs(procs []Proc, grace time.Duration, log io.Writer) []Proc {
	procs = slices.Clone(procs)
	slices.SortStableFunc(procs, func(a, b Proc) int { return cmp.Compare(b.Start, a.Start) })
	var stopped []Proc
	for _, p := range procs {
		if !p.Alive() {
			continue
		}
		how := "SIGTERM"
		if !signalAndWait(p, syscall.SIGTERM, grace) {
			how = fmt.Sprintf("SIGKILL: still running %s after SIGTERM", grace)
			if !signalAndWait(p, syscall.SIGKILL, 5*time.Second) {
				fmt.Fprintf(log, "  could not stop %s, left running by a crashed `nudgeflow-dev dev`\n", p)
				continue
			}
		}
		fmt.Fprintf(log, "  stopped %s, left running by a crashed `nudgeflow-dev dev` (%s)\n", p, how)
		stopped = append(stopped, p)
	}
	return stopped
}

// signalAndWait sends sig to p and reports whether p is gone within d.
func signalAndWait(p Proc, sig syscall.Signal, d time.Duration) bool {
	// On Linux FindProcess holds a pidfd from here on: the signal cannot reach a
	// process that takes the pid after this check.
	proc, err := os.FindProcess(p.PID)
	if err != nil || !p.Alive() {
		return !p.Alive()
	}
	if err := proc.Signal(sig); err != nil {
		return !p.Alive()
	}
	deadline := time.Now().Add(d)
	for p.Alive() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times (100 on Linux).
const clockTicks = 100

// TreeCPU is the CPU time (user + system, seconds) the process root and every
// live descendant used so far, with the children each of them waited for
// (cutime + cstime: a Renovate run the runner reaped, the git processes the Gitea
// server reaped), and the same by process name. Root's reaped children are named
// "<root>-reaped". Two readings' difference is what the tree spent between them,
// a process that exited meanwhile included once its parent reaped it.
func TreeCPU(root int) (float64, map[string]float64) {
	type stat struct {
		name        string
		ppid        int
		own, reaped float64
	}
	stats := map[int]stat{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		open, closing := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || closing < open {
			continue
		}
		f := strings.Fields(string(b[closing+1:]))
		if len(f) < 15 {
			continue
		}
		// f[1] is field 4 (ppid); f[11..14] fields 14-17: utime stime cutime cstime.
		var t [4]float64
		for i := range t {
			t[i], _ = strconv.ParseFloat(f[11+i], 64)
		}
		ppid, _ := strconv.Atoi(f[1])
		stats[pid] = stat{name: string(b[open+1 : closing]), ppid: ppid, own: (t[0] + t[1]) / clockTicks, reaped: (t[2] + t[3]) / clockTicks}
	}
	in := map[int]bool{root: true}
	// Walk down from root: a pid is in the tree when its parent is.
	for changed := true; changed; {
		changed = false
		for pid, s := range stats {
			if !in[pid] && in[s.ppid] {
				in[pid], changed = true, true
			}
		}
	}
	total, by := 0.0, map[string]float64{}
	for pid := range in {
		s, ok := stats[pid]
		if !ok {
			continue
		}
		total += s.own + s.reaped
		if pid == root {
			by[s.name] += s.own
			by[s.name+"-reaped"] += s.reaped
			continue
		}
		by[s.name] += s.own + s.reaped
	}
	return total, by
}

// MachineBusy is the CPU time (seconds, all CPUs) the whole machine spent busy so
// far: /proc/stat's first line but idle and iowait. Over an interval it tells how
// loaded the machine was, whoever loaded it.
func MachineBusy() float64 {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0
	}
	busy := 0.0
	for i, f := range fields[1:] {
		// user nice system idle iowait irq softirq steal (guest time is in user already)
		if i == 3 || i == 4 || i >= 8 {
			continue
		}
		v, _ := strconv.ParseFloat(f, 64)
		busy += v
	}
	return busy / clockTicks
}

// formatCPU writes CPU seconds by process, busiest first: "etcd:1.2,gitea:0.8".
func formatCPU(by map[string]float64) string {
	names := make([]string, 0, len(by))
	for n, v := range by {
		if v >= 0.05 {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(by[b], by[a]) })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s:%.1f", n, by[n])
	}
	return strings.Join(parts, ",")
}
