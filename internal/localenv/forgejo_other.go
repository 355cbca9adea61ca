//go:build !linux

package localenv

import "syscall"

// forgejoProcAttr: the server is its own process group (Stop kills the group).
func forgejoProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
