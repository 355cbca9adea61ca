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
