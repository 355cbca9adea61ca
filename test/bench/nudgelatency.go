package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/nudgeflow/nudgeflow/test/devenv"
	"github.com/nudgeflow/nudgeflow/test/localenv"
)

// benchNudgeLatency runs the nudge-latency measure on the stack `make run-forgejo`
// starts: `nudgeflow-dev dev --forgejo` (this binary) as a child process on a fresh
// state folder and free ports, so every process of that stack is its process tree
// and this process (the measure's client) is not. Then
// devenv.MeasureNudgeLatency, and the child is stopped (Ctrl-C's path).
func benchNudgeLatency(ctx context.Context, opts Options, logDir string, progress func(string, ...any)) error {
	home := filepath.Join(logDir, "dev")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the nudgeflow-dev binary: %w", err)
	}
	args := []string{"dev", "--forgejo"}
	for _, flag := range []string{"--apiserver-port", "--temporal-port", "--ui-port", "--forge-port", "--forge-hook-port", "--gitlab-port", "--forgejo-port", "--registry-port"} {
		p, err := localenv.FreePort()
		if err != nil {
			return err
		}
		args = append(args, flag, strconv.Itoa(p))
	}
	out, err := os.Create(filepath.Join(logDir, "nudgeflow-dev-dev.log"))
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), devenv.HomeEnv+"="+home)
	cmd.Stdout, cmd.Stderr = out, out
	// The stack dies with the bench (Linux): started from a thread that lives as
	// long as the process, as the parent-death signal follows the parent thread.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var startErr error
	localenv.OnLongLivedThread(func() { startErr = cmd.Start() })
	if startErr != nil {
		return fmt.Errorf("starting nudgeflow-dev dev --forgejo: %w", startErr)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(90 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	progress("nudgeflow-dev dev --forgejo starting (state and logs in %s)", home)
	deadline := time.Now().Add(10 * time.Minute)
	for {
		if _, err := devenv.ReadRunning(home); err == nil {
			break
		} else if time.Now().After(deadline) {
			return fmt.Errorf("nudgeflow-dev dev --forgejo not ready after 10 minutes (%v); its output: %s", err, out.Name())
		}
		select {
		case err := <-done:
			return fmt.Errorf("nudgeflow-dev dev --forgejo exited (%v); its output: %s", err, out.Name())
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(500 * time.Millisecond):
		}
	}
	progress("nudgeflow-dev dev --forgejo ready")
	_, err = devenv.MeasureNudgeLatency(ctx, home, devenv.LatencyOptions{N: opts.Nudges, Idle: 10 * time.Second, Out: opts.Out, Log: opts.Log})
	return err
}
