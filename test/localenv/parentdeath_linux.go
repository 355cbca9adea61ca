package localenv

import (
	"fmt"
	"os"
	"syscall"
)

func execWithParentDeathSignal(parent int, binary string, argv []string) error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_PDEATHSIG): %w", errno)
	}
	if os.Getppid() != parent {
		return fmt.Errorf("parent %d died before %s started", parent, binary)
	}
	return syscall.Exec(binary, argv, os.Environ())
}
