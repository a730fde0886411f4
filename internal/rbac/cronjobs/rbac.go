// Package cronjobs holds the RBAC markers of the CronJob feature (on unless
// the manager runs with --cronjobs=false): a Check for every annotated
// CronJob, and start, success and fail pings from its Jobs. `make
// manifests` turns them into the ClusterRole cronjobs (vigil-cronjobs once installed)
// (config/rbac/cronjobs/role.yaml).
package cronjobs

// CronJobs are watched for the monitoring.vigil.dev/check annotation and
// their schedule, time zone and suspension.
// +kubebuilder:rbac:groups=batch,resources=cronjobs,verbs=list;watch

// The Check made for a CronJob is owned by it, so it goes when the CronJob
// goes. Where the OwnerReferencesPermissionEnforcement admission plugin
// runs, blockOwnerDeletion on that reference needs update on the CronJob's
// finalizers.
// +kubebuilder:rbac:groups=batch,resources=cronjobs/finalizers,verbs=update

// Jobs: their start, completion and failure become pings. The cache keeps
// only their identity, owner and status (manager.CacheOptions).
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=list;watch

// A failed Job's fail ping says which container of its failed pod failed
// and how (the pods are listed by job-name label, uncached, only when a
// failure is about to be recorded), and carries the tail of its log (one
// log read) only when the CronJob is annotated monitoring.vigil.dev/logs:
// "true" (docs/cronjobs.md).
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// The Warning Events of a failed (or not starting) Job's pods say why a pod
// never ran (an image that cannot be pulled, no node for it), also once the
// pod is gone; the Job's own Events name its pods. Listed by field selector
// (involvedObject), uncached, only then.
// +kubebuilder:rbac:groups="",resources=events,verbs=list
// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get

// CronJobPolicies and ClusterCronJobPolicies decide which CronJobs get a
// Check without an annotation; their status says how many and which ones
// two policies select. A cluster policy selects namespaces by label, so
// namespaces are watched (their metadata only). With --namespaces the
// manager applies no cluster policy and watches no namespace.
// +kubebuilder:rbac:groups=monitoring.vigil.dev,resources=cronjobpolicies;clustercronjobpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=monitoring.vigil.dev,resources=cronjobpolicies/status;clustercronjobpolicies/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=list;watch
