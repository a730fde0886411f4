// Package ping implements the ping protocol: the URLs jobs call to report
// (/ping/<uuid>[/start|/fail|/log|/<exit-status>] and the slug forms), what a
// ping records, and the durable, group-committed write that acknowledges it
// only once it is stored in the Kubernetes API.
package ping
