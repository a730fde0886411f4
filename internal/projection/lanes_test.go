package projection

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// TestLanes: against a real API server, a wave of downs is written within
// the changes' budget, not the other lane's: with one write every 100 s
// for everything else, 40 checks going down all show down within seconds
// (in one lane of 0.01 a second they would take over an hour). Going into
// the grace period and a check's first ping wait in the other lane: after
// the wave, a check in grace still shows up and a check pinged for the
// first time still shows new, behind a ping statistic that took the
// lane's one write.
func TestLanes(t *testing.T) {
	cl, st := backends(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "lanes-"}}
	if err := cl.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}

	// Every check is up, as its status shows, before the projector runs.
	const wave = 40
	timeout := int64(60)
	now := time.Now()
	var checksUp []*v1.Check
	for i := range wave + 3 {
		c := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: fmt.Sprint("c", i)},
			Spec: v1.CheckSpec{Timeout: &timeout, Grace: 3600}}
		if err := cl.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		c.Status.State = v1.CheckStateUp
		if i == wave+2 {
			c.Status.State = v1.CheckStateNew
		}
		if err := cl.Status().Update(ctx, c); err != nil {
			t.Fatal(err)
		}
		checksUp = append(checksUp, c)
	}
	target := func(c *v1.Check) store.Target {
		return store.Target{UID: c.UID, Namespace: c.Namespace, Name: c.Name,
			Config: monitor.Config{Timeout: time.Minute, Grace: time.Hour}}
	}
	// The first of the last two has a ping statistic to show (it is up,
	// as shown, with a ping more), and takes the other lane's one write
	// first; the last is in its grace period (pinged two minutes ago). The
	// others fail now.
	pinged, graceful, fresh := checksUp[wave], checksUp[wave+1], checksUp[wave+2]
	if _, err := st.RecordPing(ctx, target(pinged), store.Ping{Kind: monitor.PingSuccess, At: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecordPing(ctx, target(graceful), store.Ping{Kind: monitor.PingSuccess, At: now.Add(-2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Observe(ctx, []store.Target{target(graceful)}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecordPing(ctx, target(fresh), store.Ping{Kind: monitor.PingSuccess, At: now}); err != nil {
		t.Fatal(err)
	}
	for _, c := range checksUp[:wave] {
		if _, err := st.RecordPing(ctx, target(c), store.Ping{Kind: monitor.PingFail, At: now}); err != nil {
			t.Fatal(err)
		}
	}
	if got, _, err := st.Check(ctx, graceful.UID); err != nil || got.Facts.State != monitor.StatusGrace {
		t.Fatalf("the graceful check is %q in the store (%v), want grace", got.Facts.State, err)
	}

	p := &Projector{Client: cl, Store: st, Checks: &checks.Door{}, Clock: clock.RealClock{},
		Budget: 0.01, ChangeBudget: 1000, Interval: 50 * time.Millisecond}
	go func() { _ = p.Start(ctx) }()

	state := func(c *v1.Check) v1.CheckState {
		got := &v1.Check{}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(c), got); err != nil {
			t.Fatal(err)
		}
		return got.Status.State
	}
	began := time.Now()
	for _, c := range checksUp[:wave] {
		for state(c) != v1.CheckStateDown {
			if time.Since(began) > 30*time.Second {
				t.Fatalf("%s still shows %q %v after the wave began", c.Name, state(c), time.Since(began).Round(time.Second))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("the wave of %d downs showed after %v", wave, time.Since(began).Round(time.Millisecond))
	if s := state(graceful); s != v1.CheckStateUp {
		t.Errorf("the check in its grace period shows %q while the wave is written, want up (it waits in the other lane)", s)
	}
	if s := state(fresh); s != v1.CheckStateNew {
		t.Errorf("the check pinged for the first time shows %q while the wave is written, want new (it waits in the other lane)", s)
	}
}
