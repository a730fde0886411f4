//go:build !linux

package controlplane

import "syscall"

// sysProcAttr puts a process in a group of its own. Only Linux has a
// parent-death signal: elsewhere, a test process that is killed leaves its
// control plane running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
