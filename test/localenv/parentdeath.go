package localenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// ParentDeathExecArg is the first argument of the command line a parent-death shim
// runs: `<this binary> __parent-death-exec PARENT_PID BINARY ARGS...`. A binary
// that passes DieWithParentDir to StartControlPlane or StartTemporal must call
// HandleParentDeathExec before anything else in main.
const ParentDeathExecArg = "__parent-death-exec"

// HandleParentDeathExec runs the shim's command line when args (os.Args) is one;
// it returns only when args is not a shim's command line.
//
// On Linux it asks the kernel to SIGKILL this process when the thread that started
// it exits (prctl PR_SET_PDEATHSIG, kept across execve), checks that the parent is
// still the one that wrote the shim (it may have died before the prctl), then
// replaces itself with BINARY ARGS...: same pid, so the parent's bookkeeping holds.
// Elsewhere it just runs BINARY ARGS....
func HandleParentDeathExec(args []string) {
	if len(args) < 4 || args[1] != ParentDeathExecArg {
		return
	}
	parent, err := strconv.Atoi(args[2])
	if err == nil {
		err = execWithParentDeathSignal(parent, args[3], args[3:])
	}
	fmt.Fprintf(os.Stderr, "%s %s: %v\n", filepath.Base(args[0]), ParentDeathExecArg, err)
	os.Exit(127)
}

// parentDeathShim writes DIR/NAME, a script that runs binary through
// HandleParentDeathExec of the running executable, and returns its path. Libraries
// that start servers (envtest, the Temporal SDK's dev server) take a binary's
// path but no process attributes: the script is that path.
func parentDeathShim(dir, binary string) (string, error) {
	if runtime.GOOS != "linux" {
		return binary, nil // no PR_SET_PDEATHSIG: run the binary itself
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding this executable for the parent-death shim: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	path := filepath.Join(dir, filepath.Base(binary))
	script := fmt.Sprintf("#!/bin/sh\n# Written by %s (pid %d): %s dies with it.\nexec %s %s %d %s \"$@\"\n",
		filepath.Base(self), os.Getpid(), filepath.Base(binary), shQuote(self), ParentDeathExecArg, os.Getpid(), shQuote(binary))
	// Written aside and renamed into place: exec fails with "text file busy" while
	// any process holds the file open for writing — a child forked meanwhile by
	// another goroutine inherits the descriptor until it execs, and a crashed run's
	// leftovers may still hold the old file. The renamed file is never open for
	// writing.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(binary)+".*")
	if err != nil {
		return "", fmt.Errorf("writing the parent-death shim for %s: %w", binary, err)
	}
	_, werr := tmp.WriteString(script)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), 0o700)); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("writing the parent-death shim %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("placing the parent-death shim %s: %w", path, err)
	}
	return path, nil
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// OnLongLivedThread runs start on a goroutine locked to its own OS thread, waits
// for it, and keeps that thread alive (locked, parked) for the rest of the process.
//
// The kernel sends PR_SET_PDEATHSIG when the *thread* that forked the child exits,
// not the process. Go threads can exit while the process lives on (a goroutine that
// ends while locked to its thread takes the thread with it), so a child forked from
// an arbitrary goroutine could be killed at a random moment. Forking from a
// thread that never exits makes the signal mean "the process died".
func OnLongLivedThread(start func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		start()
		close(done)
		select {} // never unlock, never exit: the children's parent thread stays
	}()
	<-done
}
