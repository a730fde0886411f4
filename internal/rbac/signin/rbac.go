// Package signin holds the RBAC markers of the dashboard's OpenID Connect
// sign-in: `make manifests` turns them into the ClusterRole dashboard-signin
// (vigil-dashboard-signin once installed; config/rbac/signin/role.yaml).
//
// config/default binds it nowhere, since sign-in is off until an
// administrator configures a provider; the chart binds it with
// dashboard.oidc.issuerURL, and an install from config/ binds it with a
// ClusterRoleBinding to the manager (docs/dashboard.md). Without it the
// dashboard still works: a person's board asks about every project.
package signin

// RoleBindings, read (list and watch, into an index stripped to their
// subjects): a person's board asks Kubernetes only about the namespaces
// where a RoleBinding names them or one of their groups (package access),
// not about every project of the fleet.
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=list;watch
