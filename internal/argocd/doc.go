// Package argocd holds the tests of the Argo CD integration shipped in
// config/argocd: the health check Argo CD runs on Check objects.
package argocd
