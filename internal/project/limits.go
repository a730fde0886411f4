package project

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/egress"
)

// Keys of the limits ConfigMap, "<namespace>.<limit>", such as
// "team-a.check-limit: 200" or "team-a.egress-allow: 10.1.2.0/24". Namespace names are DNS labels, so the first
// dot ends the namespace.
const (
	LimitsKeyCheckLimit   = "check-limit"
	LimitsKeyPingLogLimit = "ping-log-limit"
	// LimitsKeyBodyBytesLimit bounds the ping body bytes the store keeps
	// for the namespace's checks together, in bytes or as a quantity
	// ("256Mi").
	LimitsKeyBodyBytesLimit = "body-bytes-limit"
	// LimitsKeySecretLimit and LimitsKeyKeyLimit bound what the registry
	// reads of a namespace's project Secrets.
	LimitsKeySecretLimit = "project-secret-limit"
	LimitsKeyKeyLimit    = "api-key-limit"
	// LimitsKeyEgressAllow lists what the namespace's Channels may reach
	// besides the manager's own allowlist (package egress): CIDRs,
	// addresses and host names, such as "10.1.2.0/24, smtp.mail.svc".
	LimitsKeyEgressAllow = "egress-allow"
	// DefaultLimitsConfigMap is the name of the limits ConfigMap in the
	// manager's namespace.
	DefaultLimitsConfigMap = "vigil-limits"
)

// ObjectKind is a kind of object a namespace's tenants create with kubectl
// whose number in a namespace has a limit, named by its limits key. Each
// costs the shared manager: a Channel an outbox row per flip of every
// check routed to it, a MaintenanceWindow work for every check it covers,
// a StatusPage an anonymous page, a CronJobPolicy the CronJobs it selects.
type ObjectKind string

const (
	Channels           ObjectKind = "channel-limit"
	MaintenanceWindows ObjectKind = "maintenance-window-limit"
	StatusPages        ObjectKind = "status-page-limit"
	CronJobPolicies    ObjectKind = "cronjob-policy-limit"
)

// ObjectKinds are the kinds with a limit per namespace.
var ObjectKinds = []ObjectKind{Channels, MaintenanceWindows, StatusPages, CronJobPolicies}

// DefaultObjectLimits are each kind's limit when neither the manager's
// flags nor the limits ConfigMap set one: far above what a team uses (a
// handful of Channels, a few windows and pages), and still a bound on what
// one namespace costs every other.
var DefaultObjectLimits = map[ObjectKind]int{Channels: 100, MaintenanceWindows: 100, StatusPages: 20, CronJobPolicies: 100}

// ReasonLimitExceeded is the reason of the Ready condition and the Event
// of an object past its namespace's limit, and of the Event on a project
// Secret the limits cut (some or all of its keys open nothing).
const ReasonLimitExceeded = v1.ReasonLimitExceeded

// Oldest sorts a namespace's objects of one kind oldest first (ties by
// name) and returns the first limit of them: those that count. Objects
// past the limit are ignored, always the same ones on every replica, and
// one comes within the limit when an older one is deleted.
func Oldest[T any, PT interface {
	*T
	metav1.Object
}](items []T, limit int) []T {
	slices.SortStableFunc(items, func(a, b T) int {
		pa, pb := PT(&a), PT(&b)
		ta, tb := pa.GetCreationTimestamp(), pb.GetCreationTimestamp()
		return cmp.Or(ta.Compare(tb.Time), strings.Compare(pa.GetName(), pb.GetName()))
	})
	return items[:min(len(items), max(limit, 0))]
}

// Counts reports whether the object named name is among the first limit
// of items, a namespace's objects of its kind (Oldest).
func Counts[T any, PT interface {
	*T
	metav1.Object
}](items []T, name string, limit int) bool {
	return slices.ContainsFunc(Oldest[T, PT](items, limit), func(o T) bool { return PT(&o).GetName() == name })
}

// PastLimit is the message of an object past its namespace's limit.
func PastLimit(kind ObjectKind, namespace, what string, limit int) string {
	return fmt.Sprintf("namespace %s holds more than %d %s, the limit: this one, among the newest, is ignored. "+
		"Delete others, or ask a cluster administrator to raise the limit (manager flag --%s, or %s.%s in the limits ConfigMap)",
		namespace, limit, what, kind, namespace, kind)
}

// Defaults of the bounds on a namespace's project Secrets. Every labelled
// Secret is tenant input that the manager indexes, and every key in it a
// claim the ping store records: without a bound, one tenant's megabytes of
// key lines cost every project's pings (issue #24). A project needs one
// Secret (`vigil keys create` writes one) and a handful of keys, a few
// dozen with one per pipeline; the reference gives a project one
// read-write and one read-only key. So the defaults are far above any real
// project, and still bound what one namespace costs: at most 1,000 API
// keys (two store transactions to record them all) in at most 20 Secrets.
const (
	DefaultSecretLimit = 20
	DefaultKeyLimit    = 1000
)

// DefaultBodyBytesLimit is the ping body bytes a namespace's checks keep
// together when neither the manager's flag nor the limits ConfigMap set
// it: 256 checks at the store's per-check body budget (256 KiB), and a
// sixteenth of the chart's default 1 GiB volume, so that one namespace's
// anonymous pings cannot fill the store every project writes to.
const DefaultBodyBytesLimit = 64 << 20

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
	// DefaultSecretLimit is how many project Secrets of a namespace count
	// (DefaultSecretLimit when not positive); the newest beyond it are
	// ignored.
	DefaultSecretLimit int
	// DefaultKeyLimit is how many API keys a namespace's project Secrets
	// may hold (DefaultKeyLimit when not positive); later lines are
	// ignored.
	DefaultKeyLimit int
	// DefaultBodyBytesLimit is the ping body bytes a namespace's checks
	// keep together (DefaultBodyBytesLimit when not positive).
	DefaultBodyBytesLimit int64
	// DefaultObjects are each kind's limit per namespace (the manager's
	// flags); a kind missing, or not positive, has DefaultObjectLimits'.
	DefaultObjects map[ObjectKind]int
	// OnChange, when set, is called after the overrides changed the
	// project Secret or API key limit of namespaces, with those
	// namespaces, sorted (the registry then re-reads their Secrets under
	// the new bounds). Changes to other limits do not call it: they cost
	// the registry nothing, and every ConfigMap event (a resync, an edit
	// of another namespace's entry) rebuilding every namespace would.
	OnChange func(namespaces []string)

	mu        sync.RWMutex
	overrides map[string]limitOverride // namespace -> its limits (0: not set)
}

type limitOverride struct {
	checks, pingLog, secrets, keys int
	pingBodies                     int64
	objects                        map[ObjectKind]int
	egressAllow                    egress.Allowlist
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

// BodyBytesLimit is the ping body bytes the namespace's checks keep
// together. A nil Limits gives the default.
func (l *Limits) BodyBytesLimit(namespace string) int64 {
	if l == nil {
		return DefaultBodyBytesLimit
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if o := l.overrides[namespace]; o.pingBodies > 0 {
		return o.pingBodies
	}
	if l.DefaultBodyBytesLimit > 0 {
		return l.DefaultBodyBytesLimit
	}
	return DefaultBodyBytesLimit
}

// SecretLimit is how many of the namespace's project Secrets count. A nil
// Limits gives the defaults.
func (l *Limits) SecretLimit(namespace string) int {
	if l == nil {
		return DefaultSecretLimit
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if o := l.overrides[namespace]; o.secrets > 0 {
		return o.secrets
	}
	return positiveOr(l.DefaultSecretLimit, DefaultSecretLimit)
}

// KeyLimit is how many API keys the namespace's project Secrets may hold.
// A nil Limits gives the defaults.
func (l *Limits) KeyLimit(namespace string) int {
	if l == nil {
		return DefaultKeyLimit
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if o := l.overrides[namespace]; o.keys > 0 {
		return o.keys
	}
	return positiveOr(l.DefaultKeyLimit, DefaultKeyLimit)
}

// ObjectLimit is how many objects of the kind the namespace may hold. A
// nil Limits gives the defaults.
func (l *Limits) ObjectLimit(namespace string, kind ObjectKind) int {
	if l == nil {
		return DefaultObjectLimits[kind]
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if n := l.overrides[namespace].objects[kind]; n > 0 {
		return n
	}
	return positiveOr(l.DefaultObjects[kind], DefaultObjectLimits[kind])
}

// positiveOr is n, or def when n is not positive (a flag left at 0).
func positiveOr(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

// EgressAllow is what the namespace's Channels may reach besides what the
// manager allows everywhere. A nil Limits allows nothing more.
func (l *Limits) EgressAllow(namespace string) egress.Allowlist {
	if l == nil {
		return egress.Allowlist{}
	}
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
		if ok && ns != "" && limit == LimitsKeyBodyBytesLimit {
			q, err := resource.ParseQuantity(strings.TrimSpace(value))
			if err != nil || q.Sign() <= 0 {
				problems = append(problems, fmt.Sprintf("key %q: %q is not a positive number of bytes (such as 268435456 or 256Mi)", key, value))
				continue
			}
			o := overrides[ns]
			o.pingBodies = q.Value()
			overrides[ns] = o
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(value))
		switch {
		case !ok || ns == "" || !slices.Contains(limitsKeys, limit):
			problems = append(problems, fmt.Sprintf("key %q: want <namespace>.<%s>", key, strings.Join(limitsKeys, "|")))
			continue
		case err != nil || n <= 0:
			problems = append(problems, fmt.Sprintf("key %q: %q is not a positive integer", key, value))
			continue
		}
		o := overrides[ns]
		switch limit {
		case LimitsKeyCheckLimit:
			o.checks = n
		case LimitsKeyPingLogLimit:
			o.pingLog = n
		case LimitsKeySecretLimit:
			o.secrets = n
		case LimitsKeyKeyLimit:
			o.keys = n
		default:
			o.objects = maps.Clone(o.objects)
			if o.objects == nil {
				o.objects = map[ObjectKind]int{}
			}
			o.objects[ObjectKind(limit)] = n
		}
		overrides[ns] = o
	}
	sort.Strings(problems)
	l.mu.Lock()
	changed := secretBoundsChanged(l.overrides, overrides)
	l.overrides = overrides
	l.mu.Unlock()
	if l.OnChange != nil && len(changed) > 0 {
		l.OnChange(changed)
	}
	return problems
}

// secretBoundsChanged lists, sorted, the namespaces whose project Secret
// or API key limit differs between before and after.
func secretBoundsChanged(before, after map[string]limitOverride) []string {
	var changed []string
	for ns, o := range before {
		if n := after[ns]; n.secrets != o.secrets || n.keys != o.keys {
			changed = append(changed, ns)
		}
	}
	for ns, n := range after {
		if o, ok := before[ns]; !ok && (n.secrets != o.secrets || n.keys != o.keys) {
			changed = append(changed, ns)
		}
	}
	sort.Strings(changed)
	return changed
}

// limitsKeys are the limits a namespace's entry may set.
var limitsKeys = []string{LimitsKeyCheckLimit, LimitsKeyPingLogLimit, LimitsKeyBodyBytesLimit, LimitsKeySecretLimit, LimitsKeyKeyLimit, LimitsKeyEgressAllow,
	string(Channels), string(MaintenanceWindows), string(StatusPages), string(CronJobPolicies)}

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
