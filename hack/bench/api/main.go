// Command api measures the Management API with many checks in a project,
// against a real kube-apiserver and etcd (envtest), next to the raw rate
// the same API server takes Check writes at, measured in the same run:
//
//   - raw create: Check objects created directly;
//   - API create: POST /api/v3/checks/ (validation, the write, and the wait
//     until the cache has it, so a read right after sees it);
//   - API update: POST /api/v3/checks/<uuid>;
//   - list: GET /api/v3/checks/ with N checks, p50 and p99;
//   - the project's Prometheus scrape, and the dashboard's board (signed in
//     as a browser is): its first page, a search, a filtered later page
//     and the live part its script refetches.
//
// Run: go run ./hack/bench/api [-checks 10000] (make bench-api).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/hack/bench/internal/benchutil"
	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/testenv"
)

func main() {
	n := flag.Int("checks", 10000, "checks in the project")
	writes := flag.Int("writes", 500, "API creates and updates measured")
	concurrency := flag.Int("concurrency", 16, "concurrent clients")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the API phase (client and manager) to the file")
	flag.Parse()
	profile = *cpuprofile
	ctrllog.SetLogger(logr.Discard())
	if err := run(*n, *writes, *concurrency); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

var profile string

func run(n, writes, concurrency int) error {
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := "bench"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vigil-project",
		Labels: map[string]string{project.SecretLabel: "true"}}}
	if err := c.Create(ctx, secret); err != nil {
		return err
	}
	key, err := project.CreateAPIKey(ctx, c, ns, project.ReadWrite)
	if err != nil {
		return err
	}
	readOnly, err := project.CreateAPIKey(ctx, c, ns, project.ReadOnly)
	if err != nil {
		return err
	}

	fmt.Printf("creating %d checks directly (the raw rate)...\n", n)
	timeout := int64(3600)
	raw, _, err := benchutil.Measure(n, concurrency, func(i int) error {
		return c.Create(ctx, &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%05d", i)},
			Spec: v1.CheckSpec{Name: fmt.Sprintf("check %d", i), Tags: "bench", Timeout: &timeout, Grace: 3600, TZ: "UTC"}})
	})
	if err != nil {
		return err
	}

	addr, err := testenv.FreeAddr(ctx)
	if err != nil {
		return err
	}
	mgr, err := manager.New(ctx, cfg, manager.Options{Store: benchutil.TempStore(), HTTPAddr: addr, BaseURL: "http://" + addr, MetricsAddr: "0", ProbeAddr: "0", CheckLimit: 1000000})
	if err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	base := "http://" + addr + "/api/v3"
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency * 2}}
	// doInto makes a request and reads its answer into into.
	doInto := func(into *bytes.Buffer, method, url, body string) ([]byte, int, error) {
		req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewBufferString(body))
		if err != nil {
			return nil, 0, err
		}
		req.Header.Set("X-Api-Key", key)
		resp, err := hc.Do(req)
		if err != nil {
			return nil, 0, err
		}
		defer resp.Body.Close()
		_, err = into.ReadFrom(resp.Body)
		return into.Bytes(), resp.StatusCode, err
	}
	do := func(method, url, body string) ([]byte, int, error) {
		return doInto(new(bytes.Buffer), method, url, body)
	}
	for {
		if _, status, err := do(http.MethodGet, base+"/checks/?slug=none", ""); err == nil && status == http.StatusOK {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The controller reconciles every existing check once at start (status,
	// conditions); measure after that, as a running cluster would be.
	fmt.Println("waiting for the controller to reconcile every check...")
	if err := benchutil.WaitAll(ctx, mgr.GetCache(), ns, 0, benchutil.Reconciled); err != nil {
		return err
	}
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return err
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	// The list's time is its last byte's: the client in this process
	// counts the checks in the answer (each has one "update_url") rather
	// than decode its megabytes, which would time the client's JSON decoder
	// on the same two cores. The first answer is decoded once, to be sure
	// it is the whole list.
	//
	// The manager keeps each check's JSON between lists and renders again
	// only what changed: the first list renders all 10,000 and is printed
	// apart; the 20 measured after it are a client listing again, as a
	// Terraform refresh or a poller does.
	//
	// The answer is read into one buffer used again: in production the
	// client is another process, and 20 answers of 8.7 MB grown anew
	// would be the manager's garbage to collect here.
	listBytes := 0
	var answer bytes.Buffer
	list := func() ([]byte, int, error) {
		answer.Reset()
		return doInto(&answer, http.MethodGet, base+"/checks/", "")
	}
	_, firstLat, err := benchutil.Measure(1, 1, func(int) error {
		_, status, err := list()
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("list answered %d", status)
		}
		return err
	})
	if err != nil {
		return err
	}
	_, listLat, err := benchutil.Measure(20, 1, func(int) error {
		b, status, err := list()
		if err != nil {
			return err
		}
		if got := bytes.Count(b, []byte(`"update_url":`)); status != http.StatusOK || got < n {
			return fmt.Errorf("list answered %d with %d checks", status, got)
		}
		listBytes = len(b)
		return nil
	})
	if err != nil {
		return err
	}
	whole, _, err := do(http.MethodGet, base+"/checks/", "")
	if err != nil {
		return err
	}
	var decoded struct{ Checks []json.RawMessage }
	if err := json.Unmarshal(whole, &decoded); err != nil {
		return fmt.Errorf("the list is not JSON: %w", err)
	}
	if len(decoded.Checks) < n {
		return fmt.Errorf("the list holds %d checks, want %d", len(decoded.Checks), n)
	}
	scrapeBytes := 0
	_, scrapeLat, err := benchutil.Measure(20, 1, func(int) error {
		b, status, err := do(http.MethodGet, "http://"+addr+"/projects/"+project.UUID(ns)+"/metrics/"+readOnly, "")
		if err != nil {
			return err
		}
		if up := bytes.Count(b, []byte("\nhc_check_up{")); status != http.StatusOK || up < n {
			return fmt.Errorf("metrics answered %d with %d checks", status, up)
		}
		scrapeBytes = len(b)
		return nil
	})
	if err != nil {
		return err
	}
	board, err := measureDashboard(ctx, "http://"+addr, readOnly, n)
	if err != nil {
		return err
	}
	uuids := make([]string, writes)
	apiCreate, createLat, err := benchutil.Measure(writes, concurrency, func(i int) error {
		b, status, err := do(http.MethodPost, base+"/checks/", fmt.Sprintf(`{"name": "api %d", "timeout": 3600}`, i))
		if err != nil {
			return err
		}
		var out struct{ UUID string }
		if status != http.StatusCreated || json.Unmarshal(b, &out) != nil {
			return fmt.Errorf("create answered %d: %s", status, b)
		}
		uuids[i] = out.UUID
		return nil
	})
	if err != nil {
		return err
	}
	apiUpdate, updateLat, err := benchutil.Measure(writes, concurrency, func(i int) error {
		b, status, err := do(http.MethodPost, base+"/checks/"+uuids[i], `{"grace": 600, "tags": "updated"}`)
		if err != nil {
			return err
		}
		if status != http.StatusOK {
			return fmt.Errorf("update answered %d: %s", status, b)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("\n%d checks in the project, %d concurrent writers, GOMAXPROCS=%d\n", n, concurrency, runtime.GOMAXPROCS(0))
	fmt.Printf("raw Check creates      %7.0f /s\n", raw)
	fmt.Printf("API create             %7.0f /s = %.2fx raw   p50 %v  p99 %v\n", apiCreate, apiCreate/raw, benchutil.Percentile(createLat, 50), benchutil.Percentile(createLat, 99))
	fmt.Printf("API update             %7.0f /s = %.2fx raw   p50 %v  p99 %v\n", apiUpdate, apiUpdate/raw, benchutil.Percentile(updateLat, 50), benchutil.Percentile(updateLat, 99))
	fmt.Printf("API list (%d checks, %.1f MB)  p50 %v  p99 %v  (the first, every check rendered: %v)\n", n, float64(listBytes)/1e6,
		benchutil.Percentile(listLat, 50), benchutil.Percentile(listLat, 99), firstLat[0])
	fmt.Printf("Prometheus scrape (%d checks, %.1f MB)  p50 %v  p99 %v\n", n, float64(scrapeBytes)/1e6,
		benchutil.Percentile(scrapeLat, 50), benchutil.Percentile(scrapeLat, 99))
	for _, b := range board {
		fmt.Printf("dashboard %-28s p50 %v  p99 %v  %.0f kB\n", b.what, benchutil.Percentile(b.lat, 50),
			benchutil.Percentile(b.lat, 99), float64(b.bytes)/1e3)
	}
	return nil
}

// boardTiming is one dashboard page's latencies and size.
type boardTiming struct {
	what  string
	lat   []time.Duration
	bytes int
}

// measureDashboard signs in to the dashboard as a browser does and times
// the board of the n-check project: its first page, a search, a tag
// filter on a later page sorted by status, and the live part the page's
// script refetches.
func measureDashboard(ctx context.Context, base, key string, n int) ([]boardTiming, error) {
	d, err := benchutil.SignIn(ctx, base, key)
	if err != nil {
		return nil, err
	}
	pages := []struct{ what, path, want string }{
		{fmt.Sprintf("board (%d checks, page 1)", n), "/", "Checks 1–100 of " + strconv.Itoa(n)},
		{"search ?q=check 99", "/?q=check+99", "of 111"},
		{"tag + status sort, page 50", "/?tag=bench&sort=status&page=50", "Checks 4901–5000"},
		{"live part (every 5 s)", "/", "Checks 1–100"},
	}
	var out []boardTiming
	for i, pg := range pages {
		var header []string
		if i == len(pages)-1 {
			header = benchutil.Fragment
		}
		t := boardTiming{what: pg.what}
		_, t.lat, err = benchutil.Measure(20, 1, func(int) error {
			b, err := d.Get(ctx, pg.path, header...)
			if err == nil && !bytes.Contains(b, []byte(pg.want)) {
				err = fmt.Errorf("%s does not say %q", pg.path, pg.want)
			}
			t.bytes = len(b)
			return err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
