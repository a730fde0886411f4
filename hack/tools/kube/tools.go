//go:build tools

// Package kube pins the Kubernetes control-plane binaries Vigil's tests and
// `make dev` run: kube-apiserver (envtest and dev), kube-controller-manager
// (garbage collection, CronJob and Job controllers in dev) and kube-scheduler
// (binds pods to kwok's simulated nodes in dev) and kubectl. They are built from the
// k8s.io/kubernetes module because release binaries cannot be downloaded here.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
