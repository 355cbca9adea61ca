//go:build !linux

package localenv

import "syscall"

// forgejoProcAttr: the server is its own process group (Stop kills the group); no
// parent-death signal outside Linux.
func forgejoProcAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
