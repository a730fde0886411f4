package statuspage

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// A page is rendered once for everyone who asks at once, and the first
// visitor's leaving does not cancel it for the others.
func TestStatusCacheRendersOncePerPage(t *testing.T) {
	var sc statusCache
	sp := &v1.StatusPage{}
	sp.UID, sp.Generation = types.UID("page-1"), 1
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	var renders atomic.Int32
	release, started := make(chan struct{}), make(chan struct{}, 1)
	render := func(ctx context.Context, _ *v1.StatusPage, _ time.Time) (*renderedStatus, error) {
		if renders.Add(1) == 1 {
			started <- struct{}{}
		}
		<-release
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return &renderedStatus{html: []byte("page"), etag: `"x`}, nil
	}

	first, leave := context.WithCancel(context.Background())
	firstDone := make(chan error, 1)
	go func() {
		_, err := sc.of(first, sp, now, render)
		firstDone <- err
	}()
	<-started // the first visitor's rendering began
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 100 {
		wg.Go(func() {
			page, err := sc.of(context.Background(), sp, now, render)
			if err == nil && string(page.html) != "page" {
				err = errors.New("another page")
			}
			errs <- err
		})
	}
	leave()
	if err := <-firstDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("the visitor who left: %v", err)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := renders.Load(); n != 1 {
		t.Errorf("rendered %d times for 101 visitors", n)
	}
	// Within statusFor, from the cache; a new generation, rendered anew.
	if _, err := sc.of(context.Background(), sp, now.Add(statusFor/2), render); err != nil || renders.Load() != 1 {
		t.Errorf("a visitor %v later: %v, %d renders", statusFor/2, err, renders.Load())
	}
	sp.Generation = 2
	if _, err := sc.of(context.Background(), sp, now.Add(statusFor/2), render); err != nil || renders.Load() != 2 {
		t.Errorf("after an edit: %v, %d renders", err, renders.Load())
	}
}
