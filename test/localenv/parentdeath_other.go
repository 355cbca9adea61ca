//go:build !linux

package localenv

import (
	"os"
	"os/exec"
)

// execWithParentDeathSignal runs the binary as a child: without PR_SET_PDEATHSIG
// there is nothing to set (parentDeathShim writes no shims off Linux).
func execWithParentDeathSignal(_ int, binary string, argv []string) error {
	cmd := exec.Command(binary, argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return err
	}
	os.Exit(0)
	return nil
}
