// Command pings measures the ping path of a whole Vigil manager on
// loopback, against a real kube-apiserver and etcd (envtest), and compares
// it with the raw rate at which the same API server accepts Check status
// patches, measured in the same run:
//
//   - raw: status patches/s, one writer per check, to distinct checks;
//   - distinct: pings/s spread over many checks;
//   - hot: pings/s to one check (group commit batches them);
//   - p50/p99 latency of a ping (until the acknowledgement, which comes
//     only once the ping is stored).
//
// Run: go run ./hack/bench/pings [-checks 1000] [-pings 5000] [-concurrency 64]
// (KUBEBUILDER_ASSETS as for make test; make bench-pings sets it).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/hack/bench/internal/benchutil"
	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// components are the processes whose CPU time the benchmark reports beside
// its own (the manager and the clients run in this process).
var components = []string{"kube-apiserver", "etcd"}

var apiProfile, hotProfile string

// rawRepeats is how many times the raw rate is measured.
const rawRepeats = 3

// profileAPIServer starts a CPU profile of kube-apiserver for the given
// time and writes it to file; the returned func waits for it.
func profileAPIServer(ctx context.Context, cfg *rest.Config, seconds int, file string) func() {
	if apiProfile == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return
		}
		raw, err := cs.RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(seconds)).Timeout(time.Duration(seconds+30) * time.Second).DoRaw(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "apiserver profile:", err)
			return
		}
		_ = os.WriteFile(file, raw, 0o644)
	}()
	return func() { <-done }
}

func main() {
	checks := flag.Int("checks", 1000, "distinct checks")
	pings := flag.Int("pings", 5000, "pings per phase")
	concurrency := flag.Int("concurrency", 64, "concurrent clients")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of this process (client and manager) to the file")
	flag.StringVar(&hotProfile, "hot-cpuprofile", "", "write a CPU profile of this process during the hot phase only")
	flag.StringVar(&apiProfile, "apiserver-profile", "", "write CPU profiles of kube-apiserver during the distinct and hot phases to FILE.distinct and FILE.hot")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = pprof.StartCPUProfile(f)
	}
	ctrllog.SetLogger(logr.Discard())
	err := run(*checks, *pings, *concurrency)
	pprof.StopCPUProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(nChecks, nPings, concurrency int) error {
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
	ctx := context.Background()
	ns := "bench"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}

	fmt.Printf("creating %d checks...\n", nChecks)
	uuids := make([]string, nChecks)
	objs := make([]*v1.Check, nChecks)
	if err := benchutil.Parallel(nChecks, concurrency, func(i int) error {
		objs[i] = newCheck(ns, fmt.Sprintf("c%05d", i), fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
		uuids[i] = objs[i].Spec.UUID
		return c.Create(ctx, objs[i])
	}); err != nil {
		return err
	}

	// Raw: what the API server takes when each write is one status patch,
	// to a separate set of checks (a ping must find its check's status as
	// pings left it).
	rawObjs := make([]*v1.Check, nChecks)
	if err := benchutil.Parallel(nChecks, concurrency, func(i int) error {
		rawObjs[i] = newCheck(ns, fmt.Sprintf("raw%05d", i), "")
		return c.Create(ctx, rawObjs[i])
	}); err != nil {
		return err
	}
	// The raw rate of a single round varies by a third from run to run on
	// this machine; the median of three rounds is steadier.
	cpuRaw0 := benchutil.CPUTimes(components...)
	var rawRounds []float64
	for round := range rawRepeats {
		rate, _, err := benchutil.Measure(nPings, concurrency, func(i int) error {
			o := rawObjs[i%nChecks]
			patch := []byte(fmt.Sprintf(`{"status":{"nPings":%d}}`, round*nPings+i))
			return c.Status().Patch(ctx, o, client.RawPatch(types.MergePatchType, patch))
		})
		if err != nil {
			return err
		}
		rawRounds = append(rawRounds, rate)
	}
	cpuRaw1 := benchutil.CPUTimes(components...)
	sort.Float64s(rawRounds)
	raw := rawRounds[len(rawRounds)/2]

	addr, err := testenv.FreeAddr(ctx)
	if err != nil {
		return err
	}
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mgr, err := manager.New(mctx, rest.CopyConfig(cfg), manager.Options{Store: benchutil.TempStore(), HTTPAddr: addr, BaseURL: "http://" + addr, MetricsAddr: "0", ProbeAddr: "0"})
	if err != nil {
		return err
	}
	go func() { _ = mgr.Start(mctx) }()
	base := "http://" + addr
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency * 2}}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/ping/"+uuids[0], nil)
		if resp, err := hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	ping := func(uuid string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/ping/"+uuid, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("ping answered %d", resp.StatusCode)
		}
		return nil
	}
	// Steady state: the manager has reconciled every check (at start it
	// writes each one's status once) and every pinged check is up (the
	// first ping moves new to up, which is the controller's write). Without
	// this the measured phase pays for the manager's start.
	fmt.Println("warming up: every check reconciled, pinged once and up...")
	if err := benchutil.WaitAll(ctx, c, ns, 5*time.Minute, benchutil.Reconciled); err != nil {
		return err
	}
	if err := benchutil.Parallel(nChecks, concurrency, func(i int) error { return ping(uuids[i]) }); err != nil {
		return err
	}
	if err := benchutil.WaitAll(ctx, c, ns, 5*time.Minute, func(o *v1.Check) bool { return o.Spec.UUID == "" || o.Status.State == v1.CheckStateUp }); err != nil {
		return err
	}
	warmup := int64(nChecks)

	before := requestCounts(ctx, cfg)
	cpu0 := benchutil.CPUTimes(components...)
	wait := profileAPIServer(ctx, cfg, 10, apiProfile+".distinct")
	distinct, dLat, err := benchutil.Measure(nPings, concurrency, func(i int) error { return ping(uuids[i%nChecks]) })
	if err != nil {
		return err
	}
	wait()
	mid := requestCounts(ctx, cfg)
	cpu1 := benchutil.CPUTimes(components...)
	// Every acknowledged ping must be counted: check before going on.
	var stored int64
	var list v1.CheckList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range list.Items {
		if list.Items[i].Spec.UUID != "" {
			stored += list.Items[i].Status.NPings
		}
	}
	if want := int64(nPings) + 1 + warmup; stored != want { // +1: the readiness ping
		return fmt.Errorf("n_pings adds up to %d after %d acknowledged pings", stored, want)
	}
	hotBefore := requestCounts(ctx, cfg) // without the list above
	cpuHot := benchutil.CPUTimes(components...)
	wait = profileAPIServer(ctx, cfg, 3, apiProfile+".hot")
	if hotProfile != "" {
		if f, err := os.Create(hotProfile); err == nil {
			_ = pprof.StartCPUProfile(f)
			defer f.Close()
		}
	}
	hot, hLat, err := benchutil.Measure(nPings, concurrency, func(int) error { return ping(uuids[1%nChecks]) })
	if err != nil {
		return err
	}
	if hotProfile != "" {
		pprof.StopCPUProfile()
	}
	wait()
	after := requestCounts(ctx, cfg)
	cpu2 := benchutil.CPUTimes(components...)
	fmt.Println("\nAPI-server requests per ping (verb resource/subresource):")
	for _, k := range sortedKeys(after) {
		d, h := float64(mid[k]-before[k])/float64(nPings), float64(after[k]-hotBefore[k])/float64(nPings)
		if d >= 0.005 || h >= 0.005 {
			fmt.Printf("  %-40s distinct %5.2f   hot %5.3f\n", k, d, h)
		}
	}
	fmt.Println("\nCPU time per request (ms), by process:")
	for _, k := range append([]string{"bench"}, components...) {
		per := func(a, b map[string]time.Duration) float64 {
			return float64(b[k]-a[k]) / float64(time.Millisecond) / float64(nPings)
		}
		fmt.Printf("  %-16s raw %5.2f   distinct %5.2f   hot %5.2f\n", k, per(cpuRaw0, cpuRaw1)/rawRepeats, per(cpu0, cpu1), per(cpuHot, cpu2))
	}

	fmt.Printf("\n%d checks, %d requests per phase, %d concurrent clients, GOMAXPROCS=%d\n", nChecks, nPings, concurrency, runtime.GOMAXPROCS(0))
	fmt.Printf("raw status patches   %8.0f /s   (median of %.0f, %.0f, %.0f)\n", raw, rawRounds[0], rawRounds[1], rawRounds[2])
	fmt.Printf("pings, distinct      %8.0f /s  = %.2fx raw   p50 %v  p99 %v\n", distinct, distinct/raw, benchutil.Percentile(dLat, 50), benchutil.Percentile(dLat, 99))
	fmt.Printf("pings, one hot check %8.0f /s  = %.2fx raw   p50 %v  p99 %v\n", hot, hot/raw, benchutil.Percentile(hLat, 50), benchutil.Percentile(hLat, 99))
	return nil
}

// newCheck returns a check that stays up for an hour after a ping; uuid
// may be empty.
func newCheck(ns, name, uuid string) *v1.Check {
	timeout := int64(3600)
	return &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.CheckSpec{Timeout: &timeout, Grace: 3600, TZ: "UTC", UUID: uuid}}
}

// requestCounts reads the API server's write counters by verb and resource.
func requestCounts(ctx context.Context, cfg *rest.Config) map[string]int64 {
	out := map[string]int64{}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return out
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels := map[string]string{}
		end := strings.Index(line, "}")
		for _, kv := range strings.Split(line[len("apiserver_request_total{"):end], ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				labels[k] = strings.Trim(v, `"`)
			}
		}
		if labels["verb"] == "WATCH" || labels["resource"] == "" {
			continue
		}
		n, _ := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		key := labels["verb"] + " " + labels["resource"]
		if labels["subresource"] != "" {
			key += "/" + labels["subresource"]
		}
		if labels["code"] != "200" && labels["code"] != "201" {
			key += " (" + labels["code"] + ")"
		}
		out[key] += int64(n)
	}
	return out
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
