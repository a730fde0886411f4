// Command lateness measures how late the check controller marks checks down:
// N checks whose deadlines are spread over the next minute, against a real
// kube-apiserver and etcd (envtest), with the manager in this process. For
// each check, lateness is the time between its deadline (last ping +
// timeout + grace) and the moment the manager's cache shows it down. It
// also reports the manager's heap with N checks.
//
// Run: go run ./hack/bench/lateness -checks 1000 (make bench-lateness runs 1,000 and 10,000).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/hack/bench/internal/benchutil"
	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/testenv"
)

const (
	timeout = 60
	grace   = 60
)

func main() {
	n := flag.Int("checks", 1000, "checks")
	spread := flag.Duration("spread", time.Minute, "deadlines are spread over this long, starting 30 s after setup")
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	if err := run(*n, *spread); err != nil {
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

func run(n int, spread time.Duration) error {
	env, err := testenv.New()
	if err != nil {
		return err
	}
	cfg, err := env.Start()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
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

	addr, err := testenv.FreeAddr(ctx)
	if err != nil {
		return err
	}
	mgr, err := manager.New(ctx, cfg, manager.Options{Store: benchutil.TempStore(), HTTPAddr: addr, BaseURL: "http://" + addr, MetricsAddr: "0", ProbeAddr: "0"})
	if err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("cache did not sync")
	}
	heapBefore := heapMiB()

	// Setup: each check was last pinged so that its deadline falls in
	// [start, start+spread).
	start := time.Now().Add(30*time.Second + time.Duration(n/150)*time.Second)
	deadlines := make([]time.Time, n)
	fmt.Printf("creating %d checks...\n", n)
	err = benchutil.Parallel(n, 64, func(i int) error {
		to := int64(timeout)
		ch := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("c%05d", i)},
			Spec: v1.CheckSpec{Timeout: &to, Grace: grace, TZ: "UTC"}}
		if err := c.Create(ctx, ch); err != nil {
			return err
		}
		deadlines[i] = start.Add(spread * time.Duration(i) / time.Duration(n)).Truncate(time.Microsecond)
		last := metav1.NewMicroTime(deadlines[i].Add(-(timeout + grace) * time.Second))
		patch := client.MergeFrom(ch.DeepCopy())
		ch.Status.LastPing, ch.Status.NPings, ch.Status.LastPingType = &last, 1, v1.PingSuccess
		return c.Status().Patch(ctx, ch, patch)
	})
	if err != nil {
		return err
	}
	if time.Now().After(start) {
		return fmt.Errorf("setup took too long: the first deadline has passed")
	}
	fmt.Printf("first deadline in %v; watching the manager's cache...\n", time.Until(start).Round(time.Second))

	seen := make([]time.Time, n)
	remaining := n
	end := start.Add(spread + time.Minute)
	for remaining > 0 && time.Now().Before(end) {
		var list v1.CheckList
		if err := mgr.GetCache().List(ctx, &list, client.InNamespace("bench"), client.UnsafeDisableDeepCopy); err != nil {
			return err
		}
		now := time.Now()
		for i := range list.Items {
			var idx int
			if _, err := fmt.Sscanf(list.Items[i].Name, "c%05d", &idx); err != nil || idx >= n || !seen[idx].IsZero() {
				continue
			}
			if list.Items[i].Status.State == v1.CheckStateDown {
				seen[idx] = now
				remaining--
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	heapAfter := heapMiB()

	var late []time.Duration
	early := 0
	for i := range seen {
		if seen[i].IsZero() {
			continue
		}
		d := seen[i].Sub(deadlines[i])
		if d < 0 {
			early++
		}
		late = append(late, d)
	}
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	fmt.Printf("\n%d checks, deadlines spread over %v, GOMAXPROCS=%d\n", n, spread, runtime.GOMAXPROCS(0))
	fmt.Printf("marked down: %d of %d (%d before their deadline)\n", len(late), n, early)
	if len(late) > 0 {
		fmt.Printf("lateness p50 %v  p99 %v  max %v  (cache poll every 20 ms included)\n", benchutil.Percentile(late, 50), benchutil.Percentile(late, 99), late[len(late)-1].Round(time.Millisecond))
	}
	fmt.Printf("manager heap: %.0f MiB before the checks, %.0f MiB with them (%.1f KiB per check)\n",
		heapBefore, heapAfter, (heapAfter-heapBefore)*1024/float64(n))
	return nil
}
