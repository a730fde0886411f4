package controlplane

import "syscall"

// sysProcAttr puts a process in a group of its own, so that a Ctrl-C at a
// terminal reaches the test, which stops it in order, and has the kernel
// kill it when the thread that started it exits: whatever way the test
// process ends, no etcd or kube-apiserver outlives it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
