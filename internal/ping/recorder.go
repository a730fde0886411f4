package ping

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checkstate"
	"github.com/vigil-operator/vigil/internal/history"
	"github.com/vigil-operator/vigil/internal/monitor"
)

// ErrOverloaded means the recorder's queue is full: answer 503 with
// Retry-After rather than queue without bound.
var ErrOverloaded = errors.New("too many pings waiting to be stored")

// ErrCheckGone means the check was deleted while its ping waited.
var ErrCheckGone = errors.New("check not found")

// Ping is one ping to record.
type Ping struct {
	Kind       monitor.PingKind // after URL, exit status, methods and keyword rules
	At         time.Time
	RID        string
	ExitStatus *int32
	Scheme     string
	RemoteAddr string
	Method     string
	UA         string
	Body       []byte
}

// Recorded is what storing a ping produced.
type Recorded struct {
	N    int64            // the ping's serial number
	Kind monitor.PingKind // as logged: "ign" when the check ignored it
	// CheckVersion is the Check's resourceVersion whose status counts the
	// ping.
	CheckVersion string
}

// Recorder stores pings durably. A ping is acknowledged only after it is in
// the check's history and the status summary counts it. Pings for the same
// check that arrive while a write for it is in flight wait and go into the
// next write together (group commit), so a hot check costs one history
// write and one status write per batch, not per ping; each caller returns
// when its own ping is stored. Writes for different checks run in
// parallel, at most MaxConcurrentWrites at a time.
//
// The history is the commit point: it serialises serial numbers (with
// optimistic concurrency on its resourceVersion) across every replica, and
// the status summary is recomputed from it, so a crash between the two
// writes leaves a status that the next write (or the controller) catches up
// from history, and never a ping counted twice.
type Recorder struct {
	// Client writes histories and check status.
	Client client.Client
	// Reader reads checks uncached after a conflict.
	Reader client.Reader
	// History stores the ping log.
	History *history.Store
	// MaxConcurrentWrites bounds checks being written at once (default 32).
	MaxConcurrentWrites int
	// MaxQueued bounds pings waiting across all checks (default 10000).
	MaxQueued int
	// HistoryCacheBytes bounds the memory kept for histories this process
	// wrote last, which saves a read per ping (default 64 MiB).
	HistoryCacheBytes int

	initOnce sync.Once
	slots    chan struct{}
	mu       sync.Mutex
	queued   int
	checks   map[types.UID]*checkQueue
	recent   *histCache
}

type pending struct {
	ping Ping
	done chan result
}

type result struct {
	rec Recorded
	err error
}

// checkQueue holds the pings waiting for one check and the check as last
// written, the base of the next status write.
type checkQueue struct {
	waiting []*pending
	writing bool
	check   *v1.Check // as last written (or read)
	// arrived wakes a lingering writer when a ping is queued.
	arrived chan struct{}
}

func (r *Recorder) init() {
	r.initOnce.Do(func() {
		n := r.MaxConcurrentWrites
		if n <= 0 {
			n = 32
		}
		r.slots = make(chan struct{}, n)
		if r.MaxQueued <= 0 {
			r.MaxQueued = 10000
		}
		r.checks = map[types.UID]*checkQueue{}
		if r.HistoryCacheBytes <= 0 {
			r.HistoryCacheBytes = 64 << 20
		}
		r.recent = newHistCache(r.HistoryCacheBytes)
	})
}

// Record stores a ping for check and returns once it is durable.
func (r *Recorder) Record(ctx context.Context, check *v1.Check, p Ping) (Recorded, error) {
	r.init()
	pd := &pending{ping: p, done: make(chan result, 1)}
	r.mu.Lock()
	if r.queued >= r.MaxQueued {
		r.mu.Unlock()
		return Recorded{}, ErrOverloaded
	}
	r.queued++
	q, ok := r.checks[check.UID]
	if !ok {
		q = &checkQueue{check: check.DeepCopy(), arrived: make(chan struct{}, 1)}
		r.checks[check.UID] = q
	}
	q.waiting = append(q.waiting, pd)
	select {
	case q.arrived <- struct{}{}:
	default: // a wake-up is already pending
	}
	startWriter := !q.writing
	if startWriter {
		q.writing = true
	}
	r.mu.Unlock()

	if startWriter {
		// The writer outlives this request's context: other callers' pings
		// ride in its batches.
		go r.write(context.WithoutCancel(ctx), check.UID, q)
	}
	select {
	case res := <-pd.done:
		return res.rec, res.err
	case <-ctx.Done():
		// The ping may still be stored; the client gave up waiting.
		return Recorded{}, ctx.Err()
	}
}

// linger bounds how long a writer waits for a batch to fill. Clients that
// got their answer from one commit ping again at nearly the same moment;
// without the wait the first of them would be committed alone and every
// other commit would carry one ping.
const linger = 5 * time.Millisecond

// write drains a check's queue batch by batch.
func (r *Recorder) write(ctx context.Context, uid types.UID, q *checkQueue) {
	// target is how many pings the next batch waits for (up to linger):
	// those that queued during the last commit plus one from each client
	// it answered, which is every client that keeps pinging this check. A
	// smaller target (the last batch's size) let the batches settle at
	// half the clients each, so twice the commits.
	target := 0
	for {
		r.mu.Lock()
		// A hot check's writer lingers even with nothing queued: its
		// clients are all waiting for their answers and will be back; if
		// it quit, the first of them would start a writer and be committed
		// alone.
		if len(q.waiting) < target && (len(q.waiting) > 0 || target > 1) {
			deadline := time.NewTimer(linger)
			for expired := false; !expired && len(q.waiting) < target; {
				r.mu.Unlock()
				select {
				case <-q.arrived: // look again
				case <-deadline.C:
					expired = true
				}
				r.mu.Lock()
			}
			deadline.Stop()
		}
		batch := q.waiting
		q.waiting = nil
		if len(batch) == 0 {
			q.writing = false
			// Keep the queue only while it is useful; the next ping
			// starts from the cached check, and the history stays in
			// r.recent.
			delete(r.checks, uid)
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()

		r.slots <- struct{}{}
		recs, err := r.commit(ctx, q, batch)
		<-r.slots

		r.mu.Lock()
		r.queued -= len(batch)
		target = len(batch) + len(q.waiting)
		r.mu.Unlock()
		for i, pd := range batch {
			if err != nil {
				pd.done <- result{err: err}
			} else {
				pd.done <- result{rec: recs[i]}
			}
		}
	}
}

// commit stores one batch: history first (the commit point), then the
// status summary.
func (r *Recorder) commit(ctx context.Context, q *checkQueue, batch []*pending) ([]Recorded, error) {
	check := q.check
	// A spec the controller reports as broken still logs pings, as a
	// simple check: Config's answer with its error.
	cfg, _ := checkstate.Config(&check.Spec)
	recs := make([]Recorded, len(batch))
	// The history as this process last wrote it saves a read; if someone
	// wrote since, the write conflicts and UpdateFrom reads.
	hist, err := r.History.UpdateFrom(ctx, check, r.recent.get(check.UID), func(h *v1.CheckHistory) error {
		facts := checkstate.CatchUp(cfg, checkstate.Facts(&check.Status), check.Status.NPings, h)
		for i, pd := range batch {
			p := pd.ping
			var res monitor.PingResult
			facts, res = cfg.RecordPing(facts, monitor.Ping{Kind: p.Kind, At: p.At, RID: p.RID})
			h.LastN++
			h.Pings = append(h.Pings, v1.PingRecord{
				N: h.LastN, Type: v1.PingType(res.Kind), Date: metav1.NewMicroTime(res.At.UTC().Truncate(time.Microsecond)),
				Scheme: p.Scheme, RemoteAddr: p.RemoteAddr, Method: p.Method, UA: p.UA, RID: p.RID,
				ExitStatus: p.ExitStatus, Body: p.Body,
			})
			recs[i] = Recorded{N: h.LastN, Kind: res.Kind}
		}
		return nil
	})
	r.recent.put(check.UID, hist) // nil after an error: read afresh next time
	if err != nil {
		return nil, err
	}

	for attempt := 0; ; attempt++ {
		if check.Status.NPings >= hist.LastN {
			// Another replica wrote the status from a history at least as
			// new as ours, so it already counts this batch; writing ours
			// would lower the count.
			return withVersion(recs, check.ResourceVersion), nil
		}
		updated := check.DeepCopy()
		facts := checkstate.CatchUpStatus(cfg, &updated.Status, hist)
		next, ok := cfg.NextPing(facts)
		checkstate.SetNextPing(&updated.Status, next, ok)
		err := r.Client.Status().Patch(ctx, updated, client.MergeFromWithOptions(check, client.MergeFromWithOptimisticLock{}))
		if err == nil {
			q.check = updated
			return withVersion(recs, updated.ResourceVersion), nil
		}
		if apierrors.IsNotFound(err) {
			return nil, ErrCheckGone
		}
		if !apierrors.IsConflict(err) || attempt >= 8 {
			return nil, fmt.Errorf("storing the status of %s/%s: %w", check.Namespace, check.Name, err)
		}
		fresh := &v1.Check{}
		if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(check), fresh); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, ErrCheckGone
			}
			return nil, err
		}
		if fresh.UID != check.UID {
			return nil, ErrCheckGone
		}
		check = fresh
		q.check = fresh
	}
}

func withVersion(recs []Recorded, version string) []Recorded {
	for i := range recs {
		recs[i].CheckVersion = version
	}
	return recs
}
