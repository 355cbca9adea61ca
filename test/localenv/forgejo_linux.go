package localenv

import "syscall"

// forgejoProcAttr: the server is its own process group (Stop kills the group), and,
// with dieWithParent, the kernel kills it when the thread that started it exits,
// which StartForgejo makes a thread that lives as long as the process
// (OnLongLivedThread): a process that ends without Stop leaves no server behind.
func forgejoProcAttr(dieWithParent bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if dieWithParent {
		a.Pdeathsig = syscall.SIGKILL
	}
	return a
}
