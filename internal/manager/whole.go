package manager

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"

	"github.com/vigil-operator/vigil/internal/store"
)

// On a store replicas share, a starting replica takes pings before it has
// read its Checks (and is ready for its Service then) only while no other
// replica is whole: during a rolling update the others serve everything,
// and the new one joins once it is whole; when every replica starts at
// once (a crash, a single replica), pings are acknowledged seconds after
// the start rather than when the last Check is read.

// wholeEvery is how often a whole replica says so; a word older than
// wholeFresh is not taken (its replica died without taking it back).
const (
	wholeEvery = 2 * time.Second
	wholeFresh = 3 * wholeEvery
)

// wholeWord is a replica saying in the store, every wholeEvery once it is
// whole, that it is; it takes its word back when it stops.
type wholeWord struct {
	store *store.Store
	whole <-chan struct{}
	log   logr.Logger
}

// NeedLeaderElection: every replica speaks for itself.
func (w *wholeWord) NeedLeaderElection() bool { return false }

func (w *wholeWord) Start(ctx context.Context) error {
	select {
	case <-w.whole:
	case <-ctx.Done():
		return nil
	}
	tick := time.NewTicker(wholeEvery)
	defer tick.Stop()
	failing := false
	for {
		err := w.store.SayWhole(ctx)
		if err != nil && !failing && ctx.Err() == nil {
			w.log.Error(err, "saying that this replica serves; starting replicas may take pings meanwhile")
		}
		failing = err != nil
		select {
		case <-ctx.Done():
			stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := w.store.TakeBackWhole(stop); err != nil {
				w.log.Error(err, "taking back the word that this replica serves")
			}
			return nil
		case <-tick.C:
		}
	}
}

// errAnotherWhole: another replica serves everything while this one reads
// its Checks.
var errAnotherWhole = errors.New("another replica serves while this one reads its Checks")

// alone is nil when no other replica sharing st says it is whole.
func alone(ctx context.Context, st *store.Store) error {
	another, err := st.WholeReplica(ctx, wholeFresh)
	switch {
	case err != nil:
		return err
	case another:
		return errAnotherWhole
	}
	return nil
}
