package localenv

import "syscall"

// forgejoProcAttr: the server is its own process group (Stop kills the group), and
// the kernel kills it when the thread that started it exits, which StartForgejo
// makes a thread that lives as long as the process (OnLongLivedThread): a test
// binary that ends without Stop leaves no server behind.
func forgejoProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
