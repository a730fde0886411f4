package delivery_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/delivery"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/metrics"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// loopbackEgress allows the loopback receivers of these tests, as `make
// dev` allows its listener; the rest of the default policy holds.
var loopbackEgress = egress.New(egress.Options{Allow: egress.Loopback})

func openStore(dsn string) *store.Store {
	s, err := store.Open(context.Background(), dsn, store.Options{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = s.Close() })
	return s
}

// endpoint is a webhook receiver: it answers each request with the next
// status from its script (the last one repeats) and records the bodies.
type endpoint struct {
	mu     sync.Mutex
	script []int
	bodies []string
	times  []time.Time   // when each request arrived
	hold   chan struct{} // when set, requests wait for it to close
	// arrived counts the requests that arrived, held or not.
	arrived atomic.Int64
	server  *httptest.Server
}

func newEndpoint(script ...int) *endpoint {
	e := &endpoint{script: script}
	e.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.arrived.Add(1)
		e.mu.Lock()
		hold := e.hold
		e.mu.Unlock()
		if hold != nil {
			<-hold
		}
		body, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		status := e.script[min(len(e.bodies), len(e.script)-1)]
		e.bodies = append(e.bodies, string(body))
		e.times = append(e.times, time.Now())
		e.mu.Unlock()
		w.WriteHeader(status)
	}))
	DeferCleanup(e.server.Close)
	return e
}

func (e *endpoint) received() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.bodies...)
}

// arrivals returns when each request arrived.
func (e *endpoint) arrivals() []time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]time.Time(nil), e.times...)
}

// blackHole is a loopback listener that accepts connections and never
// answers on them, as an endpoint behind a black-holing firewall does after
// the handshake.
type blackHole struct {
	listener net.Listener
	accepted atomic.Int64
}

func newBlackHole() *blackHole {
	l, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	b := &blackHole{listener: l}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b.accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	DeferCleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return b
}

func (b *blackHole) url() string { return "http://" + b.listener.Addr().String() + "/hook" }

func (e *endpoint) setScript(s ...int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.script = s
	e.bodies = nil
}

// events records Events instead of sending them.
type events struct {
	mu   sync.Mutex
	list []string
}

func (r *events) Eventf(regarding runtime.Object, _ runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, reason+": "+fmt.Sprintf(note, args...))
}

func (r *events) AnnotatedEventf(regarding runtime.Object, related runtime.Object, _ map[string]string, eventtype, reason, action, note string, args ...any) {
	r.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

func (r *events) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.list...)
}

var _ = Describe("Dispatcher", func() {
	var (
		ns    string
		st    *store.Store
		dbDSN string
		rec   *events
	)

	BeforeEach(func() {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "delivery-"}}
		Expect(k8sClient.Create(ctxT(), n)).To(Succeed())
		ns = n.Name
		var err error
		dbDSN, err = testenv.StoreDSN(ctxT(), GinkgoT().TempDir())
		Expect(err).NotTo(HaveOccurred())
		st = openStore(dbDSN)
		rec = &events{}
	})

	webhookTo := func(namespace, name, url string) *v1.Channel {
		req := &v1.WebhookRequest{URL: url, Method: "POST", Body: "$NAME is $STATUS"}
		ch := &v1.Channel{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec:       v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: req, Up: req}},
		}
		Expect(k8sClient.Create(ctxT(), ch)).To(Succeed())
		return ch
	}
	webhook := func(name string, e *endpoint) *v1.Channel { return webhookTo(ns, name, e.server.URL+"/hook") }

	// flipped makes a check whose flips (down for false, up for true) owe a
	// notification to each channel, in the store: what a manager that
	// stopped before delivering leaves behind.
	// checkIn makes a check assigned to the channels.
	checkIn := func(namespace, name string, channels ...string) *v1.Check {
		timeout := int64(60)
		c := &v1.Check{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec:       v1.CheckSpec{Name: name, Timeout: &timeout, Grace: 60, TZ: "UTC", Channels: channels},
		}
		Expect(k8sClient.Create(ctxT(), c)).To(Succeed())
		return c
	}
	// flip records the check's flips (down for false, up for true) in the
	// store, each owing a notification to each of its channels.
	flip := func(c *v1.Check, ups ...bool) {
		tg := store.Target{UID: c.UID, Namespace: c.Namespace, Name: c.Name, Config: monitor.Config{Timeout: time.Minute, Grace: time.Minute},
			Channels: c.Spec.Channels}
		at := time.Now().Add(-time.Minute)
		for i, up := range ups {
			kind := monitor.PingFail
			if up {
				kind = monitor.PingSuccess
			}
			rec, err := st.RecordPing(ctxT(), tg, store.Ping{Kind: kind, At: at.Add(time.Duration(i) * time.Second)})
			Expect(err).NotTo(HaveOccurred())
			Expect(rec.Flip).NotTo(BeNil())
		}
	}
	// cached waits until the manager's cache holds objs, for specs that
	// time deliveries: a cache miss costs a read from the API server.
	cached := func(objs ...client.Object) {
		Eventually(func(g Gomega) {
			for _, o := range objs {
				g.Expect(managerClient.Get(ctxT(), client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object))).To(Succeed())
			}
		}).Should(Succeed())
	}
	// flipped makes a check whose flips owe a notification to each
	// channel, in the store: what a manager that stopped before delivering
	// leaves behind.
	flipped := func(name string, channels []string, ups ...bool) *v1.Check {
		c := checkIn(ns, name, channels...)
		flip(c, ups...)
		return c
	}

	// run starts a dispatcher, as a manager does, and returns its stop.
	// Stopping it closes the store too, as a manager's exit does; the next
	// run opens it again.
	start := func(opts delivery.Options, m ...*metrics.Metrics) (d *delivery.Dispatcher, stop func()) {
		d = &delivery.Dispatcher{Client: managerClient, Reader: managerReader, Secrets: managerReader, Store: st, Clock: clock.RealClock{}, Recorder: rec, Options: opts,
			Egress: loopbackEgress}
		if len(m) > 0 {
			d.Metrics = m[0]
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Start(ctx) }()
		return d, func() {
			cancel()
			Eventually(done).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
			Expect(st.Close()).To(Succeed())
			st = openStore(dbDSN)
		}
	}
	run := func(opts delivery.Options) (stop func()) {
		_, stop = start(opts)
		return stop
	}

	// deliveries are the deliveries of every flip of the check, oldest
	// flip first.
	deliveries := func(c *v1.Check) func(Gomega) []store.Delivery {
		return func(g Gomega) []store.Delivery {
			var out []store.Delivery
			for n := int64(1); ; n++ {
				byChannel, err := st.Deliveries(ctxT(), c.UID, n)
				g.Expect(err).NotTo(HaveOccurred())
				if len(byChannel) == 0 {
					return out
				}
				for _, d := range byChannel {
					out = append(out, d)
				}
			}
		}
	}

	fast := delivery.Options{InitialBackoff: 100 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}

	It("counts each attempt by the Channel's kind and outcome, and how long the oldest pending notification has waited", func() {
		ok, flaky, refusing := newEndpoint(200), newEndpoint(500, 200), newEndpoint(404)
		webhook("ok", ok)
		webhook("flaky", flaky)
		webhook("refusing", refusing)
		c := flipped("nightly", []string{"ok", "flaky", "refusing"}, false)

		reg := prometheus.NewRegistry()
		m := metrics.New(reg)
		_, stop := start(fast, m)
		defer stop()
		Eventually(deliveries(c)).Should(ConsistOf(
			HaveField("State", store.DeliveryDelivered), HaveField("State", store.DeliveryDelivered), HaveField("State", store.DeliveryFailed)))
		attempts := func(outcome string) float64 {
			families, err := reg.Gather()
			Expect(err).NotTo(HaveOccurred())
			for _, f := range families {
				if f.GetName() != "vigil_delivery_attempts_total" {
					continue
				}
				for _, c := range f.GetMetric() {
					labels := map[string]string{}
					for _, l := range c.GetLabel() {
						labels[l.GetName()] = l.GetValue()
					}
					if labels["kind"] == "webhook" && labels["outcome"] == outcome {
						return c.GetCounter().GetValue()
					}
				}
			}
			return 0
		}
		Expect([]float64{attempts(metrics.Delivered), attempts(metrics.DeliveryError), attempts(metrics.DeliveryRejected)}).
			To(Equal([]float64{2, 1, 1}), "the ok and the flaky one's second, the flaky one's first, the refused one")
		Expect(testutil.CollectAndCount(reg, "vigil_delivery_duration_seconds")).To(Equal(1), "one series, the webhook kind's")

		// Nothing is pending now; a delivery whose attempt has not ended
		// is, since it was queued.
		oldest, err := st.OldestPending(ctxT())
		Expect(err).NotTo(HaveOccurred())
		Expect(oldest.IsZero()).To(BeTrue())
		held := newEndpoint(200)
		held.hold = make(chan struct{}) // before any request
		DeferCleanup(func() { close(held.hold) })
		webhook("held", held)
		queuedBy := time.Now()
		later := flipped("hourly", []string{"held"}, false)
		Eventually(deliveries(later)).Should(ConsistOf(And(HaveField("State", store.DeliveryPending), HaveField("Attempts", BeNumerically(">=", 1)))))
		oldest, err = st.OldestPending(ctxT())
		Expect(err).NotTo(HaveOccurred())
		Expect(oldest).To(BeTemporally(">=", queuedBy.Truncate(time.Microsecond)))
		Expect(oldest).To(BeTemporally("<=", time.Now()))
	})

	It("delivers, on start, a notification left pending before a restart, exactly once", func() {
		e := newEndpoint(200)
		webhook("hook", e)
		c := flipped("backup", []string{"hook"}, false)

		stop := run(fast)
		defer stop()
		Eventually(deliveries(c)).Should(ConsistOf(And(
			HaveField("State", store.DeliveryDelivered), HaveField("Attempts", BeEquivalentTo(1)))))
		Expect(e.received()).To(Equal([]string{"backup is down"}))
		Consistently(e.received).WithTimeout(time.Second).Should(HaveLen(1))

		next, err := st.NextDelivery(ctxT())
		Expect(err).NotTo(HaveOccurred())
		Expect(next.IsZero()).To(BeTrue(), "nothing is pending any more")

		Eventually(func(g Gomega) {
			ch := &v1.Channel{}
			g.Expect(k8sClient.Get(ctxT(), client.ObjectKey{Namespace: ns, Name: "hook"}, ch)).To(Succeed())
			g.Expect(ch.Status.LastDelivery).NotTo(BeNil())
			g.Expect(ch.Status.LastDelivery.Check).To(Equal("backup"))
			g.Expect(ch.Status.LastDelivery.Error).To(BeEmpty())
		}).Should(Succeed())
	})

	It("delivers a flip recorded before the manager's cache saw its check and channel", func() {
		e := newEndpoint(200)
		webhook("late-hook", e)
		c := checkIn(ns, "fresh", "late-hook")
		flip(c, false)

		d := &delivery.Dispatcher{Client: behindClient, Reader: managerReader, Secrets: managerReader, Store: st,
			Clock: clock.RealClock{}, Recorder: rec, Options: fast, Egress: loopbackEgress}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Start(ctx) }()
		defer func() {
			cancel()
			Eventually(done).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
		}()
		Eventually(deliveries(c)).Should(ConsistOf(HaveField("State", store.DeliveryDelivered)))
		Expect(e.received()).To(Equal([]string{"fresh is down"}))
	})

	It("retries after server errors, across a restart, until delivered", func() {
		e := newEndpoint(500)
		webhook("hook", e)
		c := flipped("backup", []string{"hook"}, false)

		stop := run(fast)
		Eventually(deliveries(c)).Should(ConsistOf(And(
			HaveField("State", store.DeliveryPending),
			HaveField("Attempts", BeNumerically(">=", 2)),
			HaveField("LastError", ContainSubstring("500")))))
		stop()

		// The endpoint recovers while no dispatcher runs.
		e.setScript(200)
		stop = run(fast)
		defer stop()
		Eventually(deliveries(c)).Should(ConsistOf(HaveField("State", store.DeliveryDelivered)))
		Consistently(e.received).WithTimeout(time.Second).Should(Equal([]string{"backup is down"}))
	})

	It("gives up after the retry limit and says so on the Channel", func() {
		e := newEndpoint(503)
		webhook("hook", e)
		c := flipped("backup", []string{"hook"}, false)

		opts := fast
		opts.MaxAttempts = 3
		stop := run(opts)
		defer stop()
		Eventually(deliveries(c)).Should(ConsistOf(And(
			HaveField("State", store.DeliveryFailed), HaveField("Attempts", BeEquivalentTo(3)))))
		Consistently(e.received).WithTimeout(time.Second).Should(HaveLen(3))

		Eventually(func(g Gomega) {
			ch := &v1.Channel{}
			g.Expect(k8sClient.Get(ctxT(), client.ObjectKey{Namespace: ns, Name: "hook"}, ch)).To(Succeed())
			g.Expect(ch.Status.LastError).To(ContainSubstring("503"))
			g.Expect(ch.Status.LastErrorTime).NotTo(BeNil())
		}).Should(Succeed())
		Expect(rec.all()).To(ContainElement(HavePrefix(v1.ReasonDeliveryFailed + ": Notifying about check backup failed")))
	})

	It("counts an attempt before sending it, so a notification whose sending kills the manager is given up after the retry limit", func() {
		e := newEndpoint(200)
		webhook("hook", e)
		c := flipped("backup", []string{"hook"}, false)
		opts := fast
		opts.MaxAttempts = 3

		// Each round, the manager dies while the request is out: what
		// the store shows then is all a restarted manager knows. Closing
		// the store before the answer comes is that death, seen from the
		// store: the outcome is never recorded.
		for round := 1; round <= opts.MaxAttempts; round++ {
			hold := make(chan struct{})
			e.mu.Lock()
			e.hold = hold
			e.mu.Unlock()
			d := &delivery.Dispatcher{Client: managerClient, Reader: managerReader, Secrets: managerReader, Store: st,
				Clock: clock.RealClock{}, Recorder: rec, Options: opts, Egress: loopbackEgress}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- d.Start(ctx) }()
			release := sync.OnceFunc(func() { close(hold) })
			DeferCleanup(func() { release(); cancel() }) // on a failure too: the server's Close waits for its requests

			Eventually(deliveries(c)).Should(ConsistOf(And(
				HaveField("State", store.DeliveryPending),
				HaveField("Attempts", BeEquivalentTo(round)),
				HaveField("NextAttempt", BeTemporally(">", time.Now())),
				HaveField("LastError", ContainSubstring("has not finished")))), "round %d: the attempt is counted before it is sent", round)
			Eventually(e.arrived.Load).Should(BeEquivalentTo(round), "round %d: the request is out", round)
			Expect(st.Close()).To(Succeed())
			release()
			Eventually(e.received).Should(HaveLen(round))
			cancel()
			Eventually(done).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
			st = openStore(dbDSN)
		}

		e.mu.Lock()
		e.hold = nil
		e.mu.Unlock()
		stop := run(opts)
		defer stop()
		Eventually(deliveries(c)).Should(ConsistOf(And(
			HaveField("State", store.DeliveryFailed),
			HaveField("Attempts", BeEquivalentTo(opts.MaxAttempts)),
			HaveField("LastError", ContainSubstring("the last attempt did not finish")))))
		Consistently(e.received).WithTimeout(time.Second).Should(HaveLen(opts.MaxAttempts), "not sent once more")
	})

	It("tells a channel about a down before the up that followed it", func() {
		e := newEndpoint(500, 200)
		webhook("hook", e)
		c := flipped("backup", []string{"hook"}, false, true)

		stop := run(fast)
		defer stop()
		Eventually(deliveries(c)).Should(HaveEach(HaveField("State", store.DeliveryDelivered)))
		Expect(e.received()).To(Equal([]string{"backup is down", "backup is down", "backup is up"}))
	})

	It("keeps delivering to other channels while one endpoint hangs with a backlog", func() {
		slow := newEndpoint(200)
		slow.hold = make(chan struct{})
		defer close(slow.hold)
		quick := newEndpoint(200)
		webhook("slow", slow)
		webhook("quick", quick)
		// More deliveries to the hung channel than the dispatcher reads at
		// once, all older than the one to the other channel.
		var stuck *v1.Check
		for i := range 40 {
			stuck = flipped(fmt.Sprint("stuck-", i), []string{"slow"}, false)
		}
		fine := flipped("fine", []string{"quick"}, false)

		stop := run(fast)
		defer stop()
		Eventually(deliveries(fine)).Should(ConsistOf(HaveField("State", store.DeliveryDelivered)))
		Expect(deliveries(stuck)(Default)).To(ConsistOf(HaveField("State", store.DeliveryPending)))
		Expect(strings.Join(quick.received(), "")).To(Equal("fine is down"))
	})

	// cached waits until the manager's cache holds the objects: the
	// dispatcher reads Checks and Channels from it, and takes one it does
	// not find for deleted.

	It("delivers another namespace's alert about as fast with one namespace's Channels all hanging as when idle", func() {
		otherNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "delivery-b-"}}
		Expect(k8sClient.Create(ctxT(), otherNS)).To(Succeed())
		quick := newEndpoint(200)
		objs := []client.Object{webhookTo(otherNS.Name, "pager", quick.server.URL+"/hook")}
		var alerts []*v1.Check
		for i := range 6 {
			alerts = append(alerts, checkIn(otherNS.Name, fmt.Sprint("alert-", i), "pager"))
			objs = append(objs, alerts[i])
		}
		// Namespace A: four Channels at an endpoint that never answers, and
		// twenty checks each owing all four a notification, older than
		// any of B's.
		hole := newBlackHole()
		hooks := []string{"hook-1", "hook-2", "hook-3", "hook-4"}
		for _, name := range hooks {
			objs = append(objs, webhookTo(ns, name, hole.url()))
		}
		var flood []*v1.Check
		for i := range 20 {
			flood = append(flood, checkIn(ns, fmt.Sprint("flood-", i), hooks...))
			objs = append(objs, flood[i])
		}
		cached(objs...)

		opts := fast
		opts.Workers = 8                  // the pool of the measurement
		opts.RequestTimeout = time.Minute // nothing times out here: the breaker stays out of it
		d, stop := start(opts)
		defer stop()
		// latency is how long B's alert i takes from its flip's commit to
		// the endpoint.
		latency := func(i int) time.Duration {
			at := time.Now()
			flip(alerts[i], false)
			d.Wake()
			Eventually(quick.arrivals).Should(HaveLen(i + 1))
			return quick.arrivals()[i].Sub(at)
		}
		idle := max(latency(0), latency(1), latency(2))

		for _, c := range flood {
			flip(c, false)
		}
		d.Wake()
		Eventually(hole.accepted.Load).Should(BeNumerically(">=", 2), "namespace A's requests hang")
		hanging := max(latency(3), latency(4), latency(5))
		GinkgoWriter.Printf("B's alert: %v idle, %v with A's Channels hanging\n", idle, hanging)
		Expect(hanging).To(BeNumerically("<=", 5*idle+2*time.Second),
			"B's alert took %v with A hanging, %v with the dispatcher idle", hanging, idle)
		Expect(hole.accepted.Load()).To(BeEquivalentTo(2), "A holds its share of the workers (a quarter of 8), no more")
		for _, c := range flood {
			Expect(deliveries(c)(Default)).To(HaveEach(HaveField("State", store.DeliveryPending)))
		}
	})

	It("stops sending to an endpoint that keeps timing out, and keeps the namespace's other Channels going", func() {
		hole := newBlackHole()
		quick := newEndpoint(200)
		objs := []client.Object{webhookTo(ns, "hole", hole.url()), webhook("quick", quick)}
		var stuck []*v1.Check
		for i := range 10 {
			stuck = append(stuck, checkIn(ns, fmt.Sprint("stuck-", i), "hole"))
			objs = append(objs, stuck[i])
		}
		fine := checkIn(ns, "fine", "quick")
		cached(append(objs, fine)...)
		for _, c := range stuck {
			flip(c, false)
		}

		opts := fast
		opts.Workers = 8                             // two at once for the namespace
		opts.MaxAttempts = 1000                      // refusals count as attempts: none gives up here
		opts.RequestTimeout = 200 * time.Millisecond // every request to the hole times out
		opts.BreakerTimeouts, opts.BreakerCoolDown = 3, time.Hour
		d, stop := start(opts)
		defer stop()
		// Three timeouts in a row open it; one more request may have been
		// under way then, and timed out too.
		refused := MatchRegexp("not sent: the last [34] requests to this endpoint timed out")
		Eventually(func(g Gomega) {
			for _, c := range stuck {
				g.Expect(deliveries(c)(g)).To(ConsistOf(And(HaveField("State", store.DeliveryPending), HaveField("LastError", refused))))
			}
		}).Should(Succeed())
		Consistently(hole.accepted.Load).WithTimeout(time.Second).Should(BeNumerically("<=", 4))

		flip(fine, false)
		d.Wake()
		Eventually(deliveries(fine)).Should(ConsistOf(HaveField("State", store.DeliveryDelivered)))
		Expect(quick.received()).To(Equal([]string{"fine is down"}))
		Eventually(func(g Gomega) {
			ch := &v1.Channel{}
			g.Expect(k8sClient.Get(ctxT(), client.ObjectKey{Namespace: ns, Name: "hole"}, ch)).To(Succeed())
			g.Expect(ch.Status.LastError).To(refused)
		}).Should(Succeed())
	})

	It("writes a Channel's status once per interval, not once per notification", func() {
		e := newEndpoint(200)
		webhook("busy", e)
		var last *v1.Check
		for i := range 30 {
			last = flipped(fmt.Sprint("wave-", i), []string{"busy"}, false)
		}
		var writes atomic.Int64
		w, err := k8sClient.Watch(ctxT(), &v1.ChannelList{}, client.InNamespace(ns))
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		go func() {
			for ev := range w.ResultChan() {
				if ev.Type == watch.Modified {
					writes.Add(1)
				}
			}
		}()

		opts := fast
		opts.StatusInterval = time.Hour // only the write when it stops
		stop := run(opts)
		Eventually(e.received).Should(HaveLen(30))
		Eventually(deliveries(last)).Should(ConsistOf(HaveField("State", store.DeliveryDelivered)))
		Consistently(writes.Load).WithTimeout(time.Second).Should(BeZero(), "no status write per notification")
		stop()
		Eventually(func(g Gomega) {
			ch := &v1.Channel{}
			g.Expect(k8sClient.Get(ctxT(), client.ObjectKey{Namespace: ns, Name: "busy"}, ch)).To(Succeed())
			g.Expect(ch.Status.LastDelivery).NotTo(BeNil())
			g.Expect(ch.Status.LastDelivery.Check).To(HavePrefix("wave-"))
		}).Should(Succeed())
		Expect(writes.Load()).To(BeEquivalentTo(1), "one write for the 30 notifications")
	})
})
