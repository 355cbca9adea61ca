package localenv

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stopFunc is a devServer whose Stop is the function.
type stopFunc func() error

func (f stopFunc) Stop() error { return f() }

// TestTemporalStopExits: a server that exits is stopped, its failure named with
// the address.
func TestTemporalStopExits(t *testing.T) {
	tmp := &Temporal{Address: "127.0.0.1:7233", server: stopFunc(func() error { return nil })}
	if err := tmp.stop(time.Minute, time.Minute); err != nil {
		t.Fatalf("stop: %v", err)
	}
	failed := errors.New("exit status 3")
	tmp.server = stopFunc(func() error { return failed })
	if err := tmp.stop(time.Minute, time.Minute); !errors.Is(err, failed) || !strings.Contains(err.Error(), tmp.Address) {
		t.Fatalf("stop: %v, want %v wrapped with %s", err, failed, tmp.Address)
	}
}

// TestTemporalStopHangsPIDUnknown: with no pid to kill, Stop stops waiting for a
// server that never exits and says so.
func TestTemporalStopHangsPIDUnknown(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	tmp := &Temporal{Address: "127.0.0.1:7233", server: stopFunc(func() error { <-release; return nil })}
	err := tmp.stop(10*time.Millisecond, time.Minute)
	if err == nil || !strings.Contains(err.Error(), tmp.Address) || !strings.Contains(err.Error(), "pid unknown") {
		t.Fatalf("stop: %v, want an error naming %s and an unknown pid", err, tmp.Address)
	}
}

// TestTemporalStopHangsKilled: a child started with "--port N" that ignores SIGINT
// (as a hung dev server would) is found by its port, and killed once Stop has
// waited. Without /proc (not Linux) it is not found: Stop then gives up waiting
// with the pid unknown (TestTemporalStopHangsPIDUnknown).
func TestTemporalStopHangsKilled(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	// read keeps the shell waiting on stdin, which this test never writes to; it
	// says ready once SIGINT is ignored.
	cmd := exec.Command("sh", "-c", `trap "" INT; echo ready; read x`, "sh", "--port", strconv.Itoa(port))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting sh: %v", err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the shell said %q (%v), want ready", line, err)
	}
	pid := childWithPort(port)
	if runtime.GOOS != "linux" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if pid != 0 {
			t.Fatalf("childWithPort(%d) = %d without /proc, want 0 (pid unknown)", port, pid)
		}
		return
	}
	if pid != cmd.Process.Pid {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("childWithPort(%d) = %d, want %d", port, pid, cmd.Process.Pid)
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	// As the SDK's DevServer.Stop does: SIGINT, then wait.
	tmp := &Temporal{Address: "127.0.0.1:" + strconv.Itoa(port), proc: proc, server: stopFunc(func() error {
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			return err
		}
		return cmd.Wait()
	})}
	err = tmp.stop(10*time.Millisecond, time.Minute)
	if err == nil || !strings.Contains(err.Error(), tmp.Address) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(pid)) ||
		!strings.Contains(err.Error(), "killed it") {
		t.Fatalf("stop: %v, want an error naming %s and pid %d, saying it killed it", err, tmp.Address, pid)
	}
	// stop returned after the fake's Wait did: the shell is reaped.
	if got := cmd.ProcessState.String(); got != "signal: killed" {
		t.Fatalf("the shell ended with %q, want signal: killed", got)
	}
}
