// Command lateness measures how late checks are recorded down: N checks
// whose deadlines are spread over the next minute (by default), each
// assigned a webhook channel, against a real kube-apiserver and etcd
// (envtest), with the manager in this process. For each check, lateness is
// the time between its deadline (last ping + timeout + grace) and the moment
// its down flip, with the delivery it owes, is in the ping store (read every
// 20 ms). It also reports how long the Check statuses take to show every
// check down within the status budget, and the manager's heap with N
// checks.
//
// Run: go run ./hack/bench/lateness -checks 10000 (make bench-lateness runs 1,000 and 10,000).
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/hack/bench/internal/benchutil"
	"github.com/vigil-operator/vigil/internal/delivery"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/testenv"
)

const (
	timeout = 60
	grace   = 60
)

func main() {
	n := flag.Int("checks", 1000, "checks")
	spread := flag.Duration("spread", time.Minute, "deadlines are spread over this long, starting after setup")
	budget := flag.Float64("status-budget", 0, "status writes per second of the second lane: statistics, first pings, grace (0: the manager's default)")
	changes := flag.Float64("status-changes", 0, "status writes per second of changes of state (0: the manager's default)")
	statusWait := flag.Duration("status-wait", 15*time.Minute, "how long to wait for every status to show down")
	storm := flag.Int("storm-threshold", -1, "the manager's --storm-threshold (-1: every notification alone, as before storm control)")
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	if err := run(*n, *spread, *budget, *changes, *statusWait, *storm); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func heapMiB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}

func run(n int, spread time.Duration, budget, changes float64, statusWait time.Duration, storm int) error {
	env, err := testenv.Start(context.Background())
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	// The benchmark's own client sets up quickly; the manager's is as
	// shipped (its default rate limits).
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}); err != nil {
		return err
	}
	// Every check notifies this webhook: its down flip writes a delivery
	// to the outbox in the same transaction.
	var delivered atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { delivered.Add(1) }))
	defer hook.Close()
	if err := c.Create(ctx, &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "ops"},
		Spec: v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{URL: hook.URL}}}}); err != nil {
		return err
	}

	addr, err := testenv.FreeAddr(ctx)
	if err != nil {
		return err
	}
	dsn := benchutil.TempStore()
	shipped := rest.CopyConfig(env.Config)
	shipped.QPS, shipped.Burst = 0, 0 // the manager's own defaults
	mgr, err := manager.New(ctx, shipped, manager.Options{Store: dsn, HTTPAddr: addr, BaseURL: "http://" + addr, MetricsAddr: "0", ProbeAddr: "0",
		StatusBudget: budget, StatusChangeBudget: changes, EgressAllow: egress.Loopback, // the webhook below listens on loopback
		Delivery: delivery.Options{StormThreshold: storm}})
	if err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("cache did not sync")
	}
	heapBefore := heapMiB()

	fmt.Printf("creating %d checks...\n", n)
	objs := make([]*v1.Check, n)
	err = benchutil.Parallel(n, 64, func(i int) error {
		to := int64(timeout)
		objs[i] = &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("c%05d", i)},
			Spec: v1.CheckSpec{Timeout: &to, Grace: grace, TZ: "UTC", Channels: []string{"ops"}}}
		return c.Create(ctx, objs[i])
	})
	if err != nil {
		return err
	}
	if err := benchutil.WaitAll(ctx, mgr.GetCache(), "bench", 5*time.Minute, func(*v1.Check) bool { return true }); err != nil {
		return err
	}
	// Setup: each check's last ping, stored as the ping path stores it, is
	// such that its deadline falls in [start, start+spread).
	start := time.Now().Add(20*time.Second + time.Duration(n/500)*time.Second)
	deadlines := map[types.UID]time.Time{}
	for i, o := range objs {
		d := start.Add(spread * time.Duration(i) / time.Duration(n)).Truncate(time.Microsecond)
		deadlines[o.UID] = d
		if _, err := mgr.Checks.RecordPing(ctx, o,
			store.Ping{Kind: monitor.PingSuccess, At: d.Add(-(timeout + grace) * time.Second), Method: "GET", Scheme: "http"}); err != nil {
			return err
		}
	}
	if time.Now().After(start) {
		return fmt.Errorf("setup took too long: the first deadline has passed")
	}
	fmt.Printf("first deadline in %v; reading the store's flips every 20 ms...\n", time.Until(start).Round(time.Second))

	db, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(dsn, "sqlite:")+"?_pragma=query_only(1)")
	if err != nil {
		return err
	}
	defer db.Close()
	seen := map[types.UID]time.Time{}
	end := start.Add(spread + time.Minute)
	for len(seen) < n && time.Now().Before(end) {
		rows, err := db.QueryContext(ctx, `SELECT f.check_uid FROM flips f JOIN deliveries d ON d.check_uid = f.check_uid AND d.flip_n = f.n WHERE f.up = FALSE`)
		if err != nil {
			return err
		}
		now := time.Now()
		for rows.Next() {
			var uid types.UID
			if err := rows.Scan(&uid); err != nil {
				return err
			}
			if _, ok := seen[uid]; !ok {
				seen[uid] = now
			}
		}
		_ = rows.Close()
		time.Sleep(20 * time.Millisecond)
	}
	lastDeadline := start.Add(spread)
	heapAfter := heapMiB()

	var late []time.Duration
	early := 0
	for uid, at := range seen {
		d := at.Sub(deadlines[uid])
		if d < 0 {
			early++
		}
		late = append(late, d)
	}
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })

	// Then the statuses follow, within the budget.
	fmt.Println("waiting for every Check status to show down...")
	statusStart := time.Now()
	var statusDone time.Duration
	if err := benchutil.WaitAll(ctx, mgr.GetCache(), "bench", statusWait, func(o *v1.Check) bool { return o.Status.State == v1.CheckStateDown }); err == nil {
		statusDone = time.Since(lastDeadline)
	}

	fmt.Printf("\n%d checks, deadlines spread over %v, GOMAXPROCS=%d\n", n, spread, runtime.GOMAXPROCS(0))
	fmt.Printf("recorded down in the store (flip and outbox): %d of %d (%d before their deadline)\n", len(late), n, early)
	if len(late) > 0 {
		fmt.Printf("lateness p50 %v  p99 %v  max %v  (the 20 ms read interval included)\n",
			benchutil.Percentile(late, 50), benchutil.Percentile(late, 99), late[len(late)-1].Round(time.Millisecond))
	}
	if statusDone > 0 {
		fmt.Printf("every Check status showed down %v after the last deadline (budgets: changes %s, the rest %s)\n",
			statusDone.Round(time.Second), budgetText(changes), budgetText(budget))
	} else {
		fmt.Printf("the Check statuses did not all show down within %v of waiting (started %v after the last deadline)\n",
			statusWait, statusStart.Sub(lastDeadline).Round(time.Second))
	}
	var told int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM deliveries WHERE state = 'delivered'`).Scan(&told); err != nil {
		return err
	}
	fmt.Printf("notifications delivered to the webhook by then: %d requests, telling %d checks (storm threshold %d)\n",
		delivered.Load(), told, storm)
	fmt.Printf("manager heap: %.0f MiB before the checks, %.0f MiB with them (%.1f KiB per check)\n",
		heapBefore, heapAfter, (heapAfter-heapBefore)*1024/float64(n))
	return nil
}

func budgetText(b float64) string {
	if b <= 0 {
		return "the default"
	}
	return fmt.Sprintf("%.0f/s", b)
}
