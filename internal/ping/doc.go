// Package ping implements the ping protocol: the URLs jobs call to report
// (/ping/<uuid>[/start|/fail|/log|/<exit-status>] and the slug forms), email
// pings, and what a ping records. A check is found in the informer cache and
// the ping committed to the ping store, which answers once it is durable:
// the Kubernetes API is not on the path, except to create a check for a slug
// URL with ?create=1.
package ping
