//go:build !linux

package httpserver

import "net"

// requestWaiting cannot tell here: every connection is treated as one
// whose client has sent nothing.
func requestWaiting(net.Conn) bool { return false }
