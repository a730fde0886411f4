# Vigil's build. Everything it needs is built from Go modules (no binary is
# downloaded) and cached under bin/ by version, so the second run builds
# nothing. The two commands a newcomer needs: `make dev` and `make test`.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

GO ?= go
export GOTOOLCHAIN ?= local
# One build configuration for all that make builds (the tools, the tests, the
# binaries the tests build, the image): no cgo and -trimpath, as the image
# ships. Go's build cache keys a package by these settings, so with one
# configuration each package compiles once and not once per setting; -s
# links without the symbol table and DWARF, in half the time (panics and
# profiles still name functions). To debug with Delve, override GOFLAGS.
export CGO_ENABLED ?= 0
export GOFLAGS ?= -buildvcs=false -trimpath -ldflags=-s
# The compiler collects its garbage less often in make's big builds (the
# tools, every package before the tests): 13% less CPU compiling client-go
# from cold, for memory this machine has (docs/performance.md). The tests
# themselves run with Go's default.
COMPILE_GOGC ?= 400

IMG ?= vigil:dev
KUBECTL ?= kubectl
PLATFORMS ?= linux/amd64,linux/arm64

BIN := $(CURDIR)/bin
# Tool versions come from the module pinning them, hack/tools.
modversion = $(shell awk '$$1 == "$(2)" && $$2 ~ /^v/ { print $$2; exit } $$1 == "require" && $$2 == "$(2)" { print $$3; exit }' $(1))
KUBE_VERSION := $(call modversion,hack/tools/go.mod,k8s.io/kubernetes)
ETCD_VERSION := $(call modversion,hack/tools/go.mod,go.etcd.io/etcd/server/v3)
CONTROLLER_TOOLS_VERSION := $(call modversion,hack/tools/go.mod,sigs.k8s.io/controller-tools)
KUSTOMIZE_VERSION := $(call modversion,hack/tools/go.mod,sigs.k8s.io/kustomize/kustomize/v5)
GOLANGCI_LINT_VERSION := $(call modversion,hack/tools/lint/go.mod,github.com/golangci/golangci-lint/v2)
KWOK_VERSION := $(call modversion,hack/tools/go.mod,sigs.k8s.io/kwok)
HELM_VERSION := $(call modversion,hack/tools/go.mod,helm.sh/helm/v4)
GINKGO_VERSION := $(call modversion,hack/tools/go.mod,github.com/onsi/ginkgo/v2)

KUBE_BIN := $(BIN)/k8s/$(KUBE_VERSION)
KWOK := $(BIN)/kwok/$(KWOK_VERSION)/kwok
ETCD_BIN := $(BIN)/etcd/$(ETCD_VERSION)
# The control-plane binaries envtest and `make dev` use, side by side.
ENVTEST_ASSETS := $(BIN)/envtest/k8s-$(KUBE_VERSION)-etcd-$(ETCD_VERSION)
CONTROLLER_GEN := $(BIN)/tools/controller-gen-$(CONTROLLER_TOOLS_VERSION)
KUSTOMIZE := $(BIN)/tools/kustomize-$(KUSTOMIZE_VERSION)
GOLANGCI_LINT := $(BIN)/tools/golangci-lint-$(GOLANGCI_LINT_VERSION)
HELM := $(BIN)/tools/helm-$(HELM_VERSION)
GINKGO := $(BIN)/tools/ginkgo-$(GINKGO_VERSION)

##@ General

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: dev
dev: envtest manifests $(KWOK) build ## Run Vigil locally: control plane, a simulated node and one that runs pods as local processes, CRDs, demo project and key, manager on 127.0.0.1:8000.
	@echo ">> starting Vigil (control-plane binaries from $(ENVTEST_ASSETS))"
	$(BIN)/vigil dev --assets $(ENVTEST_ASSETS) --kwok $(KWOK)

.PHONY: manifests
manifests: $(CONTROLLER_GEN) $(KUSTOMIZE) ## Generate the CRDs and RBAC from the Go types and markers, dist/install.yaml and dist/install-postgres.yaml.
	$(CONTROLLER_GEN) crd paths="./api/..." output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=manager-role paths="./internal/rbac/manager" output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) rbac:roleName=cronjobs paths="./internal/rbac/cronjobs" output:rbac:artifacts:config=config/rbac/cronjobs
	$(CONTROLLER_GEN) rbac:roleName=ping-url-secrets paths="./internal/rbac/pingurlsecrets" output:rbac:artifacts:config=config/rbac/pingurlsecrets
	$(CONTROLLER_GEN) rbac:roleName=dashboard-signin paths="./internal/rbac/signin" output:rbac:artifacts:config=config/rbac/signin
	@mkdir -p dist charts/vigil/crds
	cp config/crd/bases/*.yaml charts/vigil/crds/
	$(KUSTOMIZE) build config/default > dist/install.yaml
	$(KUSTOMIZE) build config/postgres > dist/install-postgres.yaml

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate DeepCopy methods and the time-zone validation rule.
	$(GO) run ./hack/gen-timezones > api/v1alpha1/zz_generated.timezone.go.tmp
	mv api/v1alpha1/zz_generated.timezone.go.tmp api/v1alpha1/zz_generated.timezone.go
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: fmt
fmt: ## Format the Go code.
	$(GO) fmt ./...

.PHONY: vet
vet: ## Run go vet.
	$(GO) vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) $(HELM) ## Check formatting, go vet, golangci-lint and the Helm chart (both ping stores).
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GOLANGCI_LINT) run ./...
	$(HELM) lint --strict charts/vigil
	$(HELM) lint --strict charts/vigil --set store.postgres.existingSecret=vigil-postgres

.PHONY: tidy
tidy: ## Tidy every go.mod, Vigil's and the tools' at the same versions (go.work).
	$(GO) work sync
	$(GO) mod tidy
	cd hack/tools && $(GO) mod tidy
	cd hack/tools/lint && GOWORK=off $(GO) mod tidy

.PHONY: verify
verify: fmt vet manifests generate tidy ## Fail if formatting or generation changes the tree (what CI runs before the tests).
	@if [ -n "$$(git status --porcelain)" ]; then \
		echo "The tree changed: run 'make fmt manifests generate tidy' and commit the result."; \
		git status --porcelain; git --no-pager diff --stat; exit 1; fi

##@ Test

# How much runs side by side comes from the machine, never from constants
# tuned on one: nproc cores. The tests wait more than they compute (real
# timeouts and graces, leases, restarts; test/e2e is three quarters
# waiting), so two test processes run per core: test/e2e's installs on
# NPROC Ginkgo processes (each Ordered container on a process of its own)
# and every other package, 2 x NPROC at a time, beside them. Each process
# holds at most one control plane, so at most 3 x NPROC are alive at once,
# and one per two cores starts at a time (testenv's start lock; a start is
# a control plane's heaviest minute).
NPROC := $(shell nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
TEST_PROCS ?= $(shell echo $$((2 * $(NPROC))))
E2E_PROCS ?= $(NPROC)
# The ping stores the whole-manager suites run on: each such suite
# (testenv.MainOnEachStore) runs once per store, on one control plane.
TEST_STORES ?= sqlite,postgres

E2E := github.com/vigil-operator/vigil/test/e2e
# The packages that take longest (warm, 2 cores: dashboardtest about 5 min,
# each of the others 2 to 3 min), named first: go test starts packages in
# the order named, and the run ends with short ones instead of waiting on
# a long one started last. Every package runs either way.
LONGEST_FIRST := ./internal/dashboard/dashboardtest ./internal/controller ./internal/store ./internal/delivery \
	./internal/project/projecttest ./test/image ./internal/ping/pingtest ./test/cronjobs ./internal/api/apitest
# The binaries tests run as processes, built before the runs.
TEST_VIGIL := $(BIN)/test/vigil

# make test: first everything compiles (every package and its tests, Vigil
# for both platforms of the image, the binaries tests run, the previous
# release test/upgrade starts from), so that nothing compiles while
# control planes start. Then two runs side by side, in a temporary
# directory of their own: the installs end to end (lines marked [e2e]) and
# every other package, the longest first. At
# the end, hack/test-report.sh says how many control planes were started,
# and fails the run if a process the tests started is still running.
.PHONY: test
test: test-tools manifests generate ## Run every test (unit, envtest, interop, the install end to end, the dashboard in a browser, both store backends) offline.
	@echo "== compiling every package and its tests, Vigil for arm64, and the binaries the tests run ($(NPROC) cores)"
	@$(MAKE) --no-print-directory -j$(NPROC) compile-tests compile-arm64 compile-vigil compile-previous
	@echo "== the installs end to end on $(E2E_PROCS) processes (marked [e2e]) beside every other package, $(TEST_PROCS) at a time, on $(TEST_STORES)"
	@run=$${TMPDIR:-/tmp}/vigil-test-$$(date +%s%N) && mkdir -m 755 "$$run" && trap 'rm -rf "$$run"' EXIT && status=0 && \
		{ TMPDIR=$$run VIGIL_TEST_BOOTS=$$run/boots $(MAKE) --no-print-directory -j2 test-e2e test-packages || status=$$?; } && \
		{ hack/test-report.sh "$$run" || status=1; } && exit $$status

.PHONY: compile-tests compile-arm64 compile-vigil compile-previous test-e2e test-packages
compile-tests: # part of make test
	GOGC=$(COMPILE_GOGC) $(GO) list -export -test ./... >/dev/null
compile-arm64: # part of make test: test/image builds the image for arm64 too
	GOOS=linux GOARCH=arm64 GOGC=$(COMPILE_GOGC) $(GO) list -export -deps ./cmd/vigil >/dev/null
compile-vigil: compile-tests # part of make test: this tree's vigil, which tests run as a process (testenv.Vigil)
	$(GO) build -o $(TEST_VIGIL) ./cmd/vigil
compile-previous: # part of make test: the release test/upgrade starts from (testenv.PreviousRelease), built once and kept in bin/upgrade
	GOGC=$(COMPILE_GOGC) hack/previous-release.sh build >/dev/null
test-e2e: # part of make test
	VIGIL_BIN=$(TEST_VIGIL) KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) KUSTOMIZE=$(KUSTOMIZE) HELM=$(HELM) KWOK=$(KWOK) \
		$(GINKGO) --procs=$(E2E_PROCS) --timeout=30m ./test/e2e 2>&1 | sed -u 's/^/[e2e] /'
test-packages: # part of make test
	packages=$$($(GO) list ./... | grep -vxF $(E2E)) && \
	VIGIL_BIN=$(TEST_VIGIL) VIGIL_TEST_STORE=$(TEST_STORES) KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) KUSTOMIZE=$(KUSTOMIZE) HELM=$(HELM) KWOK=$(KWOK) \
		$(GO) test -p $(TEST_PROCS) -count=1 -timeout 40m $(LONGEST_FIRST) $$packages

# What the tests need, and only that: the control plane (kube-apiserver,
# etcd, kubectl, and for test/cronjobs' whole cluster kube-controller-manager,
# kube-scheduler and kwok), Helm, the generators and Ginkgo's runner (one go
# build), and beside it Debian's PostgreSQL, Prometheus, Chromium and podman.
.PHONY: test-tools
test-tools: ## Build and install what the tests need.
	@$(MAKE) --no-print-directory -j2 --output-sync=line envtest $(KWOK) packages $(HELM) $(CONTROLLER_GEN) $(KUSTOMIZE) $(GINKGO)

.PHONY: bench-lateness
bench-lateness: test-assets ## Measure how late checks are recorded down (and statuses follow), and the manager's heap, with 1,000 and 10,000 checks.
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) run ./hack/bench/lateness -checks 1000
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) run ./hack/bench/lateness -checks 10000

.PHONY: bench-scale
bench-scale: test-assets ## Measure what a fleet costs: manager heap and RSS, kube-apiserver and etcd RSS per check at CHECKS/10 and CHECKS (10,000) over NAMESPACES (100), and a restart to the first acknowledged ping.
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) run ./hack/bench/scale -checks $(or $(CHECKS),10000) -namespaces $(or $(NAMESPACES),100)

.PHONY: bench-jobs
bench-jobs: test-assets ## Measure a :00 wave of CronJob runs: 5,000 CronJobs whose runs start and end at once, live and as a backlog after a restart, with one Job worker and with the default.
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) run ./hack/bench/jobs -cronjobs $(or $(CRONJOBS),5000) -namespaces $(or $(NAMESPACES),50)

.PHONY: bench-cronwave
bench-cronwave: envtest $(KWOK) ## Measure a :00 wave of CRONJOBS (1,000) CronJob runs on a whole cluster: kube-controller-manager makes the Jobs, kwok runs their pods; when Vigil recorded each run.
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) KWOK=$(KWOK) $(GO) run ./hack/bench/cronwave -cronjobs $(or $(CRONJOBS),1000)

.PHONY: bench-api
bench-api: test-assets ## Measure API create, update and list, the Prometheus scrape and the dashboard with 10,000 checks against the raw API-server write rate.
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) run ./hack/bench/api -checks 10000

.PHONY: bench-pings
bench-pings: test-assets postgres ## Measure the ping path with 10,000 checks against the raw API-server write rate, etcd bytes per ping, and PostgreSQL mode with one and two replicas (docs/performance.md).
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) run ./hack/bench/pings -checks 10000 -pings 20000 -burst 4000

.PHONY: bench-failover
bench-failover: test-assets postgres ## Measure a leader's crash in PostgreSQL mode: the lease gap, pings meanwhile, down and notification lateness (docs/performance.md).
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) run ./hack/bench/failover -checks 1000

.PHONY: packages
packages: ## Make sure PostgreSQL, Prometheus, Chromium and podman are installed (Debian's packages, one apt-get, when root); the tests run them for real.
	hack/ensure-packages.sh postgres prometheus chromium podman

.PHONY: postgres
postgres: ## Make sure the PostgreSQL server binaries are installed (Debian's package, when root); the tests start their own server.
	hack/ensure-packages.sh postgres

.PHONY: test-assets
test-assets: $(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/etcd $(ENVTEST_ASSETS)/kubectl ## Build the control-plane binaries the tests need from Go modules (first run: several minutes).

.PHONY: envtest
envtest: test-assets $(ENVTEST_ASSETS)/kube-controller-manager $(ENVTEST_ASSETS)/kube-scheduler ## Build every control-plane binary make dev runs from Go modules (first run: several minutes).

# The binaries are the cache: make must not delete them as intermediate
# files of the symlink rule, or every run would build them again.
.PRECIOUS: $(KUBE_BIN)/% $(ETCD_BIN)/%

$(ENVTEST_ASSETS)/%: $(KUBE_BIN)/% | $(ENVTEST_ASSETS)
	ln -sf $(KUBE_BIN)/$* $@
$(ENVTEST_ASSETS)/etcd: $(ETCD_BIN)/etcd | $(ENVTEST_ASSETS)
	ln -sf $(ETCD_BIN)/etcd $@
$(ENVTEST_ASSETS):
	mkdir -p $@

# Every tool, by one go command from the one module pinning them
# (hack/tools/tools.go): the packages they share compile once, the links of
# one overlap the compiles of another, and with go.work the packages they
# share with Vigil (client-go, apimachinery, gRPC, ...) are already compiled
# when the tests need them. So any of them builds them all: the first make
# of a fresh clone, whatever its target, takes about 12 min on 2 cores. A
# tool's version is in its file's name, so a new version builds again. Go
# names the etcd binary after its package.
TEST_KUBE := kube-apiserver kubectl kube-controller-manager kube-scheduler
TOOLS := $(addprefix $(KUBE_BIN)/,$(TEST_KUBE)) $(ETCD_BIN)/etcd $(KWOK) $(HELM) $(CONTROLLER_GEN) $(KUSTOMIZE) $(GINKGO)
TOOL_PACKAGES := $(addprefix k8s.io/kubernetes/cmd/,$(TEST_KUBE)) go.etcd.io/etcd/server/v3 sigs.k8s.io/kwok/cmd/kwok \
	helm.sh/helm/v4/cmd/helm sigs.k8s.io/controller-tools/cmd/controller-gen sigs.k8s.io/kustomize/kustomize/v5 \
	github.com/onsi/ginkgo/v2/ginkgo
$(TOOLS) &:
	@echo ">> building the tools from hack/tools (first run only; about 12 min on 2 cores): $(TEST_KUBE) $(KUBE_VERSION), etcd $(ETCD_VERSION), kwok $(KWOK_VERSION), helm $(HELM_VERSION), controller-gen $(CONTROLLER_TOOLS_VERSION), kustomize $(KUSTOMIZE_VERSION), ginkgo $(GINKGO_VERSION)"
	mkdir -p $(BIN) $(KUBE_BIN) $(ETCD_BIN) $(dir $(KWOK)) $(BIN)/tools
	out=$$(mktemp -d $(BIN)/.tools.XXXXXX) && trap 'rm -rf "$$out"' EXIT && \
		(cd hack/tools && GOGC=$(COMPILE_GOGC) $(GO) build -o "$$out"/ $(TOOL_PACKAGES)) && \
		cd "$$out" && mv $(TEST_KUBE) $(KUBE_BIN)/ && mv server $(ETCD_BIN)/etcd && mv kwok $(KWOK) && \
		mv helm $(HELM) && mv controller-gen $(CONTROLLER_GEN) && mv kustomize $(KUSTOMIZE) && mv ginkgo $(GINKGO)

$(GOLANGCI_LINT):
	@echo ">> building golangci-lint $(GOLANGCI_LINT_VERSION) (first run only; a few minutes)"
	cd hack/tools/lint && GOWORK=off $(GO) build -o $@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint

##@ Build

.PHONY: build
build: ## Build the vigil binary into bin/vigil.
	$(GO) build -o $(BIN)/vigil ./cmd/vigil

.PHONY: run
run: build ## Run the manager against the cluster in your kubeconfig (CRDs must be installed).
	$(BIN)/vigil manager --leader-elect=false --metrics-secure=false --metrics-bind-address=127.0.0.1:8080 --health-probe-bind-address=127.0.0.1:8081

# The version images and releases carry: the newest tag, or 0.0.0-dev.
VERSION ?= $(shell git describe --tags --exact-match 2>/dev/null | sed 's/^v//' | grep . || echo 0.0.0-dev)

.PHONY: image
image: ## Build the OCI image for PLATFORMS into bin/image/oci (no container engine), with its SBOM; reproducible.
	$(GO) run ./hack/image -out $(BIN)/image -version $(VERSION) -platforms $(PLATFORMS)

.PHONY: release
release: $(HELM) $(KUSTOMIZE) ## Write a release into dist/release/VERSION: the image and its SBOM (signed with SIGNING_KEY, a PEM key, when set), the chart and install manifests pinned to its digest, checksums.
	GO=$(GO) HELM=$(HELM) KUSTOMIZE=$(KUSTOMIZE) PLATFORMS=$(PLATFORMS) SIGNING_KEY=$(SIGNING_KEY) hack/release.sh $(VERSION) dist/release/$(VERSION)

.PHONY: docker-build
docker-build: ## Build the container image with a Docker engine (make image needs none).
	docker build --build-arg VERSION=$(VERSION) -t $(IMG) .

##@ Deployment

.PHONY: install
install: manifests $(KUSTOMIZE) ## Install the CRDs into the cluster in your kubeconfig.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply --server-side -f -

.PHONY: uninstall
uninstall: manifests $(KUSTOMIZE) ## Remove the CRDs (and every Check and Channel) from the cluster.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found -f -

# STORE=postgres deploys config/postgres (docs/postgres.md; create the Secret
# vigil-postgres first) instead of config/default.
STORE ?= embedded
DEPLOY_CONFIG = $(if $(filter postgres,$(STORE)),config/postgres,config/default)

.PHONY: deploy
deploy: manifests $(KUSTOMIZE) ## Deploy the manager with image $(IMG) to the cluster in your kubeconfig (STORE=postgres: config/postgres).
	cd config/manager/$(STORE) && $(KUSTOMIZE) edit set image vigil=$(IMG)
	$(KUSTOMIZE) build $(DEPLOY_CONFIG) | $(KUBECTL) apply --server-side -f -

.PHONY: undeploy
undeploy: $(KUSTOMIZE) ## Remove the manager from the cluster (STORE=postgres: config/postgres).
	$(KUSTOMIZE) build $(DEPLOY_CONFIG) | $(KUBECTL) delete --ignore-not-found -f -

.PHONY: clean
clean: ## Remove built binaries (keeps the control-plane binaries and dev data).
	rm -f $(BIN)/vigil
