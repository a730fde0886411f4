// Package manager holds the RBAC markers of what every Vigil manager does,
// one rule per reason. `make manifests` turns them into the ClusterRole
// manager-role (config/rbac/role.yaml).
package manager

// Checks: the controllers, the Management API and the ping path read them
// from the informer cache (list, watch). The API re-reads one uncached
// after an update lost a race, and the deadline loop asks the API server
// before it forgets the pings of a check the cache lacks (get). The API
// creates checks, changes their spec (update: merge patches) and deletes
// them; ping auto-provisioning (?create=1) creates them. Pings, flips and
// pauses are not in the Kubernetes API: they live in the ping store.
// +kubebuilder:rbac:groups=monitoring.vigil.dev,resources=checks,verbs=get;list;watch;create;patch;delete

// Check status is written by the leader's projector alone, with merge
// patches: the controller's verdict and a projection of the ping store.
// +kubebuilder:rbac:groups=monitoring.vigil.dev,resources=checks/status,verbs=patch

// Channels: read from the cache by the check controller, the API (the
// channels endpoint) and the notifier; their status shows validation and
// the last delivery. The notifier asks the API server (get) for a check or
// channel its cache does not show yet before it gives a delivery up.
// +kubebuilder:rbac:groups=monitoring.vigil.dev,resources=channels,verbs=get;list;watch
// +kubebuilder:rbac:groups=monitoring.vigil.dev,resources=channels/status,verbs=patch

// MaintenanceWindows: read from the cache by the Door (which checks a
// window holds) and their controller, which writes their status (patch:
// what changed, the whole status the first time; controller.statusWrite). A snooze
// (the API's and the dashboard's) is a one-off window the manager creates
// or moves (update) for one check; the controller deletes it once it has
// ended.
// +kubebuilder:rbac:groups=monitoring.vigil.dev,resources=maintenancewindows,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=monitoring.vigil.dev,resources=maintenancewindows/status,verbs=patch

// StatusPages: read from the cache by the page's server (which finds a page
// by its address) and their controller, which writes their status (its
// URL, how many checks it shows, Ready; patch, as a window's).
// +kubebuilder:rbac:groups=monitoring.vigil.dev,resources=statuspages,verbs=get;list;watch
// +kubebuilder:rbac:groups=monitoring.vigil.dev,resources=statuspages/status,verbs=patch

// Secrets, read only:
//   - list and watch: the cache holds the project Secrets (label
//     monitoring.vigil.dev/project=true) with the hashed API keys, the ping
//     key and the badge key; RBAC cannot select by label, so the selector
//     is in the cache's options (manager.CacheOptions).
//   - get: a Channel's credentials (Slack webhook URLs, tokens, SMTP
//     passwords) are read uncached from the Secret it names in its own
//     namespace, when it is validated and when a notification is sent.
//
// The manager never creates or changes a Secret here: API keys are written
// by `vigil keys` with the user's own credentials.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// Events: CheckDown, CheckUp, DeliveryFailed and validation problems, on
// the object concerned, for `kubectl describe`.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
