package httpserver

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
)

// TestMaxConnections: past the cap, a client waits for a connection to
// close instead of being served alongside.
func TestMaxConnections(t *testing.T) {
	var inFlight, most atomic.Int32
	unblock := make(chan struct{})
	r := &Runnable{Addr: "127.0.0.1:0", MaxConnections: 2, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := inFlight.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		<-unblock
		inFlight.Add(-1)
	})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- r.Start(ctx) }()
	g := gomega.NewWithT(t)
	g.Eventually(r.ListenAddr).WithTimeout(30*time.Second).ShouldNot(gomega.BeNil(), "the server did not listen")
	url := "http://" + r.ListenAddr().String()
	// Each request on its own connection.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	done := make(chan error, 3)
	for range 3 {
		go func() {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
			if err != nil {
				done <- err
				return
			}
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
	}
	// Two are served; the third waits for one of them to close.
	g.Eventually(inFlight.Load).WithTimeout(30*time.Second).Should(gomega.BeNumerically(">=", 2), "the first two requests were not served")
	// Deliberately a stretch of time, not an event: the third request must
	// not be served within it.
	time.Sleep(300 * time.Millisecond)
	if got := inFlight.Load(); got != 2 {
		t.Fatalf("%d requests in flight with a cap of 2 connections", got)
	}
	close(unblock)
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := most.Load(); got != 2 {
		t.Errorf("at most %d requests in flight, want 2", got)
	}
	cancel()
	if err := <-errc; err != nil && !strings.Contains(err.Error(), "closed") {
		t.Fatal(err)
	}
}
