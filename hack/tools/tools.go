//go:build tools

// Package tools pins every tool `make dev` and `make test` build from Go
// modules, in one module so that they share one set of dependency versions:
//
//   - kube-apiserver and etcd back the tests' control planes (envtest) and
//     `make dev`; kubectl drives them; kube-controller-manager (garbage
//     collector, CronJob and Job controllers) and kube-scheduler run
//     CronJobs for real in test/cronjobs and `make dev`. The module root of
//     go.etcd.io/etcd/server/v3 is the etcd main package.
//   - kwok simulates the node that runs those pods: there is no kubelet.
//   - helm lints and renders charts/vigil; kustomize renders config/;
//     controller-gen writes the CRDs, RBAC and DeepCopy methods.
//   - ginkgo runs test/e2e's installs side by side (ginkgo -procs); its
//     version is the one Vigil's tests import, as the runner requires.
//
// The repository's go.work puts this module beside Vigil's own, and
// `make tidy` (go work sync) keeps both at the same versions. A package both
// use (client-go, apimachinery, gRPC, ...) then compiles once for the tools
// and the tests alike (docs/performance.md). golangci-lint stays in its own
// module, hack/tools/lint: only `make lint` builds it.
package tools

import (
	_ "github.com/onsi/ginkgo/v2/ginkgo"
	_ "go.etcd.io/etcd/server/v3"
	_ "helm.sh/helm/v4/cmd/helm"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
	_ "sigs.k8s.io/kustomize/kustomize/v5"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
