package httpserver

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// requestWaiting reports whether the client has sent bytes that the
// server has not read yet: they wait in the socket's receive queue.
func requestWaiting(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	queued, ioctlErr := 0, error(nil)
	if err := raw.Control(func(fd uintptr) {
		queued, ioctlErr = unix.IoctlGetInt(int(fd), unix.SIOCINQ)
	}); err != nil || ioctlErr != nil {
		return false
	}
	return queued > 0
}
