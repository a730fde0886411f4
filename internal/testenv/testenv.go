// Package testenv starts a real kube-apiserver and etcd (package
// controlplane) with Vigil's CRDs installed, for tests that need the
// Kubernetes API (Start), shares one between the tests of a package and
// its passes on each ping store (Main, MainOnEachStore), and starts the
// other real parts tests use: PostgreSQL, Prometheus, Vigil's binary.
//
// The binaries are built from Go modules by `make envtest` (nothing is
// downloaded); `make test` exports KUBEBUILDER_ASSETS pointing at them. When
// the variable is unset (a test run from an editor), the newest directory
// under bin/envtest of the repository is used.
package testenv

import (
	"context"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// RepoRoot finds the repository root: the nearest directory upwards from the
// working directory that holds go.mod and the config directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fileExists(filepath.Join(dir, "go.mod")) && fileExists(filepath.Join(dir, "config", "crd")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: repository root not found above the working directory")
		}
		dir = parent
	}
}

// Assets is the directory of the control-plane binaries: envtest's, and
// for the suites that run a whole cluster also kube-controller-manager and
// kube-scheduler (`make test` builds them).
func Assets() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return assetsDir(root)
}

func assetsDir(root string) (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "bin", "envtest", "*"))
	sort.Strings(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		if fileExists(filepath.Join(dirs[i], "kube-apiserver")) && fileExists(filepath.Join(dirs[i], "etcd")) {
			return dirs[i], nil
		}
	}
	return "", fmt.Errorf("testenv: no kube-apiserver and etcd under %s; run `make envtest` (or `make test`) to build them from Go modules",
		filepath.Join(root, "bin", "envtest"))
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// FreeAddr returns a loopback address nothing listens on right now, for a
// server under test that binds it later.
//
// The port is taken below the kernel's ephemeral range: a port the kernel
// hands out (to a listener on :0, an httptest server, an outgoing
// connection of any test process running beside this one) is never one
// FreeAddr returned, so nothing takes it between this check and the
// server's bind. (Ports from :0 used to be returned; under make test's
// parallel packages another process's :0 listener once took one first.)
// Where the ephemeral range starts too low to leave room, :0 it is.
func FreeAddr(ctx context.Context) (string, error) {
	if low := ephemeralLow(); low > freePortFloor+1000 {
		for range 200 {
			port := freePortFloor + mathrand.IntN(low-freePortFloor)
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
			if err != nil {
				continue // taken: another
			}
			_ = l.Close()
			return addr, nil
		}
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// freePortFloor keeps FreeAddr's ports above the well-known and the
// commonly registered ones.
const freePortFloor = 10000

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// net.ipv4.ip_local_port_range), or 0 when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return 0
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0
	}
	return low
}
