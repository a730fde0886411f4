// Package history reads and appends a check's CheckHistory: its ping log, ping
// bodies and flips. The ping path, the controller, the notifier and the API
// all go through it, so the rules live in one place: the object is created
// lazily and owned by its Check (deleting the check deletes it), every write
// is a read-modify-write with optimistic concurrency retried on conflict, and
// every write trims the object to its bounds so it stays far below etcd's
// object size limit.
package history

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/scheme"
)

// ownerScheme resolves the Check's kind for owner references.
var ownerScheme = scheme.New()

// PendingLabel marks a history that holds flips with undelivered
// notifications, so the notifier finds them after a restart with one
// labelled list instead of reading every history.
const PendingLabel = "monitoring.vigil.dev/pending-notifications"

// Limits bound a history.
type Limits struct {
	// PingLog is how many pings are kept (the project's ping-log limit).
	PingLog int
	// BodyBytes is the budget for ping bodies; the oldest bodies are
	// dropped first when the total exceeds it.
	BodyBytes int
	// FlipAge and FlipCount: a flip is kept while it is younger than
	// FlipAge or among the newest FlipCount flips...
	FlipAge   time.Duration
	FlipCount int
	// ...but never more than MaxFlips, except flips that still owe
	// notifications, which are always kept.
	MaxFlips int
}

// DefaultLimits are the limits when the manager is not told otherwise.
func DefaultLimits() Limits {
	return Limits{
		PingLog:   100,
		BodyBytes: 256 << 10,
		FlipAge:   90 * 24 * time.Hour,
		FlipCount: 1000,
		MaxFlips:  2000,
	}
}

// Store reads and writes histories.
type Store struct {
	// Client writes (and creates) histories.
	Client client.Client
	// Reader reads them. Use an uncached reader (the manager's API reader):
	// histories are large and read only on demand, so they are kept out of
	// the informer cache.
	Reader client.Reader
	// Limits returns the limits for a namespace.
	Limits func(namespace string) Limits
	// Now is the clock used for flip retention.
	Now func() time.Time
}

// Get returns the check's history; a check that has none yet gets an empty,
// unsaved one.
func (s *Store) Get(ctx context.Context, check *v1.Check) (*v1.CheckHistory, error) {
	h, _, err := s.read(ctx, check)
	return h, err
}

// read returns the check's history, or a new one plus the stale history of
// an earlier check of the same name that the garbage collector has not
// removed yet.
func (s *Store) read(ctx context.Context, check *v1.Check) (h, stale *v1.CheckHistory, err error) {
	h = &v1.CheckHistory{}
	err = s.Reader.Get(ctx, client.ObjectKeyFromObject(check), h)
	if apierrors.IsNotFound(err) {
		return newHistory(check), nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading history of %s/%s: %w", check.Namespace, check.Name, err)
	}
	if !ownedBy(h, check) {
		return newHistory(check), h, nil
	}
	return h, nil, nil
}

// Update applies mutate to the check's current history and writes it,
// creating the history if needed. On a conflict it reads again and reapplies
// mutate, so mutate must be a pure function of the history it is given. The
// written history is returned.
func (s *Store) Update(ctx context.Context, check *v1.Check, mutate func(*v1.CheckHistory) error) (*v1.CheckHistory, error) {
	var out *v1.CheckHistory
	backoff := wait.Backoff{Steps: 10, Duration: 5 * time.Millisecond, Factor: 2, Jitter: 0.5, Cap: time.Second}
	err := retryOnConflictOrExists(backoff, func() error {
		h, stale, err := s.read(ctx, check)
		if err != nil {
			return err
		}
		if stale != nil {
			uid := stale.UID
			err := s.Client.Delete(ctx, stale, client.Preconditions{UID: &uid})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("removing the history of an earlier check named %s: %w", check.Name, err)
			}
		}
		if err := mutate(h); err != nil {
			return err
		}
		s.trim(h)
		setPendingLabel(h)
		if h.ResourceVersion == "" {
			err = s.Client.Create(ctx, h)
		} else {
			err = s.Client.Update(ctx, h)
		}
		if err == nil {
			out = h
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("writing history of %s/%s: %w", check.Namespace, check.Name, err)
	}
	return out, nil
}

// UpdateFrom is Update starting from base, the history as this process last
// wrote it, which saves a read when nobody else wrote since. If base is
// stale the write conflicts and UpdateFrom falls back to Update.
func (s *Store) UpdateFrom(ctx context.Context, check *v1.Check, base *v1.CheckHistory, mutate func(*v1.CheckHistory) error) (*v1.CheckHistory, error) {
	if base == nil || base.ResourceVersion == "" || !ownedBy(base, check) {
		return s.Update(ctx, check, mutate)
	}
	h := base.DeepCopy()
	if err := mutate(h); err != nil {
		return nil, err
	}
	s.trim(h)
	setPendingLabel(h)
	err := s.Client.Update(ctx, h)
	if err == nil {
		return h, nil
	}
	if !apierrors.IsConflict(err) {
		return nil, fmt.Errorf("writing history of %s/%s: %w", check.Namespace, check.Name, err)
	}
	return s.Update(ctx, check, mutate)
}

func retryOnConflictOrExists(backoff wait.Backoff, fn func() error) error {
	var last error
	err := wait.ExponentialBackoff(backoff, func() (bool, error) {
		last = fn()
		switch {
		case last == nil:
			return true, nil
		case apierrors.IsConflict(last), apierrors.IsAlreadyExists(last):
			return false, nil
		default:
			return false, last
		}
	})
	if wait.Interrupted(err) {
		return last
	}
	return err
}

func newHistory(check *v1.Check) *v1.CheckHistory {
	h := &v1.CheckHistory{ObjectMeta: metav1.ObjectMeta{Namespace: check.Namespace, Name: check.Name}}
	// The Check is the controlling owner, so deleting it deletes its history.
	_ = controllerutil.SetControllerReference(check, h, ownerScheme)
	return h
}

func ownedBy(h *v1.CheckHistory, check *v1.Check) bool {
	for _, ref := range h.OwnerReferences {
		if ref.UID == check.UID {
			return true
		}
	}
	return false
}

func setPendingLabel(h *v1.CheckHistory) {
	pending := false
	for _, f := range h.Flips {
		for _, d := range f.Deliveries {
			if d.State == v1.DeliveryPending {
				pending = true
			}
		}
	}
	if pending {
		if h.Labels == nil {
			h.Labels = map[string]string{}
		}
		h.Labels[PendingLabel] = "true"
	} else {
		delete(h.Labels, PendingLabel)
	}
}

// trim bounds the history: the ping log to its length, bodies to their
// budget (newest kept), flips to their retention.
func (s *Store) trim(h *v1.CheckHistory) {
	lim := DefaultLimits()
	if s.Limits != nil {
		lim = s.Limits(h.Namespace)
	}
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	Trim(h, lim, now)
}

// Trim bounds a history in place; see Limits.
func Trim(h *v1.CheckHistory, lim Limits, now time.Time) {
	if lim.PingLog > 0 && len(h.Pings) > lim.PingLog {
		h.Pings = append([]v1.PingRecord(nil), h.Pings[len(h.Pings)-lim.PingLog:]...)
	}
	total := 0
	for i := len(h.Pings) - 1; i >= 0; i-- {
		p := &h.Pings[i]
		if len(p.Body) == 0 {
			continue
		}
		if total+len(p.Body) > lim.BodyBytes {
			p.Body, p.BodyDropped = nil, true
			continue
		}
		total += len(p.Body)
	}
	h.Flips = trimFlips(h.Flips, lim, now)
}

func trimFlips(flips []v1.FlipRecord, lim Limits, now time.Time) []v1.FlipRecord {
	if len(flips) == 0 {
		return flips
	}
	cutoff := now.Add(-lim.FlipAge)
	keep := make([]bool, len(flips))
	kept := 0
	// Newest first: younger than FlipAge or among the newest FlipCount, up
	// to MaxFlips; flips owing notifications always.
	for i := len(flips) - 1; i >= 0; i-- {
		f := flips[i]
		rank := len(flips) - 1 - i
		wanted := f.Time.After(cutoff) || rank < lim.FlipCount
		if owesNotification(f) || (wanted && (lim.MaxFlips <= 0 || kept < lim.MaxFlips)) {
			keep[i] = true
			kept++
		}
	}
	out := flips[:0:0]
	for i, f := range flips {
		if keep[i] {
			out = append(out, f)
		}
	}
	return out
}

func owesNotification(f v1.FlipRecord) bool {
	for _, d := range f.Deliveries {
		if d.State == v1.DeliveryPending {
			return true
		}
	}
	return false
}
