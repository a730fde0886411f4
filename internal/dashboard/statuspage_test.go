package dashboard

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// A check that flipped every ten minutes for a week is at most a shape a
// day on a status page; one that was up all along, one shape.
func TestDayStripIsAtMostAShapeADayHoweverOftenTheCheckFlipped(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	created := now.Add(-120 * 24 * time.Hour)
	var flips []store.Flip // newest first, the oldest 7 days ago
	for i := range 7 * 24 * 6 {
		flips = append(flips, store.Flip{N: int64(7*24*6 - i), At: now.Add(-time.Duration(i+1) * 10 * time.Minute), Up: i%2 == 0})
	}
	width := func(strip []calendarDay) (w float64) {
		for _, d := range strip {
			w += d.Width
		}
		return w
	}

	strip := dayStrip(historyAt(flips, monitor.StatusUp, created, now), now)
	// Up until the first flip (83 days in one shape), then a shape for
	// each of the 8 days it flapped, today's included.
	if len(strip) != 9 || width(strip) != calendarDays || strip[0].Class != "up" || strip[0].Width != 83 {
		t.Fatalf("flapping for a week: %+v", strip)
	}
	if !strings.HasPrefix(strip[0].Title, "Mon 7 Sep – Sat 28 Nov: up 100%") {
		t.Errorf("the days before: %q", strip[0].Title)
	}
	for i, d := range strip[1:] {
		if d.Class != "some" || d.Width != 1 || d.X != float64(83+i) {
			t.Errorf("flapping day %d: %+v", i, d)
		}
	}
	if d := strip[len(strip)-2]; !strings.HasPrefix(d.Title, "Sat 5 Dec: up 50") {
		t.Errorf("yesterday, half down: %+v", d)
	}

	strip = dayStrip(historyAt(nil, monitor.StatusUp, created, now), now)
	if len(strip) != 1 || strip[0].Class != "up" || strip[0].Width != calendarDays ||
		strip[0].Title != "Mon 7 Sep – Sun 6 Dec: up 100%" {
		t.Errorf("up all along: %+v", strip)
	}
}

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
