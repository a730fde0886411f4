package heartbeat

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/onsi/gomega"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/vigil-operator/vigil/internal/runner"
)

type received struct{ path, body string }

func TestHeartbeat(t *testing.T) {
	got := make(chan received, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- received{r.URL.Path, string(b)}
		_, _ = io.WriteString(w, "OK")
	}))
	defer srv.Close()

	clk := testingclock.NewFakeClock(time.Now())
	var unhealthy atomic.Pointer[error]
	h := &Heartbeat{
		URL: srv.URL + "/ping/4cb3b5d4-6b2a-4b3e-9d2e-6f1c2a3b4c5d", Interval: time.Minute,
		Healthy: func() error {
			if err := unhealthy.Load(); err != nil {
				return *err
			}
			return nil
		},
		Client: &runner.Client{Retry: runner.RetryPolicy{Attempts: 1}},
		Clock:  clk, Log: logr.Discard(),
	}
	if !h.NeedLeaderElection() {
		t.Fatal("only the leader may send heartbeats")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.Start(ctx) }()

	next := func() received {
		t.Helper()
		select {
		case r := <-got:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no heartbeat arrived")
		}
		return received{}
	}
	if r := next(); r.path != "/ping/4cb3b5d4-6b2a-4b3e-9d2e-6f1c2a3b4c5d" || r.body != "vigil manager: leader, healthy" {
		t.Errorf("first heartbeat = %+v, want a success ping at start", r)
	}
	// Nothing more until the interval has passed.
	select {
	case r := <-got:
		t.Fatalf("heartbeat %+v before the interval passed", r)
	default:
	}
	// The step below must come after the heartbeat waits on the clock.
	gomega.NewWithT(t).Eventually(clk.HasWaiters).WithTimeout(10*time.Second).WithPolling(time.Millisecond).
		Should(gomega.BeTrue(), "the heartbeat never waited for its interval")
	err := errors.New("informer cache not synced")
	unhealthy.Store(&err)
	clk.Step(time.Minute)
	if r := next(); r.path != "/ping/4cb3b5d4-6b2a-4b3e-9d2e-6f1c2a3b4c5d/fail" || r.body != "vigil manager: leader, not healthy: informer cache not synced" {
		t.Errorf("heartbeat while unhealthy = %+v, want a fail ping saying why", r)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start returned %v after its context ended", err)
	}
}
