package devenv

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nudgeflow/nudgeflow/test/world"
)

// startSleep starts a child that runs until killed and returns it as a Proc.
func startSleep(t *testing.T) (*exec.Cmd, Proc) {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	p, ok := procOf(cmd.Process.Pid)
	if !ok || !p.Alive() || p.Name != "sleep" && !strings.Contains(p.Exe, "coreutils") {
		t.Fatalf("procOf(%d) = %+v, %v: want the live sleep", cmd.Process.Pid, p, ok)
	}
	return cmd, p
}

func TestStopProcsSparesARecycledPid(t *testing.T) {
	_, p := startSleep(t)
	recycled := p
	recycled.Start++ // the same pid, started at another time: another process
	otherExe := p
	otherExe.Exe = "/usr/bin/not-" + p.Name // the same pid and start, another executable
	for _, q := range []Proc{recycled, otherExe} {
		if q.Alive() {
			t.Fatalf("%+v counts as alive, but it is not the running %+v", q, p)
		}
		if stopped := stopProcs([]Proc{q}, time.Second, io.Discard); len(stopped) != 0 {
			t.Fatalf("stopProcs stopped %v", stopped)
		}
		if !p.Alive() {
			t.Fatalf("stopProcs(%+v) killed pid %d, which is another process", q, p.PID)
		}
	}
}

func TestStopProcsStopsTheSameProcess(t *testing.T) {
	cmd, p := startSleep(t)
	var log strings.Builder
	if stopped := stopProcs([]Proc{p}, 10*time.Second, &log); len(stopped) != 1 {
		t.Fatalf("stopProcs stopped %v, want %v", stopped, p)
	}
	if !strings.Contains(log.String(), "stopped "+p.String()+", left running by a crashed `nudgeflow-dev dev` (SIGTERM)") {
		t.Fatalf("log: %q", log.String())
	}
	// Dead, not yet reaped (a zombie): not alive.
	if p.Alive() {
		t.Fatalf("%v still alive after stopProcs", p)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Fatalf("sleep ended with %v, want SIGTERM", err)
	}
}

func TestStopProcsKillsWhatIgnoresSIGTERM(t *testing.T) {
	cmd := exec.Command("sh", "-c", `trap "" TERM; echo ready; exec sleep 600`)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// Wait for the trap to be set (the line comes after it), then for the exec.
	if _, err := stdout.Read(make([]byte, 6)); err != nil {
		t.Fatal(err)
	}
	var p Proc
	world.Eventually(t, 10*time.Second, "the shell execs sleep", func() (bool, error) {
		var ok bool
		p, ok = procOf(cmd.Process.Pid)
		if ok && p.Name != "sh" && !strings.HasSuffix(p.Exe, "/dash") && !strings.HasSuffix(p.Exe, "/bash") {
			return true, nil
		}
		return false, fmt.Errorf("process %+v", p)
	})
	var log strings.Builder
	if stopped := stopProcs([]Proc{p}, 300*time.Millisecond, &log); len(stopped) != 1 || p.Alive() {
		t.Fatalf("stopProcs stopped %v; %v alive: %v", stopped, p, p.Alive())
	}
	if !strings.Contains(log.String(), "SIGKILL: still running 300ms after SIGTERM") {
		t.Fatalf("log: %q", log.String())
	}
}

func TestProcStateReadsPastTheCommand(t *testing.T) {
	ppid, state, start, err := procState(self().PID)
	if err != nil || ppid <= 0 || state == 0 || start == 0 {
		t.Fatalf("procState(self) = %d, %q, %d, %v", ppid, state, start, err)
	}
}

// TestTreeCPUCountsReapedChildren: a child's CPU is in the tree while it runs
// (its own line) and after this process reaped it (the root's "-reaped" line),
// as a Renovate run the PipelineRun runner waited for is.
func TestTreeCPUCountsReapedChildren(t *testing.T) {
	self := os.Getpid()
	before, byBefore := TreeCPU(self)
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	running, byRunning := TreeCPU(self)
	if _, ok := byRunning["sh"]; !ok {
		t.Fatalf("the running child is not in the tree: %v", byRunning)
	}
	if running < before {
		t.Fatalf("the tree's CPU went down: %.2f then %.2f", before, running)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	child := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	after, byAfter := TreeCPU(self)
	name := ""
	for n := range byAfter {
		if strings.HasSuffix(n, "-reaped") {
			name = n
		}
	}
	reaped := byAfter[name] - byBefore[name]
	// /proc counts in ticks of 10 ms; the shell's loop takes far more.
	if child < 0.1 || reaped < child-0.02 || after-before < child-0.02 {
		t.Fatalf("the child used %.2fs; the tree's reaped line grew %.2fs (%s) and its total %.2fs", child, reaped, name, after-before)
	}
	if got := formatCPU(map[string]float64{"a": 0.04, "b": 2, "c": 1.25}); got != "b:2.0,c:1.2" && got != "b:2.0,c:1.3" {
		t.Fatalf("formatCPU = %q", got)
	}
}
