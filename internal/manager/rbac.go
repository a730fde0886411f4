package manager

// The manager's permissions, generated into config/rbac/role.yaml by
// `make manifests`. Each controller and the HTTP server declare what they
// use; keep this list to exactly that.
//
// The HTTP server creates, updates and deletes Checks for API clients, reads
// Channels, and reads the project Secrets (selected by label) that hold API
// keys.
// +kubebuilder:rbac:groups=monitoring.vigil.dev,resources=checks,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=monitoring.vigil.dev,resources=channels,verbs=get;list;watch
// +kubebuilder:rbac:groups=monitoring.vigil.dev,resources=checks/status;channels/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
