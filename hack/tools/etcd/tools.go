//go:build tools

// Package etcd pins the etcd server that backs the local kube-apiserver in
// tests and `make dev`. The module root of go.etcd.io/etcd/server/v3 is the
// etcd main package.
package etcd

import _ "go.etcd.io/etcd/server/v3"
