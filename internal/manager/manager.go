// Package manager wires Vigil's manager: the controller-runtime manager with
// its cache, the ping store, the leader's loops (deadlines, status
// projection, notifications), the controllers and the HTTP server (every
// replica).
package manager

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsfilters "sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/access"
	"github.com/vigil-operator/vigil/internal/api"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/controller"
	"github.com/vigil-operator/vigil/internal/dashboard"
	"github.com/vigil-operator/vigil/internal/deadline"
	"github.com/vigil-operator/vigil/internal/delivery"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/heartbeat"
	"github.com/vigil-operator/vigil/internal/httpserver"
	"github.com/vigil-operator/vigil/internal/metrics"
	"github.com/vigil-operator/vigil/internal/notify"
	"github.com/vigil-operator/vigil/internal/ping"
	"github.com/vigil-operator/vigil/internal/podlog"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/projection"
	"github.com/vigil-operator/vigil/internal/report"
	"github.com/vigil-operator/vigil/internal/runner"
	"github.com/vigil-operator/vigil/internal/scheme"
	"github.com/vigil-operator/vigil/internal/signin"
	"github.com/vigil-operator/vigil/internal/site"
	"github.com/vigil-operator/vigil/internal/sla"
	"github.com/vigil-operator/vigil/internal/statuspage"
	"github.com/vigil-operator/vigil/internal/store"
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
	// SharedProcess lets several managers run in one process (the
	// benchmarks' replicas): controller names, which controller-runtime
	// requires to be unique per process for its metrics, are not checked.
	SharedProcess bool
	// Store names the ping store: "sqlite:<path>".
	Store string
	// StatusBudget bounds Check status writes per second, cluster-wide, of
	// what tools do not act on (projection.DefaultBudget when 0), and
	// StatusChangeBudget those of verdicts and changes of state
	// (projection.DefaultChangeBudget when 0).
	StatusBudget, StatusChangeBudget float64
	// DeadlineInterval is how often the leader looks for due checks
	// (250 ms when 0).
	DeadlineInterval time.Duration
	// ReportInterval is how often the leader looks for reports owed to
	// email Channels (default a minute).
	ReportInterval time.Duration
	// SLAInterval is how often the leader judges checks' SLAs (default
	// sla.DefaultEvery).
	SLAInterval time.Duration

	// CheckLimit is a project's default check limit; default 20, as the
	// reference. The limits ConfigMap overrides it per namespace.
	CheckLimit int
	// CacheSyncTimeout bounds how long each controller waits for the
	// cache to list what it watches before the manager gives up and exits
	// (default DefaultCacheSyncTimeout).
	CacheSyncTimeout time.Duration
	// JobWorkers is how many Jobs the Job controller turns into pings at
	// once (default controller.DefaultJobWorkers).
	JobWorkers int
	// PingLogLimit is a project's default ping-log length; default 100.
	PingLogLimit int
	// BodyBytesLimit is the ping body bytes a project's checks keep
	// together by default (project.DefaultBodyBytesLimit when 0).
	BodyBytesLimit int64
	// ProjectSecretLimit and APIKeyLimit bound what a namespace's project
	// Secrets cost; defaults project.DefaultSecretLimit and
	// project.DefaultKeyLimit. The limits ConfigMap overrides them per
	// namespace.
	ProjectSecretLimit int
	APIKeyLimit        int
	// ObjectLimits are each kind's limit per namespace (zero or missing:
	// project.DefaultObjectLimits'); the limits ConfigMap overrides them
	// per namespace.
	ObjectLimits map[project.ObjectKind]int
	// LimitsConfigMap names the ConfigMap of per-namespace limits (package
	// project: "<namespace>.<limit>" for check-limit, ping-log-limit,
	// body-bytes-limit, project-secret-limit, api-key-limit, each kind's
	// object limit and egress-allow),
	// in the manager's own namespace, where only the cluster administrator
	// writes; no Name: none, the defaults apply everywhere.
	LimitsConfigMap types.NamespacedName
	// PingBodyLimit bounds a stored ping body in bytes; default ping.DefaultBodyLimit.
	PingBodyLimit int
	// MaxConnections bounds the HTTP server's open connections; default
	// httpserver.DefaultMaxConnections.
	MaxConnections int
	// MaxConnectionsPerSource bounds the HTTP server's open connections
	// from one address (trusted proxies exempt); default
	// httpserver.DefaultMaxConnectionsPerSource.
	MaxConnectionsPerSource int
	// RequestBodyBudget bounds the bytes of request bodies (pings', the
	// API's) being read at once; default httpserver.DefaultBodyBudget.
	RequestBodyBudget int64
	// TrustedProxies are the networks whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix
	// IPv6SourcePrefix is the prefix length of one IPv6 source for the
	// HTTP and SMTP per-source connection caps; default
	// connlimit.DefaultIPv6Prefix (a /64).
	IPv6SourcePrefix int
	// Delivery tunes notification retries.
	Delivery delivery.Options
	// FlipLimit bounds the flips and notices one check keeps
	// (store.DefaultFlipLimit when 0).
	FlipLimit int64
	// CheckWrites is how namespaces share the Kubernetes client for their
	// checks' writes (checks.WriteShare; its defaults when zero).
	CheckWrites checks.WriteShare
	// Flapping is when a check's flips stop being notified one by one
	// (store.FlapPolicy; its defaults when zero).
	Flapping store.FlapPolicy
	// SMTPAddr, when set, serves email pings there (off by default).
	SMTPAddr string
	// SMTPDomain is the domain of ping addresses (<uuid>@<domain>); default
	// the host of BaseURL.
	SMTPDomain string
	// SMTPMaxConnectionsPerSource bounds the SMTP listener's connections
	// from one address (trusted proxies exempt); default
	// ping.DefaultSMTPMaxConnectionsPerSource.
	SMTPMaxConnectionsPerSource int
	// DisableCronJobs turns the CronJob feature off: no CronJob or Job is
	// watched, and the manager needs none of internal/rbac/cronjobs.
	DisableCronJobs bool
	// HeartbeatURL, when set, is an external check the leader pings every
	// HeartbeatInterval while it is healthy (package heartbeat).
	HeartbeatURL      string
	HeartbeatInterval time.Duration
	// PodLogs reads the tail of a failed pod's container log for a fail
	// ping; nil reads it through the API server (pods/log). The tests,
	// whose control plane runs no kubelet, give their own.
	PodLogs func(ctx context.Context, namespace, pod, container string) ([]byte, error)
	// ChannelRecheck is how often a Channel is validated again (10 minutes
	// when 0; at most 30 s while it is not Ready).
	ChannelRecheck time.Duration
	// PastLimitRecheck is how soon an object past its namespace's limit
	// is looked at again (a minute when zero): it comes within the limit
	// when an older one goes or the limit is raised.
	PastLimitRecheck time.Duration
	// CronJobTimeZone is the zone of CronJobs without spec.timeZone, as
	// kube-controller-manager evaluates them; default UTC.
	CronJobTimeZone string
	// CronJobStartTimeout is how long a CronJob's run may wait for its
	// pods to run before a run that cannot start is a failure; default
	// controller.NotStartedAfter.
	CronJobStartTimeout time.Duration
	// ChannelSecretsRequireLabel lets Channels use only the Secrets labelled
	// notify.LabelChannelSecret "true".
	ChannelSecretsRequireLabel bool
	// EgressAllow is what every namespace's Channels may reach past the
	// egress guard's refused ranges; the limits ConfigMap's
	// "<namespace>.egress-allow" adds to it for one namespace.
	EgressAllow egress.Allowlist
	// EgressDeny are refused besides the guard's default ranges: the
	// cluster's Service and Pod ranges.
	EgressDeny []netip.Prefix
	// EgressAllowRelays lets Apprise Channels send Apprise URLs from a
	// Secret, which the Apprise server connects to past the guard
	// (egress.Options.AllowRelays).
	EgressAllowRelays bool
	// SignIn lets people sign in to the dashboard through an OpenID
	// Connect provider (off while its IssuerURL is empty); NoKeySignIn
	// then turns the API-key sign-in off.
	SignIn      signin.Config
	NoKeySignIn bool
	// SignInEveryProject makes a person's board ask about every project,
	// not only those where a RoleBinding names them: for clusters whose
	// authorizer grants without RoleBindings (a webhook).
	SignInEveryProject bool
	// ReviewQPS bounds the SubjectAccessReviews the dashboard asks for
	// signed-in people, a second (DefaultReviewQPS when 0): their own
	// client's budget, apart from the controllers'.
	ReviewQPS float32
}

// DefaultReviewQPS is the dashboard's budget of SubjectAccessReviews.
const DefaultReviewQPS = 20

func (o *Options) defaults() {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	if o.CheckLimit <= 0 {
		o.CheckLimit = 20
	}
	if o.CacheSyncTimeout <= 0 {
		o.CacheSyncTimeout = DefaultCacheSyncTimeout
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

// DefaultCacheSyncTimeout is how long the controllers wait for the cache's
// first lists by default: controller-runtime's 2 minutes would have a
// fleet's manager (100,000 Checks, every Job of the cluster) behind a busy
// API server exit before it ever serves, and start again from nothing, in
// a crash loop.
const DefaultCacheSyncTimeout = 10 * time.Minute

// CacheOptions says what the manager caches, and how much of it: the
// controller tests run under the same options.
func CacheOptions(namespaces []string) cache.Options {
	opts := cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			// Only project Secrets: the cache must not hold every Secret in
			// the cluster. Secrets that Channels reference are read uncached.
			&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{project.SecretLabel: "true"})},
			// Every Job and CronJob in the cluster is watched, and a
			// fleet has thousands of Checks: the cache keeps only what
			// Vigil reads of them (controller/cachetrim.go).
			&batchv1.Job{}:     {Transform: controller.TrimJob},
			&batchv1.CronJob{}: {Transform: controller.TrimCronJob},
			&v1.Check{}:        {Transform: controller.TrimCheck},
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

// Manager is a controller-runtime manager with Vigil's ping store, which it
// closes when it stops.
type Manager struct {
	ctrl.Manager
	Store *store.Store
	// Checks is the door for what can be done to a check.
	Checks *checks.Door
	// Limits are the per-project limits as the manager last read them.
	Limits *project.Limits
	// Deadlines is the leader's loop that records what time does to the
	// checks.
	Deadlines *deadline.Loop
	// early is the HTTP server, which serves before the cache has synced:
	// Start runs it beside the controller-runtime manager, whose runnables
	// start only after the cache has.
	early *httpserver.Runnable
}

// Start runs the manager until ctx is done, then closes the store.
func (m *Manager) Start(ctx context.Context) error {
	// Either stopping stops the other; the store closes after both, so
	// that the server's last pings are stored.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		err := m.early.Start(ctx)
		cancel()
		served <- err
	}()
	err := m.Manager.Start(ctx)
	cancel()
	return errors.Join(err, <-served, m.Store.Close())
}

// wholeServer is closed once the whole HTTP server can serve: the Door is
// ready (every check read, the early pings recorded) and so is the project
// registry. It is never closed if ctx ends first.
func wholeServer(ctx context.Context, door *checks.Door, projects *project.Registry) <-chan struct{} {
	whole := make(chan struct{})
	go func() {
		for _, ready := range []<-chan struct{}{door.Ready(), projects.Built()} {
			select {
			case <-ready:
			case <-ctx.Done():
				return
			}
		}
		close(whole)
	}()
	return whole
}

// New opens the ping store and builds a manager that is ready to Start.
func New(ctx context.Context, cfg *rest.Config, opts Options) (*Manager, error) {
	metricsOpts := metricsserver.Options{BindAddress: opts.MetricsAddr, SecureServing: opts.MetricsSecure}
	if opts.MetricsSecure {
		metricsOpts.FilterProvider = metricsfilters.WithAuthenticationAndAuthorization
	}
	opts.defaults()
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}

	cacheOpts := CacheOptions(opts.Namespaces)
	if opts.LimitsConfigMap.Name != "" {
		// The one ConfigMap, nothing else: the manager's Role allows only
		// its name (config/rbac/limits).
		cacheOpts.ByObject[&corev1.ConfigMap{}] = cache.ByObject{
			Namespaces: map[string]cache.Config{opts.LimitsConfigMap.Namespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", opts.LimitsConfigMap.Name),
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme.New(),
		Cache:                         cacheOpts,
		Client:                        client.Options{Cache: &client.CacheOptions{Unstructured: false}},
		Metrics:                       metricsOpts,
		HealthProbeBindAddress:        opts.ProbeAddr,
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              "vigil.monitoring.vigil.dev",
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: ptr.To(opts.SharedProcess), CacheSyncTimeout: opts.CacheSyncTimeout},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	projects := project.NewRegistry()
	conflicts := mgr.GetEventRecorder("vigil-projects")
	projects.OnConflict = func(s *corev1.Secret, what string) {
		// Every replica tells it; the Events aggregate into one.
		conflicts.Eventf(s, nil, corev1.EventTypeWarning, project.ReasonKeyConflict, "Authenticate",
			"this Secret's %s belongs to another project, whose Secret is older: here it opens nothing; remove it from this Secret", what)
	}
	projects.OnLimit = func(s *corev1.Secret, message string) {
		conflicts.Eventf(s, nil, corev1.EventTypeWarning, project.ReasonLimitExceeded, "Authenticate", "%s", message)
	}
	limits := &project.Limits{DefaultCheckLimit: opts.CheckLimit, DefaultPingLogLimit: opts.PingLogLimit,
		DefaultBodyBytesLimit: opts.BodyBytesLimit, DefaultSecretLimit: opts.ProjectSecretLimit, DefaultKeyLimit: opts.APIKeyLimit, DefaultObjects: opts.ObjectLimits}
	projects.Limits, limits.OnChange = limits, projects.Refresh
	// Key holds start and pass on the manager's clock, as the deadline
	// loop's pruning reads it.
	projects.Clock = opts.Clock
	if err := statuspage.IndexByKey(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, fmt.Errorf("indexing status pages: %w", err)
	}
	if err := projects.Watch(ctx, mgr.GetCache()); err != nil {
		return nil, fmt.Errorf("watching project Secrets: %w", err)
	}
	if opts.LimitsConfigMap.Name != "" {
		logger := ctrl.Log.WithName("limits")
		err := limits.Watch(ctx, mgr.GetCache(), opts.LimitsConfigMap, func(problems []string) {
			logger.Info("ignoring entries of the limits ConfigMap", "configMap", opts.LimitsConfigMap, "problems", problems)
		})
		if err != nil {
			return nil, err
		}
	}
	m := metrics.New(nil)
	kinds := make([]string, 0, len(notify.Kinds()))
	for _, k := range notify.Kinds() {
		kinds = append(kinds, string(k))
	}
	m.DeliveryKinds(kinds)

	// The leader's loops wake when a commit (on this replica) has work
	// for them; they also poll the store, for commits of other replicas.
	var dispatcher *delivery.Dispatcher
	var projector *projection.Projector
	st, err := store.Open(ctx, opts.Store, store.Options{Flapping: opts.Flapping, FlipLimit: opts.FlipLimit, Now: opts.Clock.Now, OnCommit: func(c store.Committed) {
		for _, f := range c.Flips {
			m.Flip(f.Namespace, f.Up, f.Reason, c.At.Sub(f.At))
		}
		if len(c.Flips) > 0 || c.Notices > 0 {
			dispatcher.Wake()
		}
		projector.Wake()
	}, OnFull: func(full bool, err error) {
		m.SetStoreFull(full)
		if full {
			ctrl.Log.WithName("store").Error(err, "the ping store's volume is full: pings and writes are answered 503 with Retry-After until space is freed; reads go on")
			return
		}
		ctrl.Log.WithName("store").Info("the ping store writes again: space was freed")
	}})
	if err != nil {
		return nil, err
	}
	// Project keys belong to the project that held them first, across
	// re-creates of its Secret (every replica records what it sees).
	projects.RecordClaims(ctx, st)
	door, err := checks.New(ctx, checks.Options{Cache: mgr.GetCache(), Client: mgr.GetClient(), Live: mgr.GetAPIReader(),
		Store: st, Limits: limits, Clock: opts.Clock, Metrics: m, Log: ctrl.Log.WithName("checks"), WriteShare: opts.CheckWrites,
		EarlyPings: true, EarlyKind: ping.KindOf})
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	dispatcher = &delivery.Dispatcher{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Secrets: channelSecrets(mgr, opts), Store: st, Clock: opts.Clock,
		Recorder: mgr.GetEventRecorder("vigil-delivery"), BaseURL: opts.BaseURL, Options: opts.Delivery, Metrics: m,
		Egress: egress.New(egress.Options{Allow: opts.EgressAllow, Deny: opts.EgressDeny, NamespaceAllow: limits.EgressAllow,
			AllowRelays: opts.EgressAllowRelays}),
	}
	statusWriter, err := statusClient(cfg, mgr, opts)
	if err != nil {
		return nil, err
	}
	projector = &projection.Projector{
		Client: mgr.GetClient(), Writer: statusWriter, Store: st, Checks: door, BaseURL: opts.BaseURL, Clock: opts.Clock,
		Budget: opts.StatusBudget, ChangeBudget: opts.StatusChangeBudget,
		Recorder: mgr.GetEventRecorder("vigil-check-controller"), Metrics: m, Log: ctrl.Log.WithName("projection"),
	}
	loop := &deadline.Loop{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Store: st, Checks: door, Clock: opts.Clock, Interval: opts.DeadlineInterval,
		OnDeleted: projector.Forget, Metrics: m, Log: ctrl.Log.WithName("deadline"),
	}
	reports := &report.Scheduler{Client: mgr.GetClient(), Checks: door, Store: st, Send: dispatcher.Report, Clock: opts.Clock,
		Every: opts.ReportInterval, URL: opts.BaseURL + "/", Log: ctrl.Log.WithName("reports")}
	slas := &sla.Watcher{Client: mgr.GetClient(), Checks: door, Show: projector.SetSLA, Clock: opts.Clock,
		Every: opts.SLAInterval, Log: ctrl.Log.WithName("sla")}
	for _, r := range []manager.Runnable{dispatcher, projector, loop, reports, slas} {
		if err := mgr.Add(r); err != nil {
			_ = st.Close()
			return nil, err
		}
	}
	if err := setupControllers(ctx, mgr, cfg, opts, st, door, projector); err != nil {
		_ = st.Close()
		return nil, err
	}
	earlyServer, err := setupHTTP(ctx, mgr, opts, st, door, projects, dispatcher)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	return &Manager{Manager: mgr, Store: st, Checks: door, Limits: limits, Deadlines: loop, early: earlyServer}, nil
}

// setupControllers adds the controllers: Checks, Channels and, unless it
// is off, the CronJob feature.
func setupControllers(ctx context.Context, mgr ctrl.Manager, cfg *rest.Config, opts Options, st *store.Store,
	door *checks.Door, projector *projection.Projector) error {
	if err := (&controller.CheckReconciler{
		Client: mgr.GetClient(), Checks: door, Store: st, Projector: projector, Clock: opts.Clock, BaseURL: opts.BaseURL,
		SecretReader: mgr.GetAPIReader(),
	}).SetupWithManager(ctx, mgr, controller.CheckOptions{}); err != nil {
		return fmt.Errorf("setting up the check controller: %w", err)
	}
	if err := (&controller.ChannelReconciler{
		Client:       mgr.GetClient(),
		SecretReader: channelSecrets(mgr, opts),
		Recorder:     mgr.GetEventRecorder("vigil-channel-controller"),
		Limit:        door.ObjectLimit,
		Recheck:      opts.ChannelRecheck,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the channel controller: %w", err)
	}
	if err := (&controller.MaintenanceWindowReconciler{
		Client: mgr.GetClient(), Checks: door, Clock: opts.Clock, Recorder: mgr.GetEventRecorder("vigil-maintenancewindow-controller"),
		PastLimitRecheck: opts.PastLimitRecheck,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the maintenance window controller: %w", err)
	}
	if err := (&controller.StatusPageReconciler{Client: mgr.GetClient(), BaseURL: opts.BaseURL, Limit: door.ObjectLimit,
		Recorder: mgr.GetEventRecorder("vigil-statuspage-controller"), PastLimitRecheck: opts.PastLimitRecheck}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the status page controller: %w", err)
	}
	if opts.DisableCronJobs {
		return nil
	}
	return setupCronJobs(mgr, cfg, opts, st, door)
}

// channelSecrets reads the Secrets Channels reference from the API server
// (the cache holds project Secrets only), each kept for notify.SecretTTL:
// every one of them, or only the labelled ones.
func channelSecrets(mgr ctrl.Manager, opts Options) client.Reader {
	if opts.ChannelSecretsRequireLabel {
		return notify.RecentSecrets(notify.LabelledSecrets(mgr.GetAPIReader()), notify.SecretTTL)
	}
	return notify.RecentSecrets(mgr.GetAPIReader(), notify.SecretTTL)
}

// setupHTTP adds the HTTP server (the Management API, pings, badges, the
// projects' Prometheus endpoints, the dashboard and the public status
// pages), the optional SMTP listener, the probes and the heartbeat. It
// returns the HTTP server instead of adding it: it serves before the cache
// has synced, and Manager.Start runs it.
func setupHTTP(ctx context.Context, mgr ctrl.Manager, opts Options, st *store.Store, door *checks.Door, projects *project.Registry,
	dispatcher *delivery.Dispatcher) (_ *httpserver.Runnable, err error) {
	log := ctrl.Log.WithName("http")
	bodies := httpserver.NewBodyBudget(opts.RequestBodyBudget)
	pings := &ping.Handler{
		Checks:         door,
		Projects:       projects,
		TrustedProxies: opts.TrustedProxies,
		BodyLimit:      opts.PingBodyLimit,
		Bodies:         bodies,
		Log:            log.WithName("ping"),
	}
	apiServer := &api.Server{Checks: door, Projects: projects, BaseURL: opts.BaseURL, Bodies: bodies}
	if opts.SMTPAddr != "" {
		if err := mgr.Add(&ping.EmailListener{
			Addr: opts.SMTPAddr, Domain: opts.SMTPDomain, Checks: door, Projects: projects,
			BodyLimit: opts.PingBodyLimit, Log: ctrl.Log.WithName("smtp"),
			MaxConnectionsPerSource: opts.SMTPMaxConnectionsPerSource, TrustedProxies: opts.TrustedProxies,
			IPv6SourcePrefix: opts.IPv6SourcePrefix,
		}); err != nil {
			return nil, err
		}
	}
	dash := &dashboard.Server{Checks: door, Projects: projects, BaseURL: opts.BaseURL, TestChannel: dispatcher.Test,
		Log: log.WithName("dashboard"), NoKeySignIn: opts.NoKeySignIn}
	if opts.SignIn.IssuerURL != "" {
		if dash.SignIn, dash.Access, dash.Bindings, err = signIn(mgr, opts, st); err != nil {
			return nil, err
		}
	}
	statusPages := &statuspage.Server{Checks: door, BaseURL: opts.BaseURL, Log: log.WithName("status-page"),
		Find: func(ctx context.Context, key string) (*v1.StatusPage, error) {
			return statuspage.Find(ctx, mgr.GetClient(), key)
		}}
	parts := site.Parts{
		API: http.HandlerFunc(apiServer.ServeAPI), Badges: http.HandlerFunc(apiServer.ServeBadge),
		Metrics: http.HandlerFunc(apiServer.ServeMetrics), Pings: pings, Dashboard: dash.Handler(),
		StatusPages: statusPages.Handler(),
	}
	server := &httpserver.Runnable{Addr: opts.HTTPAddr, Cache: mgr.GetCache(), WaitFor: door.WaitForSync,
		MaxConnections: opts.MaxConnections, MaxConnectionsPerSource: opts.MaxConnectionsPerSource, TrustedProxies: opts.TrustedProxies,
		IPv6SourcePrefix: opts.IPv6SourcePrefix}
	// Whole: the store is open (New opened it), the cache has synced, the
	// project registry has built what the cache held (lookups never build:
	// before, every key would be refused), the pings that came before are
	// recorded and the server serves. A database that stops answering
	// later does not make the replica unready: it answers pings with 503
	// and Retry-After, which clients retry, rather than vanish from its
	// Service.
	serving := server.ReadyCheck()
	whole := func(req *http.Request) error {
		select {
		case <-door.Ready():
		default:
			return errors.New("the checks are not all read yet")
		}
		if !projects.Ready() {
			return errors.New("project registry not built yet")
		}
		return serving(req)
	}
	// The server serves as soon as the store is open, so that pings are
	// kept and acknowledged while the Checks are read (checks.HoldEarly);
	// the rest waits for the whole server. The embedded store's replica
	// is the only one, and is ready then. On a store replicas share, one
	// is ready before it is whole only while no other one is (whole.go).
	parts.Ready, parts.Early = wholeServer(ctx, door, projects), pings.ServeEarly
	server.Cache, server.WaitFor = nil, nil
	ready := serving
	if st.Shared() {
		if err := mgr.Add(&wholeWord{store: st, whole: parts.Ready, log: ctrl.Log.WithName("replicas")}); err != nil {
			return nil, err
		}
		ready = func(req *http.Request) error {
			if whole(req) == nil {
				return nil
			}
			if err := serving(req); err != nil {
				return err
			}
			return alone(req.Context(), st)
		}
	}
	server.Handler = site.Handler(log, parts)
	if opts.HeartbeatURL != "" {
		if err := mgr.Add(&heartbeat.Heartbeat{
			URL: opts.HeartbeatURL, Interval: opts.HeartbeatInterval,
			Healthy: func() error {
				if err := whole(nil); err != nil {
					return err
				}
				return st.Health()
			},
			Client: &runner.Client{UserAgent: version.UserAgent()},
			Clock:  opts.Clock, Log: ctrl.Log.WithName("heartbeat"),
		}); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	return server, mgr.AddReadyzCheck("http", ready)
}

// Run builds a manager and runs it until ctx is done.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	m, err := New(ctx, cfg, opts)
	if err != nil {
		return err
	}
	return m.Start(ctx)
}

// setupCronJobs adds the CronJob feature: a Check for every annotated
// CronJob, and pings from its Jobs (permissions: internal/rbac/cronjobs).
func setupCronJobs(mgr ctrl.Manager, cfg *rest.Config, opts Options, st *store.Store, door *checks.Door) error {
	// Cluster policies select namespaces by label: only a manager that
	// watches every namespace (and may list them) applies them.
	clusterPolicies := len(opts.Namespaces) == 0
	if err := (&controller.CronJobReconciler{
		Client: mgr.GetClient(), Clock: opts.Clock, DefaultTimeZone: opts.CronJobTimeZone, Checks: door,
		Suspensions: st, ClusterPolicies: clusterPolicies,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the CronJob controller: %w", err)
	}
	if err := (&controller.CronJobPolicyReconciler{
		Client: mgr.GetClient(), ClusterPolicies: clusterPolicies, Limit: door.ObjectLimit,
		Recorder: mgr.GetEventRecorder("vigil-cronjobpolicy-controller"), PastLimitRecheck: opts.PastLimitRecheck,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the CronJobPolicy controller: %w", err)
	}
	logs := opts.PodLogs
	if logs == nil {
		clientset, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		logs = podlog.Tail(clientset, controller.LogTailBytes)
	}
	if err := (&controller.JobReconciler{
		Client: mgr.GetClient(), Checks: door, Pods: mgr.GetAPIReader(), Logs: logs, Clock: opts.Clock,
		StartTimeout: opts.CronJobStartTimeout, Workers: opts.JobWorkers,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Job controller: %w", err)
	}
	return nil
}

// signIn sets up the dashboard's OpenID Connect sign-in, and the
// authorizer that asks Kubernetes what people may do, through a client of
// its own (ReviewQPS), so that people browsing never take the
// controllers' share of the API server; and, unless SignInEveryProject or
// the manager serves a list of namespaces, the index of RoleBindings that
// tells which projects to ask about, fed by an informer of its own on
// that client (RoleBindings stripped to their subjects).
func signIn(mgr ctrl.Manager, opts Options, st *store.Store) (*signin.Service, *access.Authorizer, *access.Bindings, error) {
	sc := opts.SignIn
	if sc.RedirectURL == "" {
		sc.RedirectURL = strings.TrimSuffix(opts.BaseURL, "/") + "/auth/callback"
	}
	sc.Secure = strings.HasPrefix(opts.BaseURL, "https://")
	svc, err := signin.New(sc, st, opts.Clock)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("the dashboard's sign-in: %w", err)
	}
	cfg := rest.CopyConfig(mgr.GetConfig())
	cfg.QPS = cmp.Or(opts.ReviewQPS, DefaultReviewQPS)
	cfg.Burst = int(2 * cfg.QPS)
	cfg.RateLimiter = nil
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("the dashboard's access reviews: %w", err)
	}
	authorizer := &access.Authorizer{Reviews: cs.AuthorizationV1().SubjectAccessReviews(), Clock: opts.Clock}
	if opts.SignInEveryProject || len(opts.Namespaces) > 0 {
		return svc, authorizer, nil, nil
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(access.Strip))
	bindings := access.NewBindings()
	if err := bindings.Watch(factory.Rbac().V1().RoleBindings().Informer()); err != nil {
		return nil, nil, nil, err
	}
	if err := mgr.Add(everyReplica(func(ctx context.Context) error {
		factory.Start(ctx.Done())
		<-ctx.Done()
		factory.Shutdown()
		return nil
	})); err != nil {
		return nil, nil, nil, err
	}
	return svc, authorizer, bindings, nil
}

// everyReplica is a runnable that runs in every replica, leader or not.
type everyReplica func(ctx context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }
func (everyReplica) NeedLeaderElection() bool          { return false }

// statusClient is the projector's own client to the API server, for Check
// status: its rate limit is the projector's two budgets, so that a wave of
// status writes (10,000 checks down at once) neither waits behind the
// manager's other requests, within their 50 a second, nor starves them.
func statusClient(cfg *rest.Config, mgr ctrl.Manager, opts Options) (client.Client, error) {
	cfg = rest.CopyConfig(cfg)
	budget, changes := projection.Budgets(opts.StatusBudget, opts.StatusChangeBudget)
	// Reads after a conflict come out of the same allowance.
	cfg.QPS = float32(budget + changes)
	cfg.Burst = int(budget + changes)
	cfg.RateLimiter = nil
	cl, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("the status writer's client: %w", err)
	}
	return cl, nil
}
