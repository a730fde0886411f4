// Command jobs measures a :00 wave of CronJob runs: K CronJobs, each with
// its Check (the annotation monitoring.vigil.dev/check), whose runs all
// start and end at once, against a real kube-apiserver and etcd (envtest,
// where no Job controller runs: the command writes each Job as
// kube-controller-manager would, created, then its status ended), with the
// manager in this process. Two figures for each of one Job worker and the
// default, in one run, a wave each on the same CronJobs:
//   - live: the wave written while the manager runs; how long after the
//     last Job was written every run (a start and a success ping) was
//     recorded. The API server's write rate paces it.
//   - backlog: the wave written while no manager runs (a restart or a new
//     leader at :00); how long the manager takes from its cache's sync to
//     record every run, and the runs a second: the Job controller's own
//     pace.
//
// Run: go run ./hack/bench/jobs -cronjobs 1000 -namespaces 10 (make bench-jobs).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/hack/bench/internal/benchutil"
	"github.com/vigil-operator/vigil/internal/controller"
	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/testenv"
)

func main() {
	k := flag.Int("cronjobs", 1000, "CronJobs, each with its Check, whose runs make the wave")
	m := flag.Int("namespaces", 10, "namespaces the CronJobs are spread over")
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	if err := run(*k, *m); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// wave is one wave's figures.
type wave struct {
	workers int
	// written: writing every Job; sync: a backlog's manager, from its
	// start to its cache's sync; lag: then until every run was recorded.
	written, sync, lag time.Duration
}

func run(k, m int) error {
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
	fmt.Printf("creating %d CronJobs over %d namespaces...\n", k, m)
	cronJobs := make([]*batchv1.CronJob, k)
	err = benchutil.Parallel(k, 32, func(i int) error {
		cronJobs[i] = cronJob(namespaces[i%m], i)
		return c.Create(ctx, cronJobs[i])
	})
	if err != nil {
		return err
	}
	addr, err := testenv.FreeAddr(ctx)
	if err != nil {
		return err
	}
	base := manager.Options{Store: benchutil.TempStore(), HTTPAddr: addr, BaseURL: "http://" + addr, MetricsAddr: "0", ProbeAddr: "0",
		StatusBudget: 1000, CheckLimit: k, SharedProcess: true} // one manager after the other
	var uids []types.UID
	var waves []wave
	n := 0
	for _, workers := range []int{1, controller.DefaultJobWorkers} {
		opts := base
		opts.JobWorkers = workers
		mgr, stop, err := benchutil.StartManager(ctx, cfg, opts)
		if err != nil {
			return err
		}
		if uids == nil {
			fmt.Println("waiting for every CronJob's Check...")
			for _, ns := range namespaces {
				got, err := waitChecks(ctx, c, ns, k/m+boolInt(k%m > indexOf(namespaces, ns)), benchutil.Reconciled)
				if err != nil {
					stop()
					return fmt.Errorf("namespace %s: %w", ns, err)
				}
				uids = append(uids, got...)
			}
		}
		fmt.Printf("a live wave of %d runs with %d Job worker(s)...\n", k, workers)
		began := time.Now()
		if err := writeWave(ctx, c, cronJobs, n); err != nil {
			stop()
			return err
		}
		live := wave{workers: workers, written: time.Since(began)}
		err = waitRecorded(ctx, mgr, uids, n)
		live.lag = time.Since(began) - live.written
		stop()
		if err != nil {
			return err
		}
		n++

		fmt.Printf("a backlog of %d runs with %d Job worker(s)...\n", k, workers)
		began = time.Now()
		if err := writeWave(ctx, c, cronJobs, n); err != nil {
			return err
		}
		backlog := wave{workers: workers, written: time.Since(began)}
		began = time.Now()
		mgr, stop, err = benchutil.StartManager(ctx, cfg, opts)
		if err != nil {
			return err
		}
		synced := time.Now()
		err = waitRecorded(ctx, mgr, uids, n)
		backlog.sync, backlog.lag = synced.Sub(began), time.Since(synced)
		stop()
		if err != nil {
			return err
		}
		n++
		waves = append(waves, live, backlog)
	}

	fmt.Printf("\n%d CronJobs over %d namespaces, a run each at once, GOMAXPROCS=%d, SQLite store\n", k, m, runtime.GOMAXPROCS(0))
	fmt.Println("| Job workers | live: writing the Jobs | live: then until every run was recorded | backlog: cache sync | backlog: every run recorded | backlog: runs a second |")
	fmt.Println("|---|---|---|---|---|---|")
	for i := 0; i+1 < len(waves); i += 2 {
		live, backlog := waves[i], waves[i+1]
		fmt.Printf("| %d | %v | %v | %v | %v | %.0f |\n", live.workers, live.written.Round(100*time.Millisecond), live.lag.Round(100*time.Millisecond),
			backlog.sync.Round(100*time.Millisecond), backlog.lag.Round(100*time.Millisecond), float64(k)/backlog.lag.Seconds())
	}
	if len(waves) == 4 {
		fmt.Printf("backlog with %d workers / with 1: %.2fx the time\n", waves[3].workers, waves[3].lag.Seconds()/waves[1].lag.Seconds())
	}
	return nil
}

// writeWave writes the n-th run of every CronJob, started and ended.
func writeWave(ctx context.Context, c client.Client, cronJobs []*batchv1.CronJob, n int) error {
	start := metav1.NewTime(time.Now().Truncate(time.Second))
	done := metav1.NewTime(start.Add(42 * time.Second))
	return benchutil.Parallel(len(cronJobs), 32, func(i int) error {
		cj := cronJobs[i]
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: cj.Namespace, Name: fmt.Sprintf("%s-%d", cj.Name, n),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID, Controller: ptr.To(true)}}},
			Spec: cj.Spec.JobTemplate.Spec}
		if err := c.Create(ctx, j); err != nil {
			return err
		}
		j.Status.StartTime, j.Status.CompletionTime, j.Status.Succeeded = &start, &done, 1
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: done},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: done},
		}
		return c.Status().Update(ctx, j)
	})
}

// waitRecorded waits until the store holds both pings of every check's
// n-th run: 2*(n+1) pings a check.
func waitRecorded(ctx context.Context, mgr *manager.Manager, uids []types.UID, n int) error {
	want := int64(2 * (n + 1))
	deadline := time.Now().Add(15 * time.Minute)
	waiting := uids
	for len(waiting) > 0 {
		var still []types.UID
		for _, uid := range waiting {
			o, _, err := mgr.Store.Check(ctx, uid)
			if err != nil {
				return err
			}
			if o.NPings < want {
				still = append(still, uid)
			}
		}
		waiting = still
		if len(waiting) > 0 && time.Now().After(deadline) {
			return fmt.Errorf("%d runs not recorded after 15 minutes", len(waiting))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// cronJob is an hourly CronJob that asks for a Check.
func cronJob(ns string, i int) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("sync-%05d", i),
			Annotations: map[string]string{controller.AnnotationCheck: "true"}},
		Spec: batchv1.CronJobSpec{Schedule: "0 * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "sync", Image: "registry.example/sync:1"}}}}}}},
	}
}

// waitChecks waits until the namespace has want checks, each ok, and
// returns their UIDs.
func waitChecks(ctx context.Context, r client.Reader, ns string, want int, ok func(*v1.Check) bool) ([]types.UID, error) {
	deadline := time.Now().Add(15 * time.Minute)
	for {
		var list v1.CheckList
		if err := r.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		var ready []types.UID
		for i := range list.Items {
			if ok(&list.Items[i]) {
				ready = append(ready, list.Items[i].UID)
			}
		}
		if len(ready) >= want {
			return ready, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d checks after 15 minutes", len(ready), want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
