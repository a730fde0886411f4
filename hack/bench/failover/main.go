// Command failover measures what a leader's crash costs in PostgreSQL mode:
// two `vigil manager` processes (the real binary, leader election on) share
// a store on a throw-away PostgreSQL server, against a real kube-apiserver
// and etcd (envtest). The leader is SIGKILLed just before a set of checks
// comes due, and the command reports
//
//   - the gap: how long after the kill the other replica leads;
//   - pings: errors and latency of the pings the surviving replica answered
//     meanwhile (pings do not need the leader), and those sent to the
//     killed one (refused until a Service drops its endpoint);
//   - lateness: how long after its deadline each check's down flip (with
//     its notification owed) is in the store, and its webhook notification
//     arrives, for checks due before the kill (no failover) and for checks
//     due just after it (across the failover), in the same run.
//
// Run: go run ./hack/bench/failover [-checks 1000] (KUBEBUILDER_ASSETS as for make test).
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", to read the flips
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/hack/bench/internal/benchutil"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/testenv"
)

const (
	timeout = 60
	grace   = 60
	// pingRate is the steady load the pinger sends, alternating replicas.
	pingRate = 50
)

func main() {
	n := flag.Int("checks", 1000, "checks: half come due before the kill, half just after it")
	flag.Parse()
	if err := run(*n); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// replica is a running `vigil manager`.
type replica struct {
	cmd  *exec.Cmd
	out  *testenv.Output
	base string
}

func (r *replica) leads() bool {
	return strings.Contains(strings.ToLower(r.out.String()), "successfully acquired lease")
}

func run(n int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, err := testenv.Start(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	cfg := env.Config
	cfg.QPS, cfg.Burst = 2000, 4000
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		return err
	}
	pg, err := testenv.StartPostgres(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = pg.Remove() }()
	dsn, err := pg.NewDatabase(ctx)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "vigil-failover-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin, err := testenv.Vigil(ctx)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, cfg); err != nil {
		return err
	}

	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}); err != nil {
		return err
	}
	var hookMu sync.Mutex
	notified := map[string]time.Time{}
	hook := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		hookMu.Lock()
		defer hookMu.Unlock()
		if _, seen := notified[r.URL.Query().Get("check")]; !seen {
			notified[r.URL.Query().Get("check")] = time.Now()
		}
	}))
	defer hook.Close()
	if err := c.Create(ctx, &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "ops"},
		Spec: v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{URL: hook.URL + "?check=$NAME"}}}}); err != nil {
		return err
	}
	fmt.Printf("creating %d checks...\n", n+1)
	objs := make([]*v1.Check, n)
	if err := benchutil.Parallel(n, 64, func(i int) error {
		to := int64(timeout)
		objs[i] = &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("c%05d", i)},
			Spec: v1.CheckSpec{Timeout: &to, Grace: grace, TZ: "UTC", Channels: []string{"ops"}}}
		return c.Create(ctx, objs[i])
	}); err != nil {
		return err
	}
	steadyTimeout := int64(3600)
	steady := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "steady"},
		Spec: v1.CheckSpec{Timeout: &steadyTimeout, Grace: 3600, TZ: "UTC", UUID: "6f1d2c3b-4a59-4e8f-9d0c-1b2a3c4d5e6f"}}
	if err := c.Create(ctx, steady); err != nil {
		return err
	}

	var replicas []*replica
	defer func() {
		for _, r := range replicas {
			if r.cmd.ProcessState == nil {
				_ = r.cmd.Process.Kill()
				_ = r.cmd.Wait()
			}
		}
	}()
	for range 2 {
		addr, err := testenv.FreeAddr(ctx)
		if err != nil {
			return err
		}
		r := &replica{out: &testenv.Output{}, base: "http://" + addr}
		r.cmd = exec.CommandContext(ctx, bin, "manager", "--kubeconfig="+kubeconfig, "--store="+dsn, "--leader-elect",
			"--leader-election-namespace=default", "--http-bind-address="+addr, "--base-url="+r.base,
			"--metrics-bind-address=0", "--health-probe-bind-address=0", "--cronjobs=false",
			"--egress-allow=127.0.0.0/8,::1") // the webhook listens on loopback
		r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
		if err := r.cmd.Start(); err != nil {
			return err
		}
		replicas = append(replicas, r)
	}
	pingURL := func(r *replica) string { return r.base + "/ping/" + steady.Spec.UUID }
	for _, r := range replicas {
		if err := waitFor(2*time.Minute, func() bool { return status(pingURL(r)) == http.StatusOK }); err != nil {
			return fmt.Errorf("replica never served pings: %w\n%s", err, r.out.String())
		}
	}
	if err := waitFor(time.Minute, func() bool { return replicas[0].leads() || replicas[1].leads() }); err != nil {
		return fmt.Errorf("no replica leads: %w", err)
	}
	leader, follower := replicas[0], replicas[1]
	if follower.leads() {
		leader, follower = follower, leader
	}

	// Each check's last ping, written as the ping path writes it, puts its
	// deadline where the measurement wants it: half in the 10 s before the
	// kill, half in the 5 s after it.
	st, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	kill := time.Now().Add(30 * time.Second)
	deadlines := make([]time.Time, n)
	for i, o := range objs {
		if i < n/2 {
			deadlines[i] = kill.Add(-10*time.Second + 9*time.Second*time.Duration(i)/time.Duration(n/2))
		} else {
			deadlines[i] = kill.Add(time.Second + 4*time.Second*time.Duration(i-n/2)/time.Duration(n-n/2))
		}
		deadlines[i] = deadlines[i].Truncate(time.Microsecond)
		cfg, _ := checks.Config(&o.Spec)
		if _, err := st.RecordPing(ctx, store.Target{UID: o.UID, Namespace: o.Namespace, Name: o.Name, Config: cfg},
			store.Ping{Kind: monitor.PingSuccess, At: deadlines[i].Add(-(timeout + grace) * time.Second), Method: "GET", Scheme: "http"}); err != nil {
			return err
		}
	}
	if time.Now().After(kill.Add(-10 * time.Second)) {
		return fmt.Errorf("setup took too long")
	}

	// The steady pinger, alternating replicas at pingRate/s.
	type answer struct {
		at       time.Time
		toLeader bool
		ok       bool
		took     time.Duration
	}
	var (
		answersMu sync.Mutex
		answers   []answer
		stopPings atomic.Bool
		pingers   sync.WaitGroup
	)
	hc := &http.Client{Timeout: 10 * time.Second}
	pingers.Go(func() {
		tick := time.NewTicker(time.Second / pingRate)
		defer tick.Stop()
		for i := 0; !stopPings.Load(); i++ {
			<-tick.C
			r := []*replica{leader, follower}[i%2]
			pingers.Go(func() {
				start := time.Now()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, pingURL(r), nil)
				resp, err := hc.Do(req)
				ok := err == nil && resp.StatusCode == http.StatusOK
				if err == nil {
					_ = resp.Body.Close()
				}
				answersMu.Lock()
				answers = append(answers, answer{at: start, toLeader: r == leader, ok: ok, took: time.Since(start)})
				answersMu.Unlock()
			})
		}
	})

	// Flips are read from the store every 20 ms, as the lateness benchmark
	// does.
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	recorded := map[string]time.Time{}
	readFlips := func() error {
		rows, err := db.QueryContext(ctx, `SELECT c.name FROM flips f JOIN checks c ON c.uid = f.check_uid
			JOIN deliveries d ON d.check_uid = f.check_uid AND d.flip_n = f.n WHERE f.up = FALSE`)
		if err != nil {
			return err
		}
		defer rows.Close()
		now := time.Now()
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				return err
			}
			if _, ok := recorded[name]; !ok {
				recorded[name] = now
			}
		}
		return rows.Err()
	}
	fmt.Printf("the leader is killed in %v...\n", time.Until(kill).Round(time.Second))
	for time.Now().Before(kill) {
		if err := readFlips(); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = leader.cmd.Process.Signal(syscall.SIGKILL)
	killedAt := time.Now()
	_ = leader.cmd.Wait()
	var ledAfter time.Duration
	end := killedAt.Add(2 * time.Minute)
	for time.Now().Before(end) {
		if err := readFlips(); err != nil {
			return err
		}
		if ledAfter == 0 && follower.leads() {
			ledAfter = time.Since(killedAt)
		}
		hookMu.Lock()
		done := len(recorded) == n && len(notified) == n
		hookMu.Unlock()
		if done && ledAfter > 0 && time.Since(killedAt) > 30*time.Second {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopPings.Store(true)
	pingers.Wait()

	// Report.
	lateness := func(at map[string]time.Time, from, to int) (late []time.Duration, missing int) {
		for i := from; i < to; i++ {
			t, ok := at[objs[i].Name]
			if !ok {
				missing++
				continue
			}
			late = append(late, t.Sub(deadlines[i]))
		}
		sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
		return late, missing
	}
	line := func(what string, late []time.Duration, missing int) {
		if len(late) == 0 {
			fmt.Printf("%-48s none (%d missing)\n", what, missing)
			return
		}
		fmt.Printf("%-48s p50 %-9v p99 %-9v max %-9v (%d missing)\n", what, benchutil.Percentile(late, 50).Round(time.Millisecond),
			benchutil.Percentile(late, 99).Round(time.Millisecond), late[len(late)-1].Round(time.Millisecond), missing)
	}
	var survivorOK, survivorErr, killedErr int
	var survivorTook []time.Duration
	for _, a := range answers {
		if a.at.Before(killedAt) {
			continue
		}
		switch {
		case a.toLeader:
			killedErr++
		case a.ok:
			survivorOK++
			survivorTook = append(survivorTook, a.took)
		default:
			survivorErr++
		}
	}
	fmt.Printf("\n2 replicas on PostgreSQL, %d checks; the leader SIGKILLed at a deadline wave\n", n)
	if ledAfter > 0 {
		fmt.Printf("the other replica led %v after the kill (lease 15 s, retry 2 s)\n", ledAfter.Round(100*time.Millisecond))
	} else {
		fmt.Printf("the other replica never led within %v\n", end.Sub(killedAt))
	}
	fmt.Printf("pings after the kill: the surviving replica answered %d OK, %d errors (p99 %v, max %v); the killed one refused %d until the end\n",
		survivorOK, survivorErr, benchutil.Percentile(survivorTook, 99).Round(time.Millisecond), benchutil.Percentile(survivorTook, 100).Round(time.Millisecond), killedErr)
	hookMu.Lock()
	defer hookMu.Unlock()
	a, am := lateness(recorded, 0, n/2)
	line("down recorded, due before the kill:", a, am)
	b, bm := lateness(recorded, n/2, n)
	line("down recorded, due after it (across failover):", b, bm)
	a, am = lateness(notified, 0, n/2)
	line("notified, due before the kill:", a, am)
	b, bm = lateness(notified, n/2, n)
	line("notified, due after it (across failover):", b, bm)
	return nil
}

func status(url string) int {
	resp, err := http.Get(url) //nolint:gosec,noctx // loopback, a benchmark
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

func waitFor(limit time.Duration, cond func() bool) error {
	end := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(end) {
			return fmt.Errorf("not within %v", limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}
