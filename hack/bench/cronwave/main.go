// Command cronwave measures a :00 wave of CronJob runs on a whole cluster:
// K CronJobs, each with its Check (the annotation monitoring.vigil.dev/check),
// all scheduled for the same minute, on a control plane with
// kube-controller-manager (the CronJob and Job controllers), kube-scheduler
// and a node simulated by kwok, where each pod succeeds a few seconds after
// it starts (config/dev/kwok-stages.yaml), and the manager in this process.
// Nothing is written for the cluster: the CronJob controller makes the
// Jobs, the Job controller the pods, the scheduler binds them, kwok runs
// them. It prints when the Jobs were made and ended after the minute
// began, and when Vigil had recorded each run (its start and its success),
// after the minute and after the run's end.
//
// Run: go run ./hack/bench/cronwave -cronjobs 1000 (make bench-cronwave).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/hack/bench/internal/benchutil"
	"github.com/vigil-operator/vigil/internal/controller"
	"github.com/vigil-operator/vigil/internal/devenv"
	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/scheme"
	"github.com/vigil-operator/vigil/internal/testenv"
)

func main() {
	k := flag.Int("cronjobs", 1000, "CronJobs, each with its Check, all scheduled for the same minute")
	m := flag.Int("namespaces", 10, "namespaces the CronJobs are spread over")
	qps := flag.Int("controller-manager-qps", 200, "kube-controller-manager's client budget, requests a second (its own default is 20)")
	lead := flag.Duration("lead", 0, "time to make the CronJobs and their Checks before the wave's minute (0: 2 minutes and 15 ms a CronJob)")
	flag.StringVar(&heapProfile, "heap-profile", "", "write a heap profile after the wave to this file (go tool pprof -sample_index=inuse_space)")
	flag.Parse()
	if *lead <= 0 {
		// 10,000 CronJobs and their Checks took 2 min 9 s to make on 2
		// cores: the default leaves room for as much again.
		*lead = 2*time.Minute + time.Duration(*k)*15*time.Millisecond
	}
	ctrllog.SetLogger(logr.Discard())
	if err := run(*k, *m, *qps, *lead); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// heapProfile is where the heap profile after the wave goes ("": none).
var heapProfile string

func run(k, m, qps int, lead time.Duration) (err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	assets, err := testenv.Assets()
	if err != nil {
		return err
	}
	kwok, err := testenv.Tool("kwok")
	if err != nil {
		return fmt.Errorf("kwok (make dev or make test builds it): %w", err)
	}
	addr, err := testenv.FreeAddr(ctx)
	if err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(addr)
	apiPort, _ := strconv.Atoi(port)
	dir, err := os.MkdirTemp("", "vigil-cronwave-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	fmt.Println("starting the control plane (kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kwok)...")
	cp, err := testenv.StartDev(ctx, devenv.Options{
		Dir: dir, Assets: assets, CRDDir: filepath.Join(root, "config", "crd", "bases"), APIServerPort: apiPort,
		Namespace: "default", Progress: os.Stdout, Kwok: kwok, KwokStages: filepath.Join(root, "config", "dev", "kwok-stages.yaml"),
		ControllerManagerArgs: []string{fmt.Sprintf("--kube-api-qps=%d", qps), fmt.Sprintf("--kube-api-burst=%d", 2*qps)},
	})
	defer func() {
		if stopErr := cp.Stop(); err == nil {
			err = stopErr
		}
	}()
	if err != nil {
		return err
	}
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	namespaces := make([]string, m)
	for i := range namespaces {
		namespaces[i] = fmt.Sprintf("team-%03d", i)
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaces[i]}}); err != nil {
			return err
		}
	}
	httpAddr, err := testenv.FreeAddr(ctx)
	if err != nil {
		return err
	}
	mgr, stop, err := benchutil.StartManager(ctx, cfg, manager.Options{Store: benchutil.TempStore(), HTTPAddr: httpAddr,
		BaseURL: "http://" + httpAddr, MetricsAddr: "0", ProbeAddr: "0", CheckLimit: k, CronJobTimeZone: "UTC"})
	if err != nil {
		return err
	}
	defer stop()
	before := heapNow()

	// The wave's minute: the CronJobs run then, and next an hour later, so
	// that nothing runs before it (a missed run would start at once).
	wave := time.Now().Add(lead).Truncate(time.Minute).Add(time.Minute)
	fmt.Printf("creating %d CronJobs over %d namespaces, each to run at %s...\n", k, m, wave.Format("15:04:05"))
	err = benchutil.Parallel(k, 32, func(i int) error {
		return c.Create(ctx, cronJob(namespaces[i%m], i, wave.Minute()))
	})
	if err != nil {
		return err
	}
	fmt.Println("waiting for every CronJob's Check...")
	checks, err := waitChecks(ctx, c, k, time.Until(wave))
	if err != nil {
		return fmt.Errorf("%w (give more -lead)", err)
	}
	fmt.Printf("all %d Checks ready %v before the wave; waiting for it...\n", k, time.Until(wave).Round(time.Second))

	// Each run is recorded when the store counts it succeeded (its start
	// and its success); looked at every 100 ms, a namespace's rows at a time (the
	// store's copy follows its changes feed: a look costs what changed
	// since the last, not a read of each check).
	recorded := map[types.UID]time.Time{}
	deadline := wave.Add(15 * time.Minute)
	for len(recorded) < len(checks) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d runs recorded 15 minutes after the wave", len(recorded), len(checks))
		}
		time.Sleep(100 * time.Millisecond)
		if time.Now().Before(wave) {
			continue
		}
		for _, ns := range namespaces {
			obs, err := mgr.Store.ChecksIn(ctx, ns)
			if err != nil {
				return err
			}
			for uid, o := range obs.All() {
				if _, ok := recorded[uid]; !ok && o.RunCounts.Succeeded > 0 {
					recorded[uid] = time.Now()
				}
			}
		}
	}
	after := heapNow()
	// Runs the store also counts failed or missed: a Job whose pods could
	// not run for NotStartedAfter is told as a failure (then its success
	// still counts), a check whose run came past its grace as missed.
	var failed, missed int64
	for _, ns := range namespaces {
		obs, err := mgr.Store.ChecksIn(ctx, ns)
		if err != nil {
			return err
		}
		for _, o := range obs.All() {
			failed, missed = failed+o.RunCounts.Failed, missed+o.RunCounts.Missed
		}
	}
	if heapProfile != "" {
		if err := benchutil.WriteHeapProfile(heapProfile); err != nil {
			return err
		}
	}

	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs); err != nil {
		return err
	}
	ended := map[string]time.Time{} // by namespace/CronJob
	var made, done []time.Duration
	for _, j := range jobs.Items {
		made = append(made, j.CreationTimestamp.Sub(wave))
		if j.Status.CompletionTime != nil {
			done = append(done, j.Status.CompletionTime.Sub(wave))
			if ref := metav1.GetControllerOf(&j); ref != nil {
				ended[j.Namespace+"/"+ref.Name] = j.Status.CompletionTime.Time
			}
		}
	}
	var afterWave, afterEnd []time.Duration
	var list v1.CheckList
	if err := c.List(ctx, &list); err != nil {
		return err
	}
	for _, ch := range list.Items {
		at, ok := recorded[ch.UID]
		if !ok || ch.Spec.CronJobRef == nil {
			continue
		}
		afterWave = append(afterWave, at.Sub(wave))
		if end, ok := ended[ch.Namespace+"/"+ch.Spec.CronJobRef.Name]; ok {
			afterEnd = append(afterEnd, at.Sub(end))
		}
	}
	fmt.Printf("\n%d CronJobs over %d namespaces, every one due at the same minute; kube-controller-manager at %d requests/s; GOMAXPROCS=%d, SQLite store\n",
		k, m, qps, runtime.GOMAXPROCS(0))
	fmt.Println("| after the minute began | first | p50 | p99 | last |")
	fmt.Println("|---|---|---|---|---|")
	row := func(what string, d []time.Duration) {
		if len(d) == 0 {
			fmt.Printf("| %s | none | | | |\n", what)
			return
		}
		slices.Sort(d)
		fmt.Printf("| %s (%d) | %v | %v | %v | %v |\n", what, len(d), d[0].Round(100*time.Millisecond),
			benchutil.Percentile(d, 50).Round(100*time.Millisecond), benchutil.Percentile(d, 99).Round(100*time.Millisecond),
			d[len(d)-1].Round(100*time.Millisecond))
	}
	row("Jobs made by kube-controller-manager", made)
	row("runs ended (the Job's completion time)", done)
	row("runs recorded by Vigil (start and success)", afterWave)
	fmt.Printf("(the store also counts %d runs failed and %d missed)\n", failed, missed)
	fmt.Println("\n(the Jobs' times are the API server's, whole seconds)")
	row("Vigil's recording after each run's end", afterEnd)
	fmt.Printf("\nthis process (the manager, and the benchmark's few maps) after the wave, with %d CronJobs, their Checks and %d Jobs:\n", k, len(jobs.Items))
	fmt.Printf("heap %.0f MiB (%.0f MiB before the CronJobs) = %.1f KiB per CronJob; RSS %.0f MiB (%.0f MiB before) = %.1f KiB per CronJob\n",
		mib(after.heap), mib(before.heap), (after.heap-before.heap)/float64(k)/1024, mib(after.rss), mib(before.rss), (after.rss-before.rss)/float64(k)/1024)
	return nil
}

// memory is this process's heap in use, after two collections, and its
// resident memory, in bytes.
type memory struct{ heap, rss float64 }

func heapNow() memory {
	return memory{heap: float64(benchutil.LiveHeap()), rss: float64(benchutil.SelfRSS())}
}

func mib(b float64) float64 { return b / (1 << 20) }

// cronJob is an hourly CronJob at the given minute that asks for a Check;
// its pod succeeds on the simulated node a few seconds after it starts.
func cronJob(ns string, i, minute int) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("sync-%05d", i),
			Annotations: map[string]string{controller.AnnotationCheck: "true"}},
		Spec: batchv1.CronJobSpec{Schedule: fmt.Sprintf("%d * * * *", minute), JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "sync", Image: "registry.example/sync:1"}}}}}}},
	}
}

// waitChecks waits until want Checks are reconciled, within timeout, and
// returns their UIDs.
func waitChecks(ctx context.Context, c client.Client, want int, timeout time.Duration) ([]types.UID, error) {
	deadline := time.Now().Add(timeout)
	for {
		var list v1.CheckList
		if err := c.List(ctx, &list); err != nil {
			return nil, err
		}
		var ready []types.UID
		for i := range list.Items {
			if benchutil.Reconciled(&list.Items[i]) && list.Items[i].Generation > 0 {
				ready = append(ready, list.Items[i].UID)
			}
		}
		if len(ready) >= want {
			return ready, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d checks ready before the wave", len(ready), want)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
