// Command scale measures what a fleet of checks costs: N Checks over M
// namespaces, made as users make them (a description, tags, labels, and
// the kubectl.kubernetes.io/last-applied-configuration annotation that
// `kubectl apply` writes), against a real kube-apiserver and etcd
// (envtest), with the manager in this process. Each check gets one ping
// through the HTTP server, so that its status is written as in use. It
// prints, at N/10 and at N checks, the manager's heap and this process's
// RSS per check, kube-apiserver's and etcd's RSS per check, and then the
// time from a manager restart to its first acknowledged ping, and to its
// whole server (every Check read). A tenth of the checks (-big-every) are
// in one project, whose API list and board it times at each size. With
// -postgres the store is a throw-away PostgreSQL server's (its memory is
// not counted).
//
// Run: go run ./hack/bench/scale -checks 10000 -namespaces 100 (make bench-scale).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/hack/bench/internal/benchutil"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/cli"
	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/testenv"
)

func main() {
	n := flag.Int("checks", 10000, "checks")
	m := flag.Int("namespaces", 100, "namespaces the checks are spread over")
	budget := flag.Float64("status-budget", 1000, "status writes per second, so that statuses settle within the run")
	flag.IntVar(&bigEvery, "big-every", 10, "one check in this many is in the big project (team-000), whose API list and board are timed")
	flag.StringVar(&heapProfile, "heap-profile", "", "write a heap profile with all the checks to this file (go tool pprof -sample_index=inuse_space)")
	flag.StringVar(&restartProfile, "restart-profile", "", "write a CPU profile of the restart, until the first acknowledged ping, to this file")
	flag.BoolVar(&onPostgres, "postgres", false, "keep the ping store in PostgreSQL (a throw-away server), as one replica of the PostgreSQL mode, rather than embedded")
	memoryLimit := flag.String("memory-limit", "", "run the manager as under a container memory limit of this size (such as 800Mi): its GOMEMLIMIT set from it as the manager sets it from its cgroup")
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	if *memoryLimit != "" {
		q, err := resource.ParseQuantity(*memoryLimit)
		if err != nil {
			fmt.Fprintln(os.Stderr, "-memory-limit:", err)
			os.Exit(2)
		}
		set, err := cli.SetMemoryLimit(memlimit.Limit(uint64(q.Value())))
		if err != nil {
			fmt.Fprintln(os.Stderr, "-memory-limit:", err)
			os.Exit(2)
		}
		fmt.Printf("as under a memory limit of %s: GOMEMLIMIT %s\n", q.String(), mib(float64(set)))
	}
	if err := run(*n, *m, *budget); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// bigEvery: one check in bigEvery is in the big project.
var bigEvery int

// onPostgres: the store is PostgreSQL's.
var onPostgres bool

// heapProfile is where the heap profile at N checks goes ("": none);
// restartProfile the CPU profile of the restart.
var heapProfile, restartProfile string

// sample is what the fleet costs at one size.
type sample struct {
	checks                int
	heap, self, api, etcd float64 // bytes
	createRate, pingRate  float64 // a second
	settled               time.Duration
	// The big project's API list, board and the board's live part, p50.
	list, board, live time.Duration
	big, listBytes    int // the big project's checks; the list's bytes
}

func measure(checks int) sample {
	heap := benchutil.LiveHeap()
	rss := benchutil.RSS("kube-apiserver", "etcd")
	return sample{checks: checks, heap: float64(heap), self: float64(benchutil.SelfRSS()),
		api: float64(rss["kube-apiserver"]), etcd: float64(rss["etcd"])}
}

func run(n, m int, budget float64) error {
	env, err := testenv.Start(context.Background())
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		return err
	}
	ctx := context.Background()
	namespaces := make([]string, m)
	for i := range namespaces {
		namespaces[i] = fmt.Sprintf("team-%03d", i)
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaces[i]}}); err != nil {
			return err
		}
	}
	// The first namespace is the big project: a tenth of the checks, whose
	// API list and board are timed at each size.
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespaces[0], Name: "vigil-project",
		Labels: map[string]string{project.SecretLabel: "true"}}}); err != nil {
		return err
	}
	key, err := project.CreateAPIKey(ctx, c, namespaces[0], project.ReadWrite)
	if err != nil {
		return err
	}
	readOnly, err := project.CreateAPIKey(ctx, c, namespaces[0], project.ReadOnly)
	if err != nil {
		return err
	}
	projectOf := func(i int) string {
		if i%bigEvery == 0 || m == 1 {
			return namespaces[0]
		}
		return namespaces[1+i%(m-1)]
	}
	addr, err := testenv.FreeAddr(ctx)
	if err != nil {
		return err
	}
	dsn := benchutil.TempStore()
	if onPostgres {
		pg, err := testenv.StartPostgres(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = pg.Remove() }()
		if dsn, err = pg.NewDatabase(ctx); err != nil {
			return err
		}
	}
	opts := manager.Options{Store: dsn, HTTPAddr: addr, BaseURL: "http://" + addr, MetricsAddr: "0", ProbeAddr: "0",
		StatusBudget: budget, CheckLimit: n, SharedProcess: true} // two managers, one after the other
	_, stop, err := benchutil.StartManager(ctx, cfg, opts)
	if err != nil {
		return err
	}
	base := measure(0)

	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	var uuids []string
	var samples []sample
	for _, target := range []int{n / 10, n} {
		from := len(uuids)
		fmt.Printf("creating checks %d..%d over %d namespaces...\n", from, target-1, m)
		made := make([]string, target-from)
		began := time.Now()
		err := benchutil.Parallel(target-from, 64, func(i int) error {
			o := realistic(projectOf(from+i), from+i)
			if err := c.Create(ctx, o); err != nil {
				return err
			}
			made[i] = checks.UUIDOf(o)
			return nil
		})
		if err != nil {
			return err
		}
		createRate := float64(target-from) / time.Since(began).Seconds()
		uuids = append(uuids, made...)
		// One deadline for the whole fleet: namespaces take turns in the
		// status lanes, so the big project's statuses are written last.
		fmt.Println("waiting for the manager to have reconciled each...")
		deadline := time.Now().Add(time.Hour)
		for _, ns := range namespaces {
			if err := benchutil.WaitAll(ctx, c, ns, time.Until(deadline), benchutil.Reconciled); err != nil {
				return fmt.Errorf("namespace %s: %w", ns, err)
			}
		}
		fmt.Println("one ping each...")
		began = time.Now()
		err = benchutil.Parallel(len(made), 32, func(i int) error { return ping(httpClient, "http://"+addr+"/ping/"+made[i]) })
		if err != nil {
			return err
		}
		pingRate := float64(len(made)) / time.Since(began).Seconds()
		fmt.Println("waiting for every status to show the ping...")
		began = time.Now()
		deadline = began.Add(time.Hour)
		for _, ns := range namespaces {
			err := benchutil.WaitAll(ctx, c, ns, time.Until(deadline), func(o *v1.Check) bool {
				return benchutil.Reconciled(o) && o.Status.State == v1.CheckStateUp
			})
			if err != nil {
				return fmt.Errorf("namespace %s: %w", ns, err)
			}
		}
		s := measure(target)
		if heapProfile != "" && target == n {
			if err := benchutil.WriteHeapProfile(heapProfile); err != nil {
				return err
			}
		}
		s.createRate, s.pingRate, s.settled = createRate, pingRate, time.Since(began)
		s.big = (target + bigEvery - 1) / bigEvery
		if err := timeBigProject(ctx, &s, httpClient, "http://"+addr, key, readOnly); err != nil {
			return err
		}
		samples = append(samples, s)
	}

	fmt.Printf("\n%d checks over %d namespaces, GOMAXPROCS=%d, status budget %.0f/s\n", n, m, runtime.GOMAXPROCS(0), budget)
	fmt.Printf("before any check: manager heap %s, this process %s, kube-apiserver %s, etcd %s\n",
		mib(base.heap), mib(base.self), mib(base.api), mib(base.etcd))
	fmt.Println("| checks | manager heap | per check | process RSS per check | kube-apiserver RSS per check | etcd RSS per check | creates/s | pings/s | statuses settled |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, s := range samples {
		per := func(v, b float64) string { return kib((v - b) / float64(s.checks)) }
		fmt.Printf("| %d | %s | %s | %s | %s | %s | %.0f | %.0f | %v |\n", s.checks, mib(s.heap), per(s.heap, base.heap),
			per(s.self, base.self), per(s.api, base.api), per(s.etcd, base.etcd), s.createRate, s.pingRate, s.settled.Round(100*time.Millisecond))
	}
	fmt.Println("\n| checks | the big project's checks | API list p50 | list size | board, page 1, p50 | board's live part p50 |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, s := range samples {
		fmt.Printf("| %d | %d | %v | %.1f MB | %v | %v |\n", s.checks, s.big, s.list.Round(100*time.Microsecond),
			float64(s.listBytes)/1e6, s.board.Round(100*time.Microsecond), s.live.Round(100*time.Microsecond))
	}
	fmt.Printf("this process's peak RSS: %s; the collector's share of its CPU: %.1f%%\n", mib(float64(benchutil.PeakRSS())), 100*gcShare())
	fmt.Println("restarting the manager...")
	stop()
	stopProfile, err := startCPUProfile(restartProfile)
	if err != nil {
		return err
	}
	// Pings from the moment the manager starts, beside its start: a
	// manager acknowledges them before its cache has synced, on
	// PostgreSQL while no other replica serves (docs/architecture.md,
	// "Pings before the cache").
	began := time.Now()
	probe := uuids[len(uuids)-1]
	acked := make(chan time.Duration, 1)
	go func() {
		for time.Since(began) < 5*time.Minute {
			if ping(httpClient, "http://"+addr+"/ping/"+probe) == nil {
				acked <- time.Since(began)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		acked <- 0
	}()
	restarted, stop, err := benchutil.StartManager(ctx, cfg, opts)
	if err != nil {
		return err
	}
	defer stop()
	<-restarted.Checks.Ready()
	whole := time.Since(began)
	firstPing := <-acked
	if err := stopProfile(); err != nil {
		return err
	}

	if firstPing > 0 {
		fmt.Printf("restart to the first acknowledged ping, with %d checks: %v\n", n, firstPing.Round(time.Millisecond))
	} else {
		fmt.Printf("no ping acknowledged within 5 minutes of the restart\n")
	}
	fmt.Printf("restart to the whole server (every Check read, the early pings recorded): %v\n", whole.Round(time.Millisecond))
	return nil
}

// timeBigProject times, with the fleet loaded, the big project's API list
// (read with a read-write key, as Terraform's refresh does) and its board
// (signed in with a read-only key): the first page, and the live part the
// page's script fetches every 5 seconds; p50 of 10 each, after one of each
// untimed (the manager keeps each check's JSON rendered between lists).
func timeBigProject(ctx context.Context, s *sample, hc *http.Client, base, key, readOnly string) error {
	list := func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v3/checks/", nil)
		if err != nil {
			return err
		}
		req.Header.Set("X-Api-Key", key)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if n := bytes.Count(b, []byte(`"update_url":`)); resp.StatusCode != http.StatusOK || n != s.big {
			return fmt.Errorf("the big project's list answered %d with %d checks, want %d", resp.StatusCode, n, s.big)
		}
		s.listBytes = len(b)
		return nil
	}
	d, err := benchutil.SignIn(ctx, base, readOnly)
	if err != nil {
		return err
	}
	want := []byte(fmt.Sprintf("of %d", s.big))
	page := func(header ...string) func() error {
		return func() error {
			b, err := d.Get(ctx, "/", header...)
			if err == nil && !bytes.Contains(b, want) {
				err = fmt.Errorf("the board does not say %q", want)
			}
			return err
		}
	}
	for _, t := range []struct {
		into *time.Duration
		op   func() error
	}{{&s.list, list}, {&s.board, page()}, {&s.live, page(benchutil.Fragment...)}} {
		if err := t.op(); err != nil {
			return err
		}
		_, lat, err := benchutil.Measure(10, 1, func(int) error { return t.op() })
		if err != nil {
			return err
		}
		*t.into = benchutil.Percentile(lat, 50)
	}
	return nil
}

// gcShare is the share of this process's CPU time so far that went to
// the garbage collector.
func gcShare() float64 {
	samples := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/total:cpu-seconds"}}
	metrics.Read(samples)
	if total := samples[1].Value.Float64(); total > 0 {
		return samples[0].Value.Float64() / total
	}
	return 0
}

func ping(c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	r, err := c.Do(req)
	if err != nil {
		return err
	}
	_ = r.Body.Close()
	if r.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, r.Status)
	}
	return nil
}

// realistic is a Check as a team writes one and applies it with kubectl:
// labels, a description, tags, a schedule in a time zone, and the
// last-applied annotation holding the object as applied.
func realistic(ns string, i int) *v1.Check {
	schedule := "0 3 * * *"
	o := &v1.Check{
		TypeMeta: metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "Check"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("nightly-backup-%05d", i),
			Labels: map[string]string{"app.kubernetes.io/name": "backup", "app.kubernetes.io/part-of": "billing", "team": ns, "tier": "batch"}},
		Spec: v1.CheckSpec{
			Desc: fmt.Sprintf("Nightly dump of the billing database %d to object storage, encrypted with the team's key; "+
				"page the on-call engineer when it does not finish by 04:00.", i),
			Tags:     "prod backup nightly billing",
			Schedule: &schedule, TZ: "Europe/Riga", Grace: 3600,
		},
	}
	applied, _ := json.Marshal(o)
	o.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(applied) + "\n"}
	return o
}

// startCPUProfile profiles this process's CPU into path until the returned
// function is called; "" profiles nothing.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

func mib(b float64) string { return fmt.Sprintf("%.0f MiB", b/(1<<20)) }
func kib(b float64) string { return fmt.Sprintf("%.1f KiB", b/1024) }
