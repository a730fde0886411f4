package checks

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-operator/vigil/internal/turns"
	"github.com/vigil-operator/vigil/internal/words"
)

// The manager's Kubernetes client is one budget for every namespace:
// client-go's rate limiter (50 requests a second by default) serves
// requests in the order they come. So the Door's writes for a namespace
// (the API's and the dashboard's creates, updates, deletes and snoozes, a
// ping's ?create=1, and the CronJob controller's creates and updates: a
// CronJob policy's fan-out) first take one of a few slots, and the
// namespaces waiting for one take turns (package turns): a namespace that
// sends hundreds of writes at once delays another namespace's next write
// by about one write, not by hundreds. A namespace may have
// WriteShare.Waiting writes waiting; one more is refused at once with
// ErrOverShare (the API answers 429 with Retry-After), so what one tenant
// queues is bounded too.

// WriteShare is how the Door's writes share the Kubernetes client.
type WriteShare struct {
	// Slots is how many writes are in flight at once, for all namespaces
	// (DefaultWriteSlots when 0).
	Slots int
	// Waiting is how many writes of one namespace may wait for a slot
	// (DefaultWritesWaiting when 0).
	Waiting int
}

// The defaults: a few writes in flight keep client-go's limiter busy
// without a queue in it; 32 waiting take a namespace a second or so at
// its default rate, more than a Terraform apply (10 at once) needs.
const (
	DefaultWriteSlots    = 8
	DefaultWritesWaiting = 32
)

// ErrOverShare: the namespace already has as many writes waiting as it
// may; the write did not happen, and may be sent again in a moment.
var ErrOverShare = errors.New("this project has too many changes waiting")

// WritesWaiting is how many of the namespace's writes wait for a slot.
func (d *Door) WritesWaiting(namespace string) int { return d.writeShare.Waiting(namespace) }

// share waits for a write slot in the namespace's turn, and returns the
// function that gives it back. Its wait is bounded as a check's turn is.
func (d *Door) share(ctx context.Context, namespace string) (func(), error) {
	ctx, cancel := context.WithTimeout(ctx, turnWait)
	defer cancel()
	leave, err := d.writeShare.Enter(ctx, namespace)
	switch {
	case errors.Is(err, turns.ErrQueueFull):
		d.metrics.WriteRefused(namespace)
		return nil, fmt.Errorf("%w (%d); try again in a moment", ErrOverShare, d.writeShare.MaxWaiting)
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("%w: no write slot came within %s", ErrBusy, words.Duration(turnWait))
	}
	return leave, err
}
