// Package pingurlsecrets holds the RBAC markers of spec.pingURLSecret: the
// check controller publishes a check's ping URL in a Secret of the check's
// namespace, owned by the check. `make manifests` turns them into the
// ClusterRole ping-url-secrets (vigil-ping-url-secrets once installed;
// config/rbac/pingurlsecrets/role.yaml).
//
// The install binds it nowhere: writing Secrets cluster-wide is more than a
// monitoring tool should hold. A namespace that uses spec.pingURLSecret
// binds it to the manager with a RoleBinding in that namespace; until then
// its checks report Ready=False with reason PingURLSecretForbidden, and the
// message says what to run.
package pingurlsecrets

// The Secret is read first (uncached: the cache holds only project
// Secrets), created when missing, and updated when the URL changed. A
// Secret the check does not own is never written.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update

// The Secret is owned by its check; where OwnerReferencesPermissionEnforcement
// runs, blockOwnerDeletion on that reference needs update on the check's
// finalizers.
// +kubebuilder:rbac:groups=monitoring.vigil.dev,resources=checks/finalizers,verbs=update
