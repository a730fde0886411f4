// Package upgrade runs the previous release of Vigil's manager against a
// real kube-apiserver with the embedded store, fills it with checks, pings,
// flips and a notification still owed, and upgrades it to this tree on the
// same volume, as the StatefulSet's rollout does, while a job keeps
// pinging: nothing is lost, the store is migrated, and pings are refused
// only while no manager runs.
package upgrade

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// binaries returns the previous release's revision and its binary, and
// this tree's: `make test` builds both before the tests run.
func binaries(t *testing.T, ctx context.Context) (rev, oldBin, newBin string) {
	t.Helper()
	rev, oldBin, err := testenv.PreviousRelease(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if newBin, err = testenv.Vigil(ctx); err != nil {
		t.Fatal(err)
	}
	return rev, oldBin, newBin
}

// TestMain runs the tests on one control plane, reset between them.
func TestMain(m *testing.M) { testenv.Main(m) }

// manager is a running `vigil manager` process.
type manager struct {
	cmd  *exec.Cmd
	out  *testenv.Output
	done chan struct{}
}

func start(t *testing.T, bin, kubeconfig, httpAddr, storeDir string) *manager {
	t.Helper()
	return startWith(t, bin, kubeconfig, httpAddr, "http://"+httpAddr, "sqlite:"+filepath.Join(storeDir, "vigil.db"), false)
}

// startWith starts a manager on store, serving httpAddr, its answers
// naming baseURL; with leader election for replicas.
func startWith(t *testing.T, bin, kubeconfig, httpAddr, baseURL, dsn string, leaderElect bool) *manager {
	t.Helper()
	m := &manager{out: &testenv.Output{}, done: make(chan struct{})}
	m.cmd = exec.Command(bin, "manager", fmt.Sprintf("--leader-elect=%v", leaderElect), "--http-bind-address="+httpAddr, //nolint:noctx // stopped by a signal, as the kubelet stops it
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--base-url="+baseURL,
		"--store="+dsn, "--egress-allow=127.0.0.0/8",
		"--limits-configmap="+testenv.ManagerNamespace+"/"+project.DefaultLimitsConfigMap)
	m.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "POD_NAMESPACE="+testenv.ManagerNamespace)
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.out
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = m.cmd.Wait(); close(m.done) }()
	t.Cleanup(func() {
		_ = m.cmd.Process.Kill()
		<-m.done
		if t.Failed() {
			t.Logf("%s's output:\n%s", bin, m.out.String())
		}
	})
	return m
}

// stop stops the manager as the kubelet does: SIGTERM, then wait.
func (m *manager) stop(t *testing.T) {
	t.Helper()
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the manager did not stop within 60 s of SIGTERM")
	}
}

// job pings a check every 20 ms, as a busy job would, until stopped.
type job struct {
	mu      sync.Mutex
	acked   int
	refused []refusal
	done    chan struct{}
	running sync.WaitGroup
}

// refusal is a ping not acknowledged: when it was sent (however long the
// answer took to read on a busy machine), and what came back.
type refusal struct {
	sent   time.Time
	status int
	body   string
}

func (r refusal) String() string {
	return fmt.Sprintf("%s: %d %s", r.sent.Format(time.StampMilli), r.status, r.body)
}

func startJob(ctx context.Context, pingURL string) *job {
	j := &job{done: make(chan struct{})}
	j.running.Go(func() {
		for {
			select {
			case <-j.done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			sent := time.Now()
			status, body := testenv.Call(ctx, "GET", pingURL, "", "")
			j.mu.Lock()
			if status == http.StatusOK {
				j.acked++
			} else {
				j.refused = append(j.refused, refusal{sent, status, body})
			}
			j.mu.Unlock()
		}
	})
	return j
}

// waitAcked waits until the job has had n more pings acknowledged than so
// far.
func (j *job) waitAcked(g *gomega.WithT, n int) {
	acked := func() int {
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.acked
	}
	target := acked() + n
	g.Eventually(acked).WithTimeout(time.Minute).WithPolling(10*time.Millisecond).
		Should(gomega.BeNumerically(">=", target), "the job's pings were not acknowledged")
}

// stop stops the job and returns how many pings were acknowledged and
// the refusals.
func (j *job) stop() (int, []refusal) {
	close(j.done)
	j.running.Wait()
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.acked, j.refused
}

// state is what must survive the upgrade, read through the API and from
// the store's file.
type state struct {
	Checks, NPings, Flips, Pending string
}

func TestUpgrade(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	g := gomega.NewWithT(t)
	rev, oldBin, newBin := binaries(t, ctx)

	cp := testenv.StartControlPlane(t, ctx, testenv.AsManager)
	cl, kubeconfig := cp.Client, cp.Kubeconfig
	httpAddr, err := testenv.FreeAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + httpAddr
	volume := t.TempDir()
	old := start(t, oldBin, kubeconfig, httpAddr, volume)

	// A project with a Channel whose receiver keeps failing: its
	// notification stays owed across the upgrade.
	ns := "upgrade"
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	key, err := project.CreateAPIKey(ctx, cl, ns, project.ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		attempts.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer receiver.Close()
	if err := cl.Create(ctx, &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ops"},
		Spec: v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{URL: receiver.URL + "/down"}}}}); err != nil {
		t.Fatal(err)
	}
	// The checks below take every Channel of the project ("*") as the
	// manager's cache has them: wait until it has this one.
	g.Eventually(func(g gomega.Gomega) {
		var ch v1.Channel
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ops"}, &ch)).To(gomega.Succeed())
		g.Expect(ch.Status.ObservedGeneration).To(gomega.Equal(ch.Generation))
	}).WithTimeout(time.Minute).WithPolling(100*time.Millisecond).Should(gomega.Succeed(), "the manager never reconciled the Channel")
	create := func(name string) (uuid, pingURL string) {
		t.Helper()
		var body string
		g.Eventually(func() int {
			var status int
			status, body = testenv.Call(ctx, "POST", base+"/api/v3/checks/", key, fmt.Sprintf(`{"name": %q, "timeout": 3600, "channels": "*"}`, name))
			return status
		}).WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).Should(gomega.Equal(http.StatusCreated),
			func() string { return fmt.Sprintf("creating %s: %s", name, body) })
		var c struct {
			UUID    string `json:"uuid"`
			PingURL string `json:"ping_url"`
		}
		if err := json.Unmarshal([]byte(body), &c); err != nil {
			t.Fatal(err)
		}
		return c.UUID, c.PingURL
	}
	backup, backupURL := create("backup")
	jobUUID, jobURL := create("job")
	for i := range 5 {
		if status, body := testenv.Call(ctx, "POST", backupURL, "", fmt.Sprintf("run %d", i)); status != http.StatusOK {
			t.Fatalf("ping %d: %d %s", i, status, body)
		}
	}
	if status, body := testenv.Call(ctx, "POST", backupURL+"/fail", "", "disk full"); status != http.StatusOK {
		t.Fatalf("fail ping: %d %s", status, body)
	}
	g.Eventually(attempts.Load).WithTimeout(time.Minute).WithPolling(100*time.Millisecond).
		ShouldNot(gomega.BeZero(), "the down was never sent to the Channel")
	read := func() state {
		t.Helper()
		var s state
		_, s.Checks = testenv.Call(ctx, "GET", base+"/api/v3/checks/"+backup, key, "")
		_, s.Flips = testenv.Call(ctx, "GET", base+"/api/v3/checks/"+backup+"/flips/", key, "")
		_, s.NPings = testenv.Call(ctx, "GET", base+"/api/v3/checks/"+backup+"/pings/", key, "")
		db, err := sql.Open("sqlite", "file:"+filepath.Join(volume, "vigil.db")+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var pending int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM deliveries WHERE state = 'pending'`).Scan(&pending); err != nil {
			t.Fatal(err)
		}
		s.Pending = fmt.Sprint(pending)
		return s
	}
	before := read()
	if !strings.Contains(before.Checks, `"status":"down"`) || !strings.Contains(before.Checks, `"n_pings":6`) || before.Pending != "1" {
		t.Fatalf("before the upgrade: %+v", before)
	}

	// A job pings all through the rollout, the old manager counting some
	// of its pings first.
	job := startJob(ctx, jobURL)
	job.waitAcked(g, 1)
	stopping := time.Now()
	old.stop(t)
	next := start(t, newBin, kubeconfig, httpAddr, volume)
	g.Eventually(func() int {
		status, _ := testenv.Call(ctx, "GET", base+"/api/v3/checks/", key, "")
		return status
	}).WithTimeout(2*time.Minute).WithPolling(50*time.Millisecond).Should(gomega.Equal(http.StatusOK), "the new manager never answered")
	serving := time.Now()
	// Deliberately a stretch of time, not an event: the job keeps pinging
	// the new manager for a second, in which no ping may be refused.
	time.Sleep(time.Second)
	acked, refused := job.stop()
	t.Logf("upgraded from %s: the rollout took %s; %d pings acknowledged, %d refused", rev, serving.Sub(stopping), acked, len(refused))
	for _, r := range refused {
		if r.sent.Before(stopping) || r.sent.After(serving) {
			t.Errorf("a ping refused outside the rollout (%s to %s): %s", stopping.Format(time.StampMilli), serving.Format(time.StampMilli), r)
		}
	}

	after := read()
	if after != before {
		t.Errorf("the check changed across the upgrade:\nbefore %+v\nafter  %+v", before, after)
	}
	if _, body := testenv.Call(ctx, "GET", base+"/api/v3/checks/"+jobUUID, key, ""); !strings.Contains(body, fmt.Sprintf(`"n_pings":%d`, acked)) {
		t.Errorf("the job's check after the upgrade: %s; want every one of its %d acknowledged pings", body, acked)
	}
	info, err := store.Inspect(ctx, filepath.Join(volume, "vigil.db"))
	if err != nil || info.Version != store.SchemaVersion() {
		t.Errorf("the store after the upgrade: %+v, %v; want schema %d", info, err, store.SchemaVersion())
	}
	// And the new manager works on what it inherited: a success brings
	// the check up.
	if status, body := testenv.Call(ctx, "POST", backupURL, "", "fixed"); status != http.StatusOK {
		t.Fatalf("a ping after the upgrade: %d %s", status, body)
	}
	if _, body := testenv.Call(ctx, "GET", base+"/api/v3/checks/"+backup, key, ""); !strings.Contains(body, `"status":"up"`) || !strings.Contains(body, `"n_pings":7`) {
		t.Errorf("after a success on the new manager: %s", body)
	}
	next.stop(t)
}

// service spreads requests over the running replicas, as a Service does,
// and tries the next one when one refuses the connection (a replica that
// is stopping), as a client's retry through kube-proxy would.
type service struct {
	mu       sync.Mutex
	backends []string
	next     int
}

func (s *service) set(backends ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.backends = backends
}

func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	backends := append([]string(nil), s.backends...)
	first := s.next
	s.next++
	s.mu.Unlock()
	var last error
	for i := range backends {
		b := backends[(first+i)%len(backends)]
		req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+b+r.URL.RequestURI(), strings.NewReader(string(body)))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if errors.Is(err, syscall.ECONNREFUSED) {
			last = err // a stopped replica: it saw nothing of the request
			continue
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		_ = resp.Body.Close()
		return
	}
	http.Error(w, fmt.Sprint("no replica answered: ", last), http.StatusBadGateway)
}

// TestRollingUpgradePostgres: two replicas of the previous release on
// PostgreSQL, upgraded one at a time to this tree while a job pings through
// the Service: not one ping is refused, and every one is counted.
func TestRollingUpgradePostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	g := gomega.NewWithT(t)
	rev, oldBin, newBin := binaries(t, ctx)

	dsn := testenv.PostgresDatabase(t)
	// The chart's PostgreSQL-mode RBAC: the leader-election Role too.
	cp := testenv.StartControlPlane(t, ctx, func(ctx context.Context, admin *rest.Config) (*rest.Config, *testenv.Forbidden, error) {
		return testenv.AsChartManager(ctx, admin, "--set", "store.postgres.existingSecret=vigil-postgres")
	})
	cl, kubeconfig := cp.Client, cp.Kubeconfig
	addrs := make([]string, 2)
	for i := range addrs {
		var err error
		if addrs[i], err = testenv.FreeAddr(ctx); err != nil {
			t.Fatal(err)
		}
	}
	svc := &service{}
	svc.set(addrs...)
	front := httptest.NewServer(svc)
	defer front.Close()
	replicas := make([]*manager, 2)
	for i, a := range addrs {
		replicas[i] = startWith(t, oldBin, kubeconfig, a, front.URL, dsn, true)
	}
	ns := "rolling"
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	key, err := project.CreateAPIKey(ctx, cl, ns, project.ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	ready := func(addr string) {
		t.Helper()
		g.Eventually(func() int {
			status, _ := testenv.Call(ctx, "GET", "http://"+addr+"/api/v3/checks/", key, "")
			return status
		}).WithTimeout(2*time.Minute).WithPolling(100*time.Millisecond).Should(gomega.Equal(http.StatusOK), "the replica at %s never answered", addr)
	}
	for _, a := range addrs {
		ready(a)
	}
	status, body := testenv.Call(ctx, "POST", front.URL+"/api/v3/checks/", key, `{"name": "job", "timeout": 3600}`)
	if status != http.StatusCreated {
		t.Fatalf("creating a check: %d %s", status, body)
	}
	var job struct {
		UUID    string `json:"uuid"`
		PingURL string `json:"ping_url"`
	}
	if err := json.Unmarshal([]byte(body), &job); err != nil {
		t.Fatal(err)
	}

	pings := startJob(ctx, job.PingURL)
	// One replica at a time: stop it, start this version in its place,
	// wait until it answers, then the next. Before each stop, the job's
	// pings first go through the replicas as they run then: two more
	// acknowledged, one by each as the Service alternates.
	started := time.Now()
	for i, a := range addrs {
		pings.waitAcked(g, 2)
		replicas[i].stop(t)
		replicas[i] = startWith(t, newBin, kubeconfig, a, front.URL, dsn, true)
		ready(a)
	}
	// Deliberately a stretch of time, not an event: the job keeps pinging
	// the upgraded replicas for a second, in which no ping may be refused.
	time.Sleep(time.Second)
	acked, refused := pings.stop()
	t.Logf("upgraded two replicas from %s in %s: %d pings acknowledged, %d refused", rev, time.Since(started), acked, len(refused))
	if len(refused) > 0 {
		t.Errorf("pings refused during the rolling upgrade: %v", refused)
	}
	if _, body := testenv.Call(ctx, "GET", front.URL+"/api/v3/checks/"+job.UUID, key, ""); !strings.Contains(body, fmt.Sprintf(`"n_pings":%d`, acked)) {
		t.Errorf("the check after the upgrade: %s; want every one of its %d acknowledged pings", body, acked)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version int64
	if err := db.QueryRowContext(ctx, `SELECT MAX(version_id) FROM goose_db_version WHERE is_applied`).Scan(&version); err != nil || version != store.SchemaVersion() {
		t.Errorf("the database's schema %d, %v; want %d", version, err, store.SchemaVersion())
	}
	for _, r := range replicas {
		r.stop(t)
	}
}
