// Command pings measures the ping path of a whole Vigil manager on loopback
// (its HTTP server, the informer cache and the ping store, an SQLite file on
// this machine's disk), against a real kube-apiserver and etcd (envtest),
// and compares it with the raw rate at which the same API server accepts
// Check status patches, measured in the same run:
//
//   - raw: status patches/s to distinct checks, one write per request;
//   - distinct: pings/s spread over every check, each acknowledged only
//     after its transaction is durable;
//   - hot: pings/s to one check;
//   - body: pings/s with a 10 KB body (runitor's default limit);
//   - burst: pings to distinct checks sent all at once, and the time until
//     the last is acknowledged;
//   - etcd: bytes etcd writes to its WAL per ping (etcd_disk_wal_write_bytes_total
//     before and after each phase), without and with a body;
//   - store: the ping store's own rate, pings handed to it directly (no
//     HTTP, no lookup) by as many goroutines as there are clients, on the
//     same store: what the ping path could reach at best on this machine;
//   - PostgreSQL mode (unless -postgres=false): distinct and hot pings with
//     the store on a throw-away PostgreSQL server on this machine (fsync and
//     synchronous commit on), with one manager and with two replicas (one
//     leader) whose clients alternate between them, as ratios to the
//     embedded store and to the raw rate.
//
// Run: go run ./hack/bench/pings [-checks 10000] [-pings 20000] [-concurrency 64] [-burst 4000] [-postgres=true]
// [-cpuprofile cpu.out] [-memprofile mem.out] (KUBEBUILDER_ASSETS as for
// make test; make bench-pings sets it). The profiles cover the embedded
// store's distinct-checks phase (-profile-phase picks another): go tool
// pprof -top bin/pings cpu.out.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/hack/bench/internal/benchutil"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/httpserver"
	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// rawRepeats is how many times the raw rate is measured; the median is
// reported.
const rawRepeats = 3

func main() {
	checks := flag.Int("checks", 10000, "distinct checks")
	pings := flag.Int("pings", 20000, "pings per phase")
	concurrency := flag.Int("concurrency", 64, "concurrent clients")
	burst := flag.Int("burst", 4000, "pings sent at once to as many checks")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the -profile-phase phase here")
	flag.StringVar(&memProfile, "memprofile", "", "write an allocation profile of the -profile-phase phase here")
	flag.StringVar(&traceFile, "trace", "", "write an execution trace of the -profile-phase phase here (go tool trace)")
	flag.StringVar(&profilePhase, "profile-phase", "distinct", "the phase the profiles and the trace cover: distinct, burst, or postgres (its distinct checks, one replica)")
	postgres := flag.Bool("postgres", true, "also measure PostgreSQL mode, one and two replicas (needs the server binaries: hack/ensure-packages.sh postgres)")
	flag.Parse()
	switch profilePhase {
	case "distinct", "burst":
	case "postgres":
		if !*postgres {
			fmt.Fprintln(os.Stderr, "-profile-phase postgres needs -postgres")
			os.Exit(2)
		}
	default:
		fmt.Fprintf(os.Stderr, "-profile-phase %q: want distinct, burst or postgres\n", profilePhase)
		os.Exit(2)
	}
	if memProfile != "" {
		runtime.MemProfileRate = 0 // from the profiled phase only
	}
	ctrllog.SetLogger(logr.Discard())
	if err := run(*checks, *pings, *concurrency, min(*burst, *checks), *postgres); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// The profiles' files, when asked for, and the phase they cover.
var cpuProfile, memProfile, traceFile, profilePhase string

type phase struct {
	name     string
	rate     float64
	lat      []time.Duration
	walBytes float64 // etcd WAL bytes per ping
	perTx    float64 // the store's writes per transaction meanwhile
}

// perTx is the store's writes per transaction between two of its counts.
func perTx(a, b store.Stats) float64 {
	if b.Commits == a.Commits {
		return 0
	}
	return float64(b.Writes-a.Writes) / float64(b.Commits-a.Commits)
}

func run(nChecks, nPings, concurrency, nBurst int, withPostgres bool) error {
	env, err := testenv.Start(context.Background())
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
	ctx := context.Background()
	const ns = "bench"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	etcdMetrics := env.EtcdURL + "/metrics"

	fmt.Printf("creating %d checks...\n", nChecks)
	uuids := make([]string, nChecks)
	if err := benchutil.Parallel(nChecks, concurrency, func(i int) error {
		uuids[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		return c.Create(ctx, newCheck(ns, fmt.Sprintf("c%05d", i), uuids[i]))
	}); err != nil {
		return err
	}

	// Raw: what the API server takes when each write is one status patch.
	nRaw := min(nChecks, 2000)
	rawObjs := make([]*v1.Check, nRaw)
	if err := benchutil.Parallel(nRaw, concurrency, func(i int) error {
		rawObjs[i] = newCheck(ns, fmt.Sprintf("raw%05d", i), "")
		return c.Create(ctx, rawObjs[i])
	}); err != nil {
		return err
	}
	var rawRounds []float64
	for round := range rawRepeats {
		rate, _, err := benchutil.Measure(nPings, concurrency, func(i int) error {
			patch := []byte(fmt.Sprintf(`{"status":{"nPings":%d}}`, round*nPings+i+1))
			return c.Status().Patch(ctx, rawObjs[i%nRaw], client.RawPatch(types.MergePatchType, patch))
		})
		if err != nil {
			return err
		}
		rawRounds = append(rawRounds, rate)
	}
	sort.Float64s(rawRounds)
	raw := rawRounds[len(rawRounds)/2]

	addr, err := testenv.FreeAddr(ctx)
	if err != nil {
		return err
	}
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The benchmark's clients all come from one address, which stands for
	// thousands of CronJobs' pods: no per-source cap.
	mgr, err := manager.New(mctx, rest.CopyConfig(cfg), manager.Options{Store: benchutil.TempStore(), HTTPAddr: addr,
		BaseURL: "http://" + addr, MetricsAddr: "0", ProbeAddr: "0", CheckLimit: 1 << 30,
		MaxConnectionsPerSource: httpserver.DefaultMaxConnections})
	if err != nil {
		return err
	}
	go func() { _ = mgr.Start(mctx) }()
	base := "http://" + addr
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency * 2, MaxIdleConns: concurrency * 2}}
	pingWith := func(hc *http.Client, base, uuid string, body []byte) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/ping/"+uuid, bytes.NewReader(body))
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("ping answered %d", resp.StatusCode)
		}
		return nil
	}
	pingAt := func(base, uuid string, body []byte) error { return pingWith(hc, base, uuid, body) }
	ping := func(uuid string, body []byte) error { return pingAt(base, uuid, body) }
	// The manager serves a check once its cache holds it: wait for the
	// last, then ping every check once (its row in the store appears).
	fmt.Println("warming up: every check in the cache, pinged once...")
	for ping(uuids[nChecks-1], nil) != nil {
		time.Sleep(50 * time.Millisecond)
	}
	if err := benchutil.Parallel(nChecks, concurrency, func(i int) error { return ping(uuids[i], nil) }); err != nil {
		return err
	}
	acked := int64(nChecks + 1)
	// The controller reconciles every check once at start (its UUID
	// claimed, its rows); measure after that, as a running cluster would.
	fmt.Println("waiting for the controller to reconcile every check...")
	if err := waitClaimed(ctx, mgr.Store, nChecks+nRaw); err != nil {
		return err
	}
	// And the status of every new check says it is Ready (the verdicts
	// of 10,000 checks created at once, written ahead of everything else):
	// the phases measure pings, not the creation's status writes.
	fmt.Println("waiting for every check's status to say Ready...")
	ready := func(c *v1.Check) bool { return meta.IsStatusConditionTrue(c.Status.Conditions, v1.ConditionReady) }
	if err := benchutil.WaitAll(ctx, mgr.GetCache(), ns, 15*time.Minute, ready); err != nil {
		return err
	}

	measure := func(name string, target func(i int) string, body []byte) (phase, error) {
		wal0, err := walBytes(ctx, etcdMetrics)
		if err != nil {
			return phase{}, err
		}
		st0 := mgr.Store.Stats()
		rate, lat, err := benchutil.Measure(nPings, concurrency, func(i int) error { return ping(target(i), body) })
		if err != nil {
			return phase{}, err
		}
		st1 := mgr.Store.Stats()
		acked += int64(nPings)
		wal1, err := walBytes(ctx, etcdMetrics)
		if err != nil {
			return phase{}, err
		}
		return phase{name: name, rate: rate, lat: lat, walBytes: (wal1 - wal0) / float64(nPings), perTx: perTx(st0, st1)}, nil
	}
	var phases []phase
	for _, p := range []struct {
		name   string
		target func(i int) string
		body   []byte
	}{
		{"distinct checks", func(i int) string { return uuids[i%nChecks] }, nil},
		{"one hot check", func(int) string { return uuids[1] }, nil},
		{"distinct, 10 KB body", func(i int) string { return uuids[i%nChecks] }, make([]byte, 10_000)},
	} {
		fmt.Printf("phase: %s...\n", p.name)
		stop, err := startProfiles(profilePhase == "distinct" && len(phases) == 0)
		if err != nil {
			return err
		}
		ph, err := measure(p.name, p.target, p.body)
		if err := errors.Join(err, stop()); err != nil {
			return err
		}
		phases = append(phases, ph)
	}

	// The store alone, on the same store, for the ratio the ping path
	// reaches of it.
	fmt.Println("phase: the store alone...")
	targets := make([]store.Target, nChecks)
	for i, u := range uuids {
		c, err := mgr.Checks.ByUUID(ctx, u)
		if err != nil {
			return err
		}
		cfg, _ := checks.Config(&c.Spec)
		targets[i] = store.Target{UID: c.UID, Namespace: c.Namespace, Name: c.Name, Config: cfg}
	}
	storeSt0 := mgr.Store.Stats()
	storeRate, storeLat, err := benchutil.Measure(nPings, concurrency, func(i int) error {
		_, err := mgr.Store.RecordPing(ctx, targets[i%nChecks], store.Ping{Kind: monitor.PingSuccess, At: time.Now(), Method: "POST", Scheme: "http"})
		return err
	})
	if err != nil {
		return err
	}
	storePerTx := perTx(storeSt0, mgr.Store.Stats())
	acked += int64(nPings)

	// Burst: every client starts at once, each on a connection of its
	// own, as new pods' curl would. (Not from a pool of kept-alive ones:
	// past seven eighths of its connections the server closes idle ones,
	// and a ping sent on one as it closes fails with a reset, which Go's
	// client does not retry for a POST. That is HTTP's keep-alive race,
	// which a client pinging over kept-alive connections near the
	// server's cap meets too: docs/performance.md.)
	fmt.Printf("burst: %d pings to %d checks at once...\n", nBurst, nBurst)
	burstClient := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	start := make(chan struct{})
	burstLat := make([]time.Duration, nBurst)
	var wg sync.WaitGroup
	var burstErr error
	var mu sync.Mutex
	stopProfiles, err := startProfiles(profilePhase == "burst")
	if err != nil {
		return err
	}
	t0 := time.Now()
	for i := range nBurst {
		wg.Go(func() {
			<-start
			if err := pingWith(burstClient, base, uuids[i], nil); err != nil {
				mu.Lock()
				burstErr = err
				mu.Unlock()
			}
			burstLat[i] = time.Since(t0)
		})
	}
	t0 = time.Now()
	close(start)
	wg.Wait()
	if err := stopProfiles(); err != nil {
		return err
	}
	if burstErr != nil {
		return fmt.Errorf("burst: %w", burstErr)
	}
	acked += int64(nBurst)

	// Every acknowledged ping is counted in the store.
	var stored int64
	obs, err := mgr.Store.ChecksIn(ctx, ns)
	if err != nil {
		return err
	}
	for _, o := range obs.All() {
		stored += o.NPings
	}
	if stored != acked {
		return fmt.Errorf("the store counts %d pings after %d acknowledged", stored, acked)
	}
	stats := mgr.Store.Stats()
	cancel() // the embedded manager stops: the PostgreSQL modes run alone

	var pgModes []pgMode
	if withPostgres {
		if pgModes, err = measurePostgres(ctx, cfg, etcdMetrics, nChecks, nPings, concurrency, uuids, base, pingAt); err != nil {
			return fmt.Errorf("PostgreSQL mode: %w", err)
		}
	}

	fmt.Printf("\n%d checks, %d pings per phase, %d concurrent clients, GOMAXPROCS=%d, store on %s\n",
		nChecks, nPings, concurrency, runtime.GOMAXPROCS(0), storeDisk())
	fmt.Printf("raw status patches     %8.0f /s               (median of %.0f, %.0f, %.0f)\n", raw, rawRounds[0], rawRounds[1], rawRounds[2])
	fmt.Printf("the store alone        %8.0f /s = %5.1fx raw   p50 %-8v p99 %-8v (pings handed to it directly)   %4.1f writes/transaction\n", storeRate, storeRate/raw,
		benchutil.Percentile(storeLat, 50), benchutil.Percentile(storeLat, 99), storePerTx)
	for _, p := range phases {
		fmt.Printf("pings, %-21s %6.0f /s = %5.1fx raw = %4.2fx the store   p50 %-8v p99 %-8v etcd WAL %6.0f B/ping   %4.1f writes/transaction\n", p.name, p.rate, p.rate/raw,
			p.rate/storeRate, benchutil.Percentile(p.lat, 50), benchutil.Percentile(p.lat, 99), p.walBytes, p.perTx)
	}
	fmt.Printf("burst of %d at once: the last acknowledged after %v (p50 %v)\n", nBurst,
		benchutil.Percentile(burstLat, 100), benchutil.Percentile(burstLat, 50))
	fmt.Printf("store: %d writes in %d transactions (%.1f per transaction); n_pings adds up to the %d acknowledged\n",
		stats.Writes, stats.Commits, float64(stats.Writes)/float64(stats.Commits), acked)
	if len(pgModes) > 0 {
		fmt.Printf("\nPostgreSQL mode (a server on this machine, fsync and synchronous commit on), same run:\n")
		for _, m := range pgModes {
			for i, p := range m.phases {
				embedded := phases[i]
				fmt.Printf("%-22s %-16s %6.0f /s = %5.1fx raw = %4.2fx embedded   p50 %-8v p99 %-8v etcd WAL %4.0f B/ping\n", m.name, p.name, p.rate, p.rate/raw,
					p.rate/embedded.rate, benchutil.Percentile(p.lat, 50), benchutil.Percentile(p.lat, 99), p.walBytes)
			}
		}
	}
	return nil
}

// pgMode is what one PostgreSQL configuration measured: the distinct and
// hot phases, in the order of the embedded ones.
type pgMode struct {
	name   string
	phases []phase
}

// measurePostgres starts a PostgreSQL server and measures distinct and hot
// pings with one manager on it, then with two replicas (leader election on)
// whose clients alternate between them. Every manager says the checks are
// at baseURL, as the replicas of one installation do: a new base URL
// would change every check's ping URL, a wave of status writes that is
// not the pings'.
func measurePostgres(ctx context.Context, cfg *rest.Config, etcdMetrics string, nChecks, nPings, concurrency int, uuids []string,
	baseURL string, pingAt func(base, uuid string, body []byte) error) ([]pgMode, error) {
	pg, err := testenv.StartPostgres(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = pg.Remove() }()
	var modes []pgMode
	for _, replicas := range []int{1, 2} {
		fmt.Printf("PostgreSQL mode, %d replica(s)...\n", replicas)
		dsn, err := pg.NewDatabase(ctx)
		if err != nil {
			return nil, err
		}
		mctx, cancel := context.WithCancel(ctx)
		var bases []string
		var first *manager.Manager
		for range replicas {
			addr, err := testenv.FreeAddr(ctx)
			if err != nil {
				cancel()
				return nil, err
			}
			mgr, err := manager.New(mctx, rest.CopyConfig(cfg), manager.Options{Store: dsn, HTTPAddr: addr, BaseURL: baseURL,
				MetricsAddr: "0", ProbeAddr: "0", CheckLimit: 1 << 30, LeaderElection: replicas > 1, LeaderElectionNamespace: "default", SharedProcess: true})
			if err != nil {
				cancel()
				return nil, err
			}
			go func() { _ = mgr.Start(mctx) }()
			bases = append(bases, "http://"+addr)
			if first == nil {
				first = mgr
			}
		}
		ping := func(i int, uuid string) error { return pingAt(bases[i%len(bases)], uuid, nil) }
		for i := range bases {
			for ping(i, uuids[nChecks-1]) != nil {
				time.Sleep(50 * time.Millisecond)
			}
		}
		if err := benchutil.Parallel(nChecks, concurrency, func(i int) error { return ping(i, uuids[i]) }); err != nil {
			cancel()
			return nil, err
		}
		// Every check's rows and UUID claim, in this store too.
		if err := waitClaimed(mctx, first.Store, nChecks+min(nChecks, 2000)); err != nil {
			cancel()
			return nil, err
		}
		m := pgMode{name: fmt.Sprintf("PostgreSQL, %d replica(s)", replicas)}
		for _, p := range []struct {
			name   string
			target func(i int) string
		}{
			{"distinct checks", func(i int) string { return uuids[i%nChecks] }},
			{"one hot check", func(int) string { return uuids[1] }},
		} {
			wal0, err := walBytes(ctx, etcdMetrics)
			if err != nil {
				cancel()
				return nil, err
			}
			stop, err := startProfiles(profilePhase == "postgres" && replicas == 1 && p.name == "distinct checks")
			if err != nil {
				cancel()
				return nil, err
			}
			rate, lat, err := benchutil.Measure(nPings, concurrency, func(i int) error { return ping(i, p.target(i)) })
			if err := errors.Join(err, stop()); err != nil {
				cancel()
				return nil, err
			}
			wal1, err := walBytes(ctx, etcdMetrics)
			if err != nil {
				cancel()
				return nil, err
			}
			m.phases = append(m.phases, phase{name: p.name, rate: rate, lat: lat, walBytes: (wal1 - wal0) / float64(nPings)})
		}
		modes = append(modes, m)
		cancel()
		time.Sleep(time.Second) // the managers close their stores
	}
	return modes, nil
}

// newCheck returns a check that stays up for an hour after a ping; uuid
// may be empty.
func newCheck(ns, name, uuid string) *v1.Check {
	timeout := int64(3600)
	return &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.CheckSpec{Timeout: &timeout, Grace: 3600, TZ: "UTC", UUID: uuid}}
}

// walBytes reads etcd's etcd_disk_wal_write_bytes_total.
func walBytes(ctx context.Context, url string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "etcd_disk_wal_write_bytes_total "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("etcd exports no etcd_disk_wal_write_bytes_total at %s", url)
}

// storeDisk says what the store's temporary directory is on.
func storeDisk() string {
	if out, err := os.ReadFile("/proc/mounts"); err == nil {
		tmp := os.TempDir()
		best := ""
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) > 2 && strings.HasPrefix(tmp, f[1]) && len(f[1]) > len(best) {
				best = f[1] + " (" + f[2] + ")"
			}
		}
		if best != "" {
			return best
		}
	}
	return "?"
}

// startProfiles starts the CPU profile and marks the allocations so far
// when on and asked for; stop writes them.
func startProfiles(on bool) (stop func() error, err error) {
	if !on || (cpuProfile == "" && memProfile == "" && traceFile == "") {
		return func() error { return nil }, nil
	}
	var tr *os.File
	if traceFile != "" {
		if tr, err = os.Create(traceFile); err != nil {
			return nil, err
		}
		if err := trace.Start(tr); err != nil {
			return nil, err
		}
	}
	var cpu *os.File
	if cpuProfile != "" {
		if cpu, err = os.Create(cpuProfile); err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			return nil, err
		}
	}
	runtime.MemProfileRate = 64 << 10
	return func() error {
		if tr != nil {
			trace.Stop()
			if err := tr.Close(); err != nil {
				return err
			}
		}
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				return err
			}
		}
		if memProfile == "" {
			return nil
		}
		f, err := os.Create(memProfile)
		if err != nil {
			return err
		}
		return errors.Join(pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
	}, nil
}

// waitClaimed waits until the store records the owner of want check
// UUIDs: the check controller has reconciled every check once (its rows,
// its UUID's claim), as in a running cluster. Their statuses follow within
// the status budget, as they always do.
func waitClaimed(ctx context.Context, st *store.Store, want int) error {
	for {
		_, n, err := st.OwnerRows(ctx)
		if err != nil {
			return err
		}
		if n >= int64(want) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
