package project

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Annotations on a project Secret that raise or lower the project's limits.
// A cluster administrator sets them; API keys cannot.
const (
	AnnotationCheckLimit   = "monitoring.vigil.dev/check-limit"
	AnnotationPingLogLimit = "monitoring.vigil.dev/ping-log-limit"
)

// Limits are the manager's default limits, overridden per project by the
// annotations above. Like the reference's per-account limits, they bound
// what API clients and ping auto-provisioning create and how many pings each
// check keeps.
type Limits struct {
	Registry *Registry
	// DefaultCheckLimit applies when the project sets none (the reference's
	// default is 20).
	DefaultCheckLimit int
	// DefaultPingLogLimit applies when the project sets none (the
	// reference's default is 100).
	DefaultPingLogLimit int
}

// MaxPingLogLimit caps the ping log so a history stays well below etcd's
// object size limit.
const MaxPingLogLimit = 1000

// CheckLimit is how many checks the project may hold.
func (l *Limits) CheckLimit(namespace string) int {
	if info, ok := l.Registry.Project(namespace); ok && info.CheckLimit > 0 {
		return info.CheckLimit
	}
	return l.DefaultCheckLimit
}

// PingLogLimit is how many pings each of the project's checks keeps.
func (l *Limits) PingLogLimit(namespace string) int {
	n := l.DefaultPingLogLimit
	if info, ok := l.Registry.Project(namespace); ok && info.PingLogLimit > 0 {
		n = info.PingLogLimit
	}
	return min(n, MaxPingLogLimit)
}

// limitAnnotation reads a positive integer annotation; anything else is 0
// (not set).
func limitAnnotation(s *corev1.Secret, key string) int {
	v, err := strconv.Atoi(strings.TrimSpace(s.Annotations[key]))
	if err != nil || v < 0 {
		return 0
	}
	return v
}
