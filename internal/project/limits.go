package project

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/vigil-operator/vigil/internal/egress"
)

// Keys of the limits ConfigMap, "<namespace>.<limit>", such as
// "team-a.check-limit: 200" or "team-a.egress-allow: 10.1.2.0/24". Namespace names are DNS labels, so the first
// dot ends the namespace.
const (
	LimitsKeyCheckLimit   = "check-limit"
	LimitsKeyPingLogLimit = "ping-log-limit"
	// LimitsKeyEgressAllow lists what the namespace's Channels may reach
	// besides the manager's own allowlist (package egress): CIDRs,
	// addresses and host names, such as "10.1.2.0/24, smtp.mail.svc".
	LimitsKeyEgressAllow = "egress-allow"
	// DefaultLimitsConfigMap is the name of the limits ConfigMap in the
	// manager's namespace.
	DefaultLimitsConfigMap = "vigil-limits"
)

// MaxPingLogLimit caps the ping log so a history stays small: readers
// return at most this many pings.
const MaxPingLogLimit = 1000

// Limits are what a project may hold: the manager's defaults (its flags),
// overridden per namespace by the limits ConfigMap in the manager's own
// namespace. Both are written only by whoever installs the manager, never
// by a project's tenants: a tenant who could raise their own limits would
// make them pointless. (Vigil once read them from annotations on the
// project Secret, which the tenant writes.) Like the reference's
// per-account limits, they bound what API clients and ping
// auto-provisioning create and how many pings each check keeps; and, past
// the reference, where the project's Channels may connect (package egress).
type Limits struct {
	// DefaultCheckLimit applies when the ConfigMap sets none (the
	// reference's default is 20).
	DefaultCheckLimit int
	// DefaultPingLogLimit applies when the ConfigMap sets none (the
	// reference's default is 100).
	DefaultPingLogLimit int

	mu        sync.RWMutex
	overrides map[string]limitOverride // namespace -> its limits (0: not set)
}

type limitOverride struct {
	checks, pingLog int
	egressAllow     egress.Allowlist
}

// CheckLimit is how many checks the project may hold.
func (l *Limits) CheckLimit(namespace string) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if o := l.overrides[namespace]; o.checks > 0 {
		return o.checks
	}
	return l.DefaultCheckLimit
}

// PingLogLimit is how many pings each of the project's checks keeps.
func (l *Limits) PingLogLimit(namespace string) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	n := l.DefaultPingLogLimit
	if o := l.overrides[namespace]; o.pingLog > 0 {
		n = o.pingLog
	}
	return min(n, MaxPingLogLimit)
}

// EgressAllow is what the namespace's Channels may reach besides what the
// manager allows everywhere.
func (l *Limits) EgressAllow(namespace string) egress.Allowlist {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.overrides[namespace].egressAllow
}

// SetOverrides replaces the per-namespace limits with those data holds (the
// limits ConfigMap's data; nil clears them). It returns what it could not
// read, one message per entry; those entries are ignored, so a typo leaves
// the project at the manager's default rather than at no limit.
func (l *Limits) SetOverrides(data map[string]string) []string {
	overrides := map[string]limitOverride{}
	var problems []string
	for key, value := range data {
		ns, limit, ok := strings.Cut(key, ".")
		if ok && ns != "" && limit == LimitsKeyEgressAllow {
			allow, err := egress.ParseAllowlist(value)
			if err != nil {
				problems = append(problems, fmt.Sprintf("key %q: %v", key, err))
				continue
			}
			o := overrides[ns]
			o.egressAllow = allow
			overrides[ns] = o
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(value))
		switch {
		case !ok || ns == "" || (limit != LimitsKeyCheckLimit && limit != LimitsKeyPingLogLimit):
			problems = append(problems, fmt.Sprintf("key %q: want <namespace>.%s, <namespace>.%s or <namespace>.%s",
				key, LimitsKeyCheckLimit, LimitsKeyPingLogLimit, LimitsKeyEgressAllow))
			continue
		case err != nil || n <= 0:
			problems = append(problems, fmt.Sprintf("key %q: %q is not a positive integer", key, value))
			continue
		}
		o := overrides[ns]
		if limit == LimitsKeyCheckLimit {
			o.checks = n
		} else {
			o.pingLog = n
		}
		overrides[ns] = o
	}
	sort.Strings(problems)
	l.mu.Lock()
	l.overrides = overrides
	l.mu.Unlock()
	return problems
}

// Watch follows the limits ConfigMap key names through the cache (which the
// manager restricts to that one ConfigMap); report receives what could not
// be read each time it changes.
func (l *Limits) Watch(ctx context.Context, c cache.Cache, key types.NamespacedName, report func(problems []string)) error {
	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		return fmt.Errorf("watching the limits ConfigMap: %w", err)
	}
	set := func(obj any) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok || cm.Namespace != key.Namespace || cm.Name != key.Name {
			return
		}
		if problems := l.SetOverrides(cm.Data); len(problems) > 0 && report != nil {
			report(problems)
		}
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: func(any) { l.SetOverrides(nil) },
	})
	return err
}
