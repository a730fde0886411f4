package cli

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/connlimit"
	"github.com/vigil-operator/vigil/internal/controller"
	"github.com/vigil-operator/vigil/internal/delivery"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/heartbeat"
	"github.com/vigil-operator/vigil/internal/httpserver"
	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/ping"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/projection"
	"github.com/vigil-operator/vigil/internal/runner"
	"github.com/vigil-operator/vigil/internal/signin"
	"github.com/vigil-operator/vigil/internal/store"
)

func newManagerCmd(g *globals) *cobra.Command {
	opts := manager.Options{}
	var trustedProxies, limitsConfigMap, egressAllow, egressDeny string
	var oidcScopes, oidcSecretFile string
	keySignIn, projectsFromBindings := true, true
	var cronJobs bool
	objectLimits := map[project.ObjectKind]*int{} // the flags of each kind's limit
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the controllers and the HTTP server (what the Deployment runs)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			if opts.TrustedProxies, err = ping.ParseTrustedProxies(trustedProxies); err != nil {
				return fmt.Errorf("--trusted-proxies: %w", err)
			}
			if opts.FlipLimit < 1 {
				return fmt.Errorf("--flip-limit must be at least 1")
			}
			if w := opts.CheckWrites; w.Slots < 1 || w.Waiting < 1 {
				return fmt.Errorf("--check-write-slots and --check-writes-waiting must be at least 1")
			}
			if f := opts.Flapping; f.Limit < -1 || f.Limit == 0 || f.Window <= 0 || f.Steady <= 0 {
				return fmt.Errorf("--flap-limit must be -1 (notify every state change) or at least 1, and --flap-window and --flap-steady positive")
			}
			if d := opts.Delivery; d.StormThreshold < -1 || d.StormThreshold == 0 || d.StormThreshold == 1 || d.StormWindow <= 0 ||
				d.StormGather <= 0 || d.StormGather > d.StormWindow {
				return fmt.Errorf("--storm-threshold must be -1 (never group) or at least 2, --storm-window and --storm-gather positive, and --storm-gather at most --storm-window")
			}
			if opts.EgressAllow, err = egress.ParseAllowlist(egressAllow); err != nil {
				return fmt.Errorf("--egress-allow: %w", err)
			}
			if opts.EgressDeny, err = egress.ParseRanges(egressDeny); err != nil {
				return fmt.Errorf("--egress-deny: %w", err)
			}
			if _, err := connlimit.NewPerSource(1, opts.IPv6SourcePrefix, nil); err != nil {
				return fmt.Errorf("--ipv6-source-prefix: %w", err)
			}
			opts.DisableCronJobs = !cronJobs
			opts.ObjectLimits = map[project.ObjectKind]int{}
			for kind, n := range objectLimits {
				opts.ObjectLimits[kind] = *n
			}
			if opts.LimitsConfigMap, err = parseObjectKey(limitsConfigMap); err != nil {
				return fmt.Errorf("--limits-configmap: %w", err)
			}
			if opts.Store == "" {
				opts.Store = defaultStore()
			}
			if err := signInOptions(&opts, oidcScopes, oidcSecretFile, keySignIn); err != nil {
				return err
			}
			opts.SignInEveryProject = !projectsFromBindings
			if opts.HeartbeatURL == "" {
				opts.HeartbeatURL = os.Getenv("VIGIL_HEARTBEAT_URL")
			}
			if opts.HeartbeatURL != "" {
				if _, err := runner.ResolveURL(opts.HeartbeatURL, ""); err != nil {
					return fmt.Errorf("--heartbeat-url: %w", err)
				}
			}
			log := ctrl.Log.WithName("setup")
			if limit, err := SetMemoryLimit(memlimit.FromCgroup); err != nil {
				log.Error(err, "setting the Go runtime's memory limit from the container's; running without one")
			} else if limit < math.MaxInt64 {
				log.Info("the Go runtime's memory limit", "GOMEMLIMIT", limit)
			}
			return manager.Run(cmd.Context(), cfg, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.HTTPAddr, "http-bind-address", ":8000", "address of the Management API, ping and badge server")
	// The default is read after parsing, so that --help never prints a
	// DSN's password from $VIGIL_STORE.
	f.StringVar(&opts.Store, "store", "",
		"the ping store, where pings, flips and notifications are kept: sqlite:<path>, or PostgreSQL for several replicas: a postgres:// URL or libpq key=value pairs (TLS with sslmode, sslrootcert, sslcert, sslkey) (default $VIGIL_STORE, else sqlite:/var/lib/vigil/vigil.db)")
	f.Float64Var(&opts.StatusBudget, "status-writes-per-second", projection.DefaultBudget,
		"Check status writes per second, cluster-wide, of what tools do not act on: ping statistics, a check's first ping, the grace period; oldest first, in turns by namespace")
	f.Float64Var(&opts.StatusChangeBudget, "status-changes-per-second", projection.DefaultChangeBudget,
		"Check status writes per second, cluster-wide, of verdicts and changes of state into or out of down or paused, ahead of the others, in turns by namespace")
	f.DurationVar(&opts.CacheSyncTimeout, "cache-sync-timeout", manager.DefaultCacheSyncTimeout,
		"how long the controllers wait for the first lists of what they watch before the manager gives up and exits")
	f.StringVar(&opts.BaseURL, "base-url", "http://localhost:8000", "URL clients reach the HTTP server at, used in returned ping, API and badge URLs")
	f.StringSliceVar(&opts.Namespaces, "namespaces", nil, "namespaces (projects) to serve and monitor; default all")
	f.StringVar(&opts.MetricsAddr, "metrics-bind-address", ":8443", `address of the metrics endpoint ("0" disables it)`)
	f.BoolVar(&opts.MetricsSecure, "metrics-secure", true, "serve metrics over HTTPS with Kubernetes authentication and authorization")
	f.StringVar(&opts.ProbeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	f.BoolVar(&opts.LeaderElection, "leader-elect", true, "run the controllers in one replica at a time")
	f.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", os.Getenv("POD_NAMESPACE"),
		"namespace of the leader-election lease (default: $POD_NAMESPACE, which the install sets to the manager's own)")
	f.IntVar(&opts.CheckLimit, "check-limit", 20, "checks a project may hold (the limits ConfigMap overrides it per namespace)")
	f.IntVar(&opts.PingLogLimit, "ping-log-limit", 100, "pings each check keeps (the limits ConfigMap overrides it per namespace)")
	f.Int64Var(&opts.BodyBytesLimit, "body-bytes-limit", project.DefaultBodyBytesLimit,
		"ping body bytes the checks of a namespace keep together; past it a check keeps a new body only by dropping its own oldest, and one with none to drop has it refused (the ping is recorded) (the limits ConfigMap overrides it per namespace)")
	f.Int64Var(&opts.FlipLimit, "flip-limit", store.DefaultFlipLimit,
		"state changes and notices each check keeps, besides the 90 days they are kept at most; past it the oldest go")
	f.IntVar(&opts.ProjectSecretLimit, "project-secret-limit", project.DefaultSecretLimit,
		"project Secrets of a namespace that count, the oldest; the rest open nothing, with a Warning Event (the limits ConfigMap overrides it per namespace)")
	f.IntVar(&opts.APIKeyLimit, "api-key-limit", project.DefaultKeyLimit,
		"API keys a namespace's project Secrets may hold; later lines open nothing, with a Warning Event (the limits ConfigMap overrides it per namespace)")
	for _, k := range []struct {
		kind project.ObjectKind
		what string
	}{{project.Channels, "Channels"}, {project.MaintenanceWindows, "MaintenanceWindows (snoozes not counted)"},
		{project.StatusPages, "StatusPages"}, {project.CronJobPolicies, "CronJobPolicies"}} {
		n := new(int)
		objectLimits[k.kind] = n
		f.IntVar(n, string(k.kind), project.DefaultObjectLimits[k.kind], k.what+
			" of a namespace that count, the oldest; the rest are ignored, not Ready (LimitExceeded), with a Warning Event (the limits ConfigMap overrides it per namespace)")
	}
	f.StringVar(&limitsConfigMap, "limits-configmap", defaultLimitsConfigMap(),
		"per-namespace limits, <namespace>/<name> of a ConfigMap with keys <project namespace>.check-limit, .ping-log-limit, .body-bytes-limit, .project-secret-limit, .api-key-limit, .channel-limit, .maintenance-window-limit, .status-page-limit, .cronjob-policy-limit and .egress-allow; only cluster administrators should be able to write it (default: "+project.DefaultLimitsConfigMap+" in $POD_NAMESPACE; empty: none)")
	f.IntVar(&opts.PingBodyLimit, "ping-body-limit", ping.DefaultBodyLimit, "bytes of a ping's body that are stored; the rest is dropped")
	f.IntVar(&opts.MaxConnections, "max-connections", httpserver.DefaultMaxConnections,
		"open connections the HTTP server takes at once; more clients wait until one closes, and past seven eighths of it idle keep-alive connections are closed, the longest idle first, then new connections that sent no request within 2s")
	f.IntVar(&opts.MaxConnectionsPerSource, "max-connections-per-source", httpserver.DefaultMaxConnectionsPerSource,
		"open HTTP connections one source (an IPv4 address, an IPv6 --ipv6-source-prefix) may hold (trusted proxies exempt); one more is closed at once")
	f.IntVar(&opts.IPv6SourcePrefix, "ipv6-source-prefix", connlimit.DefaultIPv6Prefix,
		"prefix length of one IPv6 source for the per-source connection caps (HTTP and SMTP): a client with a /64 may send from any of its addresses, so they count as one; 128 counts each address alone")
	f.Int64Var(&opts.RequestBodyBudget, "request-body-budget", httpserver.DefaultBodyBudget,
		"bytes of request bodies (pings and API writes) being read at once; past it, a request waits a second, then is answered 503 with Retry-After")
	f.StringVar(&trustedProxies, "trusted-proxies", "",
		"comma-separated CIDRs or addresses of proxies whose X-Forwarded-For names the client, exempt from the per-source connection caps: list the proxies' own addresses, not a range other pods share nor the nodes' addresses (NodePorts and hostNetwork pods arrive from them)")
	f.StringVar(&opts.SMTPAddr, "smtp-bind-address", "", `address to take email pings on, such as ":2525" (off when empty)`)
	f.StringVar(&opts.SMTPDomain, "smtp-domain", "", "domain of email ping addresses, <uuid>@<domain> (default: the host of --base-url)")
	f.IntVar(&opts.SMTPMaxConnectionsPerSource, "smtp-max-connections-per-source", ping.DefaultSMTPMaxConnectionsPerSource,
		"SMTP connections one source (an IPv4 address, an IPv6 --ipv6-source-prefix) may hold (trusted proxies exempt); one more is answered 421")
	f.BoolVar(&cronJobs, "cronjobs", true, "monitor annotated CronJobs and turn their Jobs into pings (needs the cronjobs role)")
	f.StringVar(&opts.HeartbeatURL, "heartbeat-url", "",
		"an external Healthchecks-compatible ping URL the leader pings while healthy, so that something outside the cluster notices when Vigil stops (default $VIGIL_HEARTBEAT_URL)")
	f.DurationVar(&opts.HeartbeatInterval, "heartbeat-interval", heartbeat.DefaultInterval, "how often the heartbeat is sent")
	f.StringVar(&opts.CronJobTimeZone, "cronjob-time-zone", "UTC", "time zone of CronJobs without spec.timeZone (kube-controller-manager's zone)")
	f.DurationVar(&opts.CronJobStartTimeout, "cronjob-start-timeout", controller.NotStartedAfter, "how long a CronJob's run may wait for its pods to run (no node, an image that cannot be pulled) before it is a failure")
	f.IntVar(&opts.Delivery.MaxAttempts, "notify-max-attempts", 10, "attempts per notification before it is given up")
	f.IntVar(&opts.CheckWrites.Slots, "check-write-slots", checks.DefaultWriteSlots,
		"writes of Check objects (the API's and the dashboard's creates, updates, deletes and snoozes) in flight at once; the namespaces waiting for one take turns")
	f.IntVar(&opts.CheckWrites.Waiting, "check-writes-waiting", checks.DefaultWritesWaiting,
		"writes of one namespace's Check objects that may wait for a slot; one more is answered 429 with Retry-After")
	f.IntVar(&opts.Flapping.Limit, "flap-limit", store.DefaultFlapLimit,
		"state changes of one check within --flap-window that are notified one by one; the next is held and one \"flapping\" notice is sent, until the check keeps one state for --flap-steady (-1: notify every change)")
	f.DurationVar(&opts.Flapping.Window, "flap-window", time.Hour, "how long a check's state changes are counted against --flap-limit from the first")
	f.DurationVar(&opts.Flapping.Steady, "flap-steady", 10*time.Minute,
		"how long a flapping check keeps one state before its flapping ends and its Channels are told the state they have not heard")
	f.IntVar(&opts.Delivery.StormThreshold, "storm-threshold", delivery.DefaultStormThreshold,
		"downs (or ups) queued for one Channel within --storm-window that make a storm: from then on the Channel's downs (or ups) go out together, one message listing the checks, each group once its oldest has waited --storm-gather (-1: never group)")
	f.DurationVar(&opts.Delivery.StormWindow, "storm-window", delivery.DefaultStormWindow, "how long a Channel's downs (or ups) are counted against --storm-threshold")
	f.DurationVar(&opts.Delivery.StormGather, "storm-gather", delivery.DefaultStormGather,
		"how long the oldest notification of a storm waits for others to go with it (at most --storm-window)")
	f.IntVar(&opts.Delivery.Workers, "notify-workers", delivery.DefaultWorkers, "notifications sent at once, cluster-wide")
	f.IntVar(&opts.Delivery.PerNamespace, "notify-namespace-workers", 0,
		"notifications of one namespace sent at once, its share of --notify-workers, so that one namespace's slow Channels cannot delay another's alerts (0: a quarter of --notify-workers)")
	f.BoolVar(&opts.ChannelSecretsRequireLabel, "channel-secrets-require-label", false,
		`let Channels use only Secrets labelled monitoring.vigil.dev/channel-secret: "true" (otherwise whoever may create a Channel may send any Secret of its namespace anywhere)`)
	f.StringVar(&egressAllow, "egress-allow", "",
		"CIDRs, addresses and host names every namespace's Channels may reach although the egress guard refuses them (loopback, link-local, private and other non-global ranges, and --egress-deny); a host name reaches private and --egress-deny addresses only, never loopback or link-local ones; the limits ConfigMap's <namespace>.egress-allow adds to it per namespace")
	f.BoolVar(&opts.EgressAllowRelays, "egress-allow-relays", false,
		"let Apprise Channels send Apprise URLs from a Secret to their Apprise server, which connects to each of them past the egress guard: to any address, loopback and cloud metadata included (off: only configurations saved on the Apprise server, named by key)")
	f.StringVar(&egressDeny, "egress-deny", "",
		"CIDRs Channels may not reach besides the non-global ranges: the cluster's Service and Pod ranges, such as 10.96.0.0/12,10.244.0.0/16, and public node addresses or global IPv6 ranges of the cluster, which the defaults do not refuse")
	f.StringVar(&opts.SignIn.IssuerURL, "oidc-issuer-url", "",
		"let people sign in to the dashboard through this OpenID Connect provider (its issuer URL); Kubernetes RBAC then decides what they see (docs/dashboard.md). Off when empty")
	f.StringVar(&opts.SignIn.ClientID, "oidc-client-id", "", "Vigil's client ID at the OpenID Connect provider")
	f.StringVar(&oidcSecretFile, "oidc-client-secret-file", "",
		"a file holding Vigil's client secret at the provider, such as a mounted Secret's key (default $VIGIL_OIDC_CLIENT_SECRET)")
	f.StringVar(&opts.SignIn.RedirectURL, "oidc-redirect-url", "",
		"where the provider sends people back, as registered there (default: --base-url + /auth/callback)")
	f.StringVar(&oidcScopes, "oidc-scopes", strings.Join(signin.DefaultScopes, ","),
		`scopes asked for besides "openid", comma-separated; add "groups" for providers that send groups only for it (Dex, Keycloak with a mapper)`)
	f.StringVar(&opts.SignIn.UsernameClaim, "oidc-username-claim", "email", "the ID token claim that names a person to Kubernetes RBAC (as kube-apiserver's --oidc-username-claim)")
	f.StringVar(&opts.SignIn.GroupsClaim, "oidc-groups-claim", "groups", "the ID token claim that lists a person's groups (as kube-apiserver's --oidc-groups-claim)")
	f.StringVar(&opts.SignIn.UsernamePrefix, "oidc-username-prefix", "", "put before each username, as kube-apiserver's --oidc-username-prefix, so the cluster's RoleBindings apply here too")
	f.StringVar(&opts.SignIn.GroupsPrefix, "oidc-groups-prefix", "", "put before each group, as kube-apiserver's --oidc-groups-prefix")
	f.DurationVar(&opts.SignIn.SessionTTL, "oidc-session-ttl", signin.DefaultSessionTTL, "how long a person's dashboard session lasts")
	f.BoolVar(&keySignIn, "dashboard-key-sign-in", true, "offer the dashboard's sign-in with a project's API key (with --oidc-issuer-url, false leaves only the provider's)")
	f.BoolVar(&projectsFromBindings, "oidc-projects-from-rolebindings", true,
		"ask Kubernetes about a signed-in person's access only in the namespaces where a RoleBinding names them (or one of their groups); false asks about every project, for clusters whose authorizer grants without RoleBindings")
	f.Float32Var(&opts.ReviewQPS, "oidc-reviews-per-second", manager.DefaultReviewQPS,
		"SubjectAccessReviews a second the dashboard may ask the API server for signed-in people, on a client of its own")
	return cmd
}

// signInOptions completes the dashboard's OpenID Connect settings: the
// client secret from its file (or $VIGIL_OIDC_CLIENT_SECRET), the scopes.
func signInOptions(opts *manager.Options, scopes, secretFile string, keySignIn bool) error {
	opts.NoKeySignIn = !keySignIn
	if opts.SignIn.IssuerURL == "" {
		if !keySignIn {
			return errors.New("--dashboard-key-sign-in=false needs --oidc-issuer-url: nobody could sign in")
		}
		return nil
	}
	opts.SignIn.ClientSecret = os.Getenv("VIGIL_OIDC_CLIENT_SECRET")
	if secretFile != "" {
		b, err := os.ReadFile(secretFile)
		if err != nil {
			return fmt.Errorf("--oidc-client-secret-file: %w", err)
		}
		opts.SignIn.ClientSecret = strings.TrimSpace(string(b))
	}
	if opts.SignIn.ClientSecret == "" {
		return errors.New("--oidc-issuer-url needs the client secret: --oidc-client-secret-file or $VIGIL_OIDC_CLIENT_SECRET")
	}
	opts.SignIn.Scopes = nil
	for _, sc := range strings.Split(scopes, ",") {
		if sc = strings.TrimSpace(sc); sc != "" && sc != "openid" {
			opts.SignIn.Scopes = append(opts.SignIn.Scopes, sc)
		}
	}
	return nil
}

// defaultLimitsConfigMap is the limits ConfigMap in the manager's own
// namespace, when it runs in a cluster (the install sets $POD_NAMESPACE).
func defaultLimitsConfigMap() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns + "/" + project.DefaultLimitsConfigMap
	}
	return ""
}

// parseObjectKey reads "<namespace>/<name>"; "" is the zero key.
func parseObjectKey(s string) (types.NamespacedName, error) {
	if s == "" {
		return types.NamespacedName{}, nil
	}
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("%q: want <namespace>/<name>", s)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// envOr is the environment variable's value, or def when it is empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
