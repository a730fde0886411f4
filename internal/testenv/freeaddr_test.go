package testenv

import (
	"net"
	"strconv"
	"testing"
)

// FreeAddr's ports are free, loopback, and below the kernel's ephemeral
// range, where no :0 listener of another process can take them.
func TestFreeAddrBelowEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	for range 50 {
		addr, err := FreeAddr(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		host, portText, err := net.SplitHostPort(addr)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("FreeAddr = %q", addr)
		}
		port, _ := strconv.Atoi(portText)
		if low > freePortFloor+1000 && (port < freePortFloor || port >= low) {
			t.Fatalf("port %d, want it in [%d, %d)", port, freePortFloor, low)
		}
		l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", addr)
		if err != nil {
			t.Fatalf("%s is not free: %v", addr, err)
		}
		_ = l.Close()
	}
}
