// Package manager wires Vigil's manager: the controller-runtime manager with
// its cache, the controllers (leader-elected) and the HTTP server (every
// replica).
package manager

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsfilters "sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/vigil-operator/vigil/internal/api"
	"github.com/vigil-operator/vigil/internal/cachewait"
	"github.com/vigil-operator/vigil/internal/checkindex"
	"github.com/vigil-operator/vigil/internal/controller"
	"github.com/vigil-operator/vigil/internal/delivery"
	"github.com/vigil-operator/vigil/internal/heartbeat"
	"github.com/vigil-operator/vigil/internal/history"
	"github.com/vigil-operator/vigil/internal/httpserver"
	"github.com/vigil-operator/vigil/internal/ping"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/runner"
	"github.com/vigil-operator/vigil/internal/scheme"
	"github.com/vigil-operator/vigil/internal/version"
)

// Options configure the manager. The zero value of a field means its default.
type Options struct {
	// MetricsAddr is where Prometheus metrics are served; "0" disables them.
	MetricsAddr string
	// MetricsSecure serves metrics over HTTPS behind Kubernetes
	// authentication and authorization, as in a cluster.
	MetricsSecure bool
	// ProbeAddr serves /healthz and /readyz.
	ProbeAddr string
	// HTTPAddr serves the Management API, pings and badges.
	HTTPAddr string
	// BaseURL is the address clients reach the HTTP server at, used in the
	// URLs Vigil returns (ping_url, update_url, badges).
	BaseURL string
	// LeaderElection makes the controllers run in one replica at a time.
	LeaderElection bool
	// LeaderElectionNamespace holds the lease; empty means the manager's own.
	LeaderElectionNamespace string
	// Namespaces restricts the manager to these namespaces; empty means all.
	Namespaces []string
	// Clock is the controllers' clock; nil means the real one.
	Clock clock.WithTicker

	// CheckLimit is a project's default check limit (annotations on the
	// project Secret override it); default 20, as the reference.
	CheckLimit int
	// PingLogLimit is a project's default ping-log length; default 100.
	PingLogLimit int
	// PingBodyLimit bounds a stored ping body in bytes; default ping.DefaultBodyLimit.
	PingBodyLimit int
	// TrustedProxies are the networks whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix
	// Delivery tunes notification retries.
	Delivery delivery.Options
	// SMTPAddr, when set, serves email pings there (off by default).
	SMTPAddr string
	// SMTPDomain is the domain of ping addresses (<uuid>@<domain>); default
	// the host of BaseURL.
	SMTPDomain string
	// DisableCronJobs turns the CronJob feature off: no CronJob or Job is
	// watched, and the manager needs none of internal/rbac/cronjobs.
	DisableCronJobs bool
	// HeartbeatURL, when set, is an external check the leader pings every
	// HeartbeatInterval while it is healthy (package heartbeat).
	HeartbeatURL      string
	HeartbeatInterval time.Duration
	// CronJobTimeZone is the zone of CronJobs without spec.timeZone, as
	// kube-controller-manager evaluates them; default UTC.
	CronJobTimeZone string
}

func (o *Options) defaults() {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	if o.CheckLimit <= 0 {
		o.CheckLimit = 20
	}
	if o.PingLogLimit <= 0 {
		o.PingLogLimit = 100
	}
	if o.PingBodyLimit <= 0 {
		o.PingBodyLimit = ping.DefaultBodyLimit
	}
	if o.SMTPDomain == "" {
		if u, err := url.Parse(o.BaseURL); err == nil {
			o.SMTPDomain = u.Hostname()
		}
	}
}

// CacheOptions says what the manager caches, and how much of it: the
// controller tests run under the same options.
func CacheOptions(namespaces []string) cache.Options {
	opts := cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			// Only project Secrets: the cache must not hold every Secret in
			// the cluster. Secrets that Channels reference are read uncached.
			&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{project.SecretLabel: "true"})},
			// Every Job in the cluster is watched; the cache keeps only
			// what the Job controller reads of them.
			&batchv1.Job{}: {Transform: controller.TrimJob},
		},
		// Nothing reads managed fields, and they are often half an
		// object's size.
		DefaultTransform: cache.TransformStripManagedFields(),
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

// New builds a manager that is ready to Start.
func New(ctx context.Context, cfg *rest.Config, opts Options) (ctrl.Manager, error) {
	metricsOpts := metricsserver.Options{BindAddress: opts.MetricsAddr, SecureServing: opts.MetricsSecure}
	if opts.MetricsSecure {
		metricsOpts.FilterProvider = metricsfilters.WithAuthenticationAndAuthorization
	}
	opts.defaults()
	// Every ping writes to the API server: the client-side default of 5
	// requests per second would throttle the ping path, not protect the
	// server (which has its own priority and fairness).
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 200, 400
	}

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme.New(),
		Cache:                         CacheOptions(opts.Namespaces),
		Client:                        client.Options{Cache: &client.CacheOptions{Unstructured: false}},
		Metrics:                       metricsOpts,
		HealthProbeBindAddress:        opts.ProbeAddr,
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              "vigil.monitoring.vigil.dev",
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := checkindex.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}

	projects := project.NewRegistry()
	if err := projects.Watch(ctx, mgr.GetCache()); err != nil {
		return nil, fmt.Errorf("watching project Secrets: %w", err)
	}
	limits := &project.Limits{Registry: projects, DefaultCheckLimit: opts.CheckLimit, DefaultPingLogLimit: opts.PingLogLimit}

	// Histories are large and read on demand: never cached.
	histories := &history.Store{
		Client: mgr.GetClient(),
		Reader: mgr.GetAPIReader(),
		Now:    opts.Clock.Now,
		Limits: func(namespace string) history.Limits {
			l := history.DefaultLimits()
			l.PingLog = limits.PingLogLimit(namespace)
			return l
		},
	}

	dispatcher := &delivery.Dispatcher{
		Client:   mgr.GetClient(),
		Reader:   mgr.GetAPIReader(),
		History:  histories,
		Clock:    opts.Clock,
		Recorder: mgr.GetEventRecorder("vigil-delivery"),
		Options:  opts.Delivery,
	}
	if err := mgr.Add(dispatcher); err != nil {
		return nil, err
	}

	if err := (&controller.CheckReconciler{
		Client:       mgr.GetClient(),
		History:      histories,
		Clock:        opts.Clock,
		Recorder:     mgr.GetEventRecorder("vigil-check-controller"),
		Notifier:     dispatcher,
		SecretReader: mgr.GetAPIReader(),
		BaseURL:      opts.BaseURL,
		Metrics:      controller.NewMetrics(nil),
	}).SetupWithManager(ctx, mgr, controller.CheckOptions{}); err != nil {
		return nil, fmt.Errorf("setting up the check controller: %w", err)
	}
	if err := (&controller.ChannelReconciler{
		Client:       mgr.GetClient(),
		SecretReader: mgr.GetAPIReader(),
		Recorder:     mgr.GetEventRecorder("vigil-channel-controller"),
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the channel controller: %w", err)
	}

	recorder := &ping.Recorder{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), History: histories}
	if !opts.DisableCronJobs {
		if err := setupCronJobs(mgr, cfg, opts, recorder, histories); err != nil {
			return nil, err
		}
	}

	log := ctrl.Log.WithName("http")
	cacheWatch := cachewait.NewWatcher()
	if err := cacheWatch.Attach(ctx, mgr.GetCache()); err != nil {
		return nil, fmt.Errorf("watching the check cache: %w", err)
	}
	pings := &ping.Handler{
		CacheWatch:     cacheWatch,
		Client:         mgr.GetClient(),
		Projects:       projects,
		Recorder:       recorder,
		TrustedProxies: opts.TrustedProxies,
		BodyLimit:      opts.PingBodyLimit,
		CheckLimit:     limits.CheckLimit,
		Clock:          opts.Clock,
		Metrics:        ping.NewMetrics(nil),
		Log:            log.WithName("ping"),
	}
	apiServer := &api.Server{
		CacheWatch: cacheWatch,
		Client:     mgr.GetClient(),
		APIReader:  mgr.GetAPIReader(),
		Projects:   projects,
		History:    histories,
		Limits:     limits,
		BaseURL:    opts.BaseURL,
		Clock:      opts.Clock,
		Log:        log,
	}
	if opts.SMTPAddr != "" {
		if err := mgr.Add(&ping.EmailListener{
			Addr: opts.SMTPAddr, Domain: opts.SMTPDomain, Client: mgr.GetClient(), Projects: projects, Recorder: recorder,
			BodyLimit: opts.PingBodyLimit, Clock: opts.Clock, Log: ctrl.Log.WithName("smtp"),
		}); err != nil {
			return nil, err
		}
	}
	server := &httpserver.Runnable{Addr: opts.HTTPAddr, Handler: apiServer.Handler(pings), Cache: mgr.GetCache()}
	if err := mgr.Add(server); err != nil {
		return nil, err
	}
	if opts.HeartbeatURL != "" {
		if err := mgr.Add(&heartbeat.Heartbeat{
			URL: opts.HeartbeatURL, Interval: opts.HeartbeatInterval,
			Healthy: func() error { return server.ReadyCheck()(nil) },
			Client:  &runner.Client{UserAgent: version.UserAgent()},
			Clock:   opts.Clock, Log: ctrl.Log.WithName("heartbeat"),
		}); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("http", server.ReadyCheck()); err != nil {
		return nil, err
	}
	return mgr, nil
}

// Run builds a manager and runs it until ctx is done.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	mgr, err := New(ctx, cfg, opts)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// setupCronJobs adds the CronJob feature: a Check for every annotated
// CronJob, and pings from its Jobs (permissions: internal/rbac/cronjobs).
func setupCronJobs(mgr ctrl.Manager, cfg *rest.Config, opts Options, recorder *ping.Recorder, histories *history.Store) error {
	if err := (&controller.CronJobReconciler{
		Client: mgr.GetClient(), Clock: opts.Clock, DefaultTimeZone: opts.CronJobTimeZone,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the CronJob controller: %w", err)
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := (&controller.JobReconciler{
		Client: mgr.GetClient(), Recorder: recorder, History: histories,
		Pods: mgr.GetAPIReader(), Logs: podLogTail(clientset),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Job controller: %w", err)
	}
	return nil
}

// podLogTail reads the last bytes of a container's log (at most
// controller.LogTailBytes, from its last 200 lines) through the API server,
// which asks the kubelet. The log's limitBytes would keep the first bytes
// of those lines, not the last: the stream is read, keeping its end.
func podLogTail(cs kubernetes.Interface) func(ctx context.Context, namespace, pod, container string) ([]byte, error) {
	return func(ctx context.Context, namespace, pod, container string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		lines := int64(200)
		rc, err := cs.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, TailLines: &lines}).Stream(ctx)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return lastBytes(rc, controller.LogTailBytes)
	}
}

// lastBytes reads r to its end and returns its last n bytes, holding no
// more than about 2n at a time.
func lastBytes(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, 2*n)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf[:0], buf[len(buf)-n:]...)
		}
		k, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err == io.EOF {
			return buf[max(0, len(buf)-n):], nil
		}
		if err != nil {
			return nil, err
		}
	}
}
