# autoresearch-operator

LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_TOOLS_VERSION ?= v0.23.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
# golangci-lint with the kube-api-linter module plugin compiled in, built from
# hack/tools, whose go.mod pins both versions.
GOLANGCI_LINT_VERSION := $(shell awk '$$1 == "github.com/golangci/golangci-lint/v2" { print $$2 }' hack/tools/go.mod)
KUBE_API_LINTER_VERSION := $(shell awk '$$1 == "sigs.k8s.io/kube-api-linter" { print $$2 }' hack/tools/go.mod)
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)-kal-$(KUBE_API_LINTER_VERSION)
# The attack corpus (test/tamper) runs well past go test's default ten
# minutes on a two-core machine.
GO_TEST_FLAGS ?= -count=1 -timeout 30m
# The version stamped into the binaries (`autoresearch version`, `manager
# --version`) and the tag of the image hack/image.sh builds: a release is
# the git tag vX.Y.Z; builds between releases say how far they are from it.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
VERSION_LDFLAGS := -X github.com/autoresearch-dev/autoresearch-operator/internal/version.version=$(VERSION)
DEMO_DIR ?= $(CURDIR)/.demo
DEMO_HOLDOUT_DIR ?= $(CURDIR)/.demo-holdout
# The seed of demo-holdout's hidden holdout text: new prose from the example's
# grammar that no file of the example, and so no Researcher, holds.
DEMO_HOLDOUT_SEED ?= 73196451

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-12s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate the CRD and the manager's RBAC from the markers, and copy them into the Helm chart.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./api/..." paths="./controllers/..." output:crd:artifacts:config=config/crd/bases
	@$(MAKE) --no-print-directory helm-manifests

.PHONY: generate
generate: controller-gen ## Generate the API's DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: fmt
fmt: ## Run gofmt.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet.
	go vet ./...
	cd examples/tiny-lm-go && go vet ./...

.PHONY: lint
lint: manifests generate lint-checks ## Check formatting, vet, golangci-lint (.golangci.yml) and that generated files are committed.

# lint-checks is lint less generating: it only reads the tree, so that a
# build may run beside it (make test).
.PHONY: lint-checks
lint-checks: vet golangci-lint
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GOLANGCI_LINT) run ./...
	@git diff --exit-code -- config api charts || (echo "generated files are out of date: run make manifests generate and commit"; exit 1)

# The end-to-end tiers this machine can run. make e2e needs root and mount
# namespaces for its process-kubelet node; make e2e-real needs root,
# overlayfs and Debian's runc, CNI plugins and debootstrap (or apt-get to
# install them) for its real node.
E2E_OK = $(shell [ "$$(id -u)" = 0 ] && unshare -m true 2>/dev/null && echo yes)
E2E_REAL_OK = $(shell [ "$$(id -u)" = 0 ] && grep -qw overlay /proc/filesystems && \
	{ command -v apt-get >/dev/null || { command -v runc >/dev/null && [ -x /usr/lib/cni/bridge ] && command -v debootstrap >/dev/null; }; } && echo yes)
E2E_REAL_IMAGES = operator go torch
# What make e2e-real runs: the tests only a real node can run, and those of
# the broad suite that run on either node (clusterSource, startManager).
E2E_REAL_TESTS = TestRealNode.*|TestControlPlaneVersion|TestExperimentOnCluster|TestCandidatesOnCluster|TestPipelineOnCluster|TestOutputGitPushesToARemote|TestQuotaAdmitsEveryStep|TestABudgetStopsTheLoopAndRaisingItResumes|TestADatasetReachesTraining|TestHoldoutOnCluster|TestKubectlPlugin|TestTorchrunOnEightGPUs
# The tests of the process node's suite that a test of E2E_REAL_TESTS
# covers as a whole: make test leaves them out where the real node runs.
E2E_REAL_COVERS = TestDisruptionIsRetried
E2E_BUILD_LOG = $(LOCALBIN)/e2e-build.log
# go test starts packages in the order it is given them: the slowest first,
# so that none of them starts last.
SLOW_TEST_PACKAGES = ./test/tamper ./internal/runner ./internal/parity ./controllers ./internal/agent

# make test builds the end-to-end clusters while lint and the unit tests
# run, once the generated files are written and apt has installed the
# tests' packages (the build may run apt too): its downloads (modules,
# Debian's packages) wait on the network, not the CPU. The build runs in a
# session of its own (a process group to stop on an interrupt), which the
# kernel schedules as one group beside make's (autogroup): the group's nice
# value, not only its processes', yields the CPU to the tests.
.PHONY: test
test: ## Run every test (installs what they need first).
	@$(MAKE) --no-print-directory manifests generate test-deps
	@set -u; build=; \
	if [ -n "$(E2E_OK)$(E2E_REAL_OK)" ]; then \
		echo "make test: building the end-to-end clusters while lint and the unit tests run, at nice 19 (log: $(E2E_BUILD_LOG))"; \
		mkdir -p $(LOCALBIN); \
		E2E_NODE=$(if $(E2E_REAL_OK),real,process) NODE_IMAGES="$(E2E_REAL_IMAGES)" \
			setsid sh -c '{ echo 19 >/proc/self/autogroup; } 2>/dev/null; exec nice -n 19 hack/e2e/cluster.sh build' \
			>$(E2E_BUILD_LOG) 2>&1 & build=$$!; \
		trap 'kill -- -$$build 2>/dev/null' EXIT; trap 'exit 130' INT TERM HUP; \
	fi; \
	$(MAKE) --no-print-directory lint-checks build helm-lint && \
	assets=$$(hack/envtest.sh) && KUBEBUILDER_ASSETS=$$assets go test $(GO_TEST_FLAGS) $(SLOW_TEST_PACKAGES) ./... && \
		(cd examples/tiny-lm-go && go test $(GO_TEST_FLAGS) ./...); rc=$$?; \
	[ $$rc = 0 ] || exit $$rc; \
	if [ -n "$$build" ] && ! wait $$build; then \
		echo "make test: building the end-to-end clusters failed; the end of $(E2E_BUILD_LOG):"; tail -n 40 $(E2E_BUILD_LOG); exit 1; \
	fi; \
	exit $$rc
	@if [ -n "$(E2E_OK)" ]; then \
		$(MAKE) --no-print-directory e2e $(if $(E2E_REAL_OK),E2E_SKIP_REAL=yes); \
	else \
		echo "make test: skipping make e2e, which needs root and mount namespaces for its process-kubelet node"; \
	fi
	@if [ -n "$(E2E_REAL_OK)" ]; then \
		$(MAKE) --no-print-directory e2e-real; \
	else \
		echo "make test: skipping make e2e-real, which needs root, overlayfs and Debian's runc, CNI plugins and debootstrap (or apt-get to install them) for its real node"; \
	fi

.PHONY: envtest
envtest: ## Make kube-apiserver and etcd for the controller tests (cached in bin/).
	@hack/envtest.sh

.PHONY: test-deps
test-deps:
	@hack/install-test-deps.sh

.PHONY: bench
bench: ## Run the benchmarks.
	go test -run '^$$' -bench . -benchmem -timeout 60m ./...

##@ Build

.PHONY: build
build: ## Build the autoresearch binary into bin/, stamped with $(VERSION).
	go build -ldflags "$(VERSION_LDFLAGS)" -o $(LOCALBIN)/autoresearch ./cmd/autoresearch

.PHONY: plugin
plugin: ## Build the kubectl plugin, one static binary stamped with $(VERSION), into bin/kubectl-autoresearch (copy it onto your PATH).
	CGO_ENABLED=0 go build -trimpath -ldflags="-s -w $(VERSION_LDFLAGS)" -o $(LOCALBIN)/kubectl-autoresearch ./cmd/kubectl-autoresearch

.PHONY: release
release: helm ## Write release VERSION=vX.Y.Z into dist/: the CLI and kubectl plugin for linux/darwin on amd64/arm64, the CRD bundle, the chart, install.yaml, SHA256SUMS (hack/release.sh).
	@case "$(origin VERSION)" in "command line"|environment) ;; *) echo "make release needs VERSION=vX.Y.Z"; exit 1 ;; esac
	VERSION="$(VERSION)" LDFLAGS="$(VERSION_LDFLAGS)" HELM=$(HELM) KUBECTL=$(KUBECTL) hack/release.sh

.PHONY: demo
demo: build ## Run the bundled tiny-lm-go example for six rounds with the scripted Researcher, then write its report to .demo/report.
	@rm -rf $(DEMO_DIR) && mkdir -p $(DEMO_DIR)/repo
	@cp -r examples/tiny-lm-go/. $(DEMO_DIR)/repo/
	@rm -rf $(DEMO_DIR)/repo/data $(DEMO_DIR)/repo/ckpt
	@cd $(DEMO_DIR)/repo && git init -q -b main && git add -A && \
		git -c user.name=demo -c user.email=demo@localhost commit -q -m "tiny-lm-go baseline"
	@echo "Compiling the example once so that rounds measure training, not the Go toolchain..."
	@cd $(DEMO_DIR)/repo && go build -o /dev/null ./prepare ./train ./eval
	PATH="$(LOCALBIN):$$PATH" autoresearch run -f $(DEMO_DIR)/repo/experiment.yaml --worktree $(DEMO_DIR)/worktree
	@echo
	PATH="$(LOCALBIN):$$PATH" autoresearch status -f $(DEMO_DIR)/repo/experiment.yaml --worktree $(DEMO_DIR)/worktree
	@echo
	PATH="$(LOCALBIN):$$PATH" autoresearch report -f $(DEMO_DIR)/repo/experiment.yaml --worktree $(DEMO_DIR)/worktree -o $(DEMO_DIR)/report

.PHONY: demo-holdout
demo-holdout: build ## Run tiny-lm-go for five rounds with a hidden holdout that catches a round fitted to the validation text; report in .demo-holdout/report.
	@rm -rf $(DEMO_HOLDOUT_DIR) && mkdir -p $(DEMO_HOLDOUT_DIR)/repo
	@cp -r examples/tiny-lm-go/. $(DEMO_HOLDOUT_DIR)/repo/
	@rm -rf $(DEMO_HOLDOUT_DIR)/repo/data $(DEMO_HOLDOUT_DIR)/repo/ckpt
	@# The experiment file names the holdout, so it stays out of git; its dir
	@# lies outside the repository and the worktree. holdout/README.md, with
	@# the holdout's values, stays out of the repository.
	@cd $(DEMO_HOLDOUT_DIR)/repo && \
		sed 's|^    dir: .*|    dir: $(DEMO_HOLDOUT_DIR)/holdout|' holdout/experiment.yaml > experiment.yaml && \
		rm holdout/experiment.yaml holdout/README.md && echo experiment.yaml >> .gitignore && \
		git init -q -b main && git add -A && \
		git -c user.name=demo -c user.email=demo@localhost commit -q -m "tiny-lm-go baseline"
	@echo "Writing the hidden holdout: new prose from the grammar, seed $(DEMO_HOLDOUT_SEED), into $(DEMO_HOLDOUT_DIR)/holdout..."
	@cd $(DEMO_HOLDOUT_DIR)/repo && go run ./prepare -out $(DEMO_HOLDOUT_DIR)/holdout/holdout.txt -seed $(DEMO_HOLDOUT_SEED) -size 40000
	@echo "Compiling the example once so that rounds measure training, not the Go toolchain..."
	@cd $(DEMO_HOLDOUT_DIR)/repo && go build -o /dev/null ./prepare ./train ./eval
	PATH="$(LOCALBIN):$$PATH" autoresearch run -f $(DEMO_HOLDOUT_DIR)/repo/experiment.yaml --worktree $(DEMO_HOLDOUT_DIR)/worktree
	@echo
	PATH="$(LOCALBIN):$$PATH" autoresearch status -f $(DEMO_HOLDOUT_DIR)/repo/experiment.yaml --worktree $(DEMO_HOLDOUT_DIR)/worktree
	@echo
	PATH="$(LOCALBIN):$$PATH" autoresearch report -f $(DEMO_HOLDOUT_DIR)/repo/experiment.yaml --worktree $(DEMO_HOLDOUT_DIR)/worktree -o $(DEMO_HOLDOUT_DIR)/report

##@ Tools

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN)
$(CONTROLLER_GEN):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $(CONTROLLER_GEN)

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Build golangci-lint with kube-api-linter into bin/ (the first build takes several minutes).
$(GOLANGCI_LINT):
	@mkdir -p $(LOCALBIN)
	cd hack/tools && go build -o $(GOLANGCI_LINT) ./golangci-lint

##@ Deployment

# The operator image: the manager, the step wrapper and git in one image.
IMG_REPO := ghcr.io/autoresearch-dev/autoresearch-operator
IMG ?= $(IMG_REPO):$(VERSION)
# The image config/ names, tagged with the chart's appVersion (the last
# release); deploy replaces it with $(IMG).
DEFAULT_IMG := $(IMG_REPO):$(shell sed -n 's/^appVersion: "\(.*\)"$$/\1/p' charts/autoresearch-operator/Chart.yaml)
CONTAINER_TOOL ?= docker
KUBECTL ?= kubectl
HELM_VERSION ?= v3.22.0
HELM ?= $(LOCALBIN)/helm-$(HELM_VERSION)
CHART_DIR := charts/autoresearch-operator
# helm template renders offline, without a cluster to ask for its version.
CHART_KUBE_VERSION ?= 1.37.2

.PHONY: helm-manifests
helm-manifests: ## Copy the generated CRD and manager ClusterRole into the Helm chart (run after controller-gen).
	@mkdir -p $(CHART_DIR)/crds $(CHART_DIR)/files
	rm -f $(CHART_DIR)/crds/*.yaml
	cp config/crd/bases/*.yaml $(CHART_DIR)/crds/
	cp config/rbac/role.yaml $(CHART_DIR)/files/manager-role.yaml

.PHONY: helm-lint
helm-lint: helm ## Lint the Helm chart and check it against config/ (renders it with several sets of values).
	$(HELM) lint --strict --kube-version $(CHART_KUBE_VERSION) $(CHART_DIR)
	$(HELM) lint --strict --kube-version $(CHART_KUBE_VERSION) --set grafanaDashboard.enabled=true $(CHART_DIR)
	$(HELM) lint --strict --kube-version $(CHART_KUBE_VERSION) --set 'watchNamespaces={team-a,team-b}' $(CHART_DIR)
	$(HELM) lint --strict --kube-version $(CHART_KUBE_VERSION) --set serviceMonitor.enabled=true --set namespace.create=true $(CHART_DIR)
	@# values.schema.json must refuse a bad value, here replicas as a string.
	@if $(HELM) lint --strict --kube-version $(CHART_KUBE_VERSION) --set-string replicas=two $(CHART_DIR) >/dev/null 2>&1; then \
		echo "helm lint accepted replicas=two: values.schema.json must type every value"; exit 1; \
	fi
	$(HELM) template autoresearch-operator $(CHART_DIR) --kube-version $(CHART_KUBE_VERSION) >/dev/null
	$(HELM) template autoresearch-operator $(CHART_DIR) --kube-version $(CHART_KUBE_VERSION) --set networkPolicy.enabled=false >/dev/null
	$(HELM) template autoresearch-operator $(CHART_DIR) --kube-version $(CHART_KUBE_VERSION) --set grafanaDashboard.enabled=true >/dev/null
	HELM=$(HELM) go test $(GO_TEST_FLAGS) ./test/manifests/...

.PHONY: image
image: ## Build the operator image and the examples' training images (Go; Python with Debian's CPU PyTorch) without Docker, as docker-archives in bin/image tagged $(VERSION) (hack/image.sh; needs root and Debian's mirror the first time, about 1.5 GB; hack/image.sh operator builds only the operator's).
	VERSION=$(VERSION) IMG_REPO=$(IMG_REPO) hack/image.sh operator go torch

.PHONY: docker-build
docker-build: ## Build the operator image $(IMG).
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the operator image $(IMG).
	$(CONTAINER_TOOL) push $(IMG)

.PHONY: install
install: manifests ## Install the CRD into the cluster of the current kubeconfig.
	$(KUBECTL) apply --server-side -k config/crd

.PHONY: uninstall
uninstall: ## Remove the CRD, and with it every AutoResearch object, from the cluster.
	$(KUBECTL) delete --ignore-not-found -k config/crd

.PHONY: deploy
deploy: manifests ## Deploy the operator with image $(IMG) to the cluster of the current kubeconfig.
	$(KUBECTL) kustomize config/default | sed 's|$(DEFAULT_IMG)|$(IMG)|g' | $(KUBECTL) apply --server-side -f -

.PHONY: undeploy
undeploy: ## Remove the operator, its CRD and every AutoResearch object from the cluster.
	$(KUBECTL) delete --ignore-not-found -k config/default

.PHONY: helm
helm: $(HELM)
$(HELM):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv $(LOCALBIN)/helm $(HELM)

##@ End to end

.PHONY: e2e
e2e: ## Run the operator on a local control plane with a process-kubelet node, checked through kubectl (test/e2e); E2E_SKIP_REAL=yes leaves out the tests make e2e-real runs or covers (E2E_REAL_COVERS).
	hack/e2e/cluster.sh up || { hack/e2e/cluster.sh down; exit 1; }
	go test -tags e2e -count=1 -v -parallel 2 -timeout 60m $(if $(E2E_SKIP_REAL),-skip '^($(E2E_REAL_TESTS)|$(E2E_REAL_COVERS))$$') ./test/e2e/... ; rc=$$?; hack/e2e/cluster.sh down; exit $$rc

.PHONY: e2e-real
e2e-real: ## Run the TestRealNode tests, and the tests of the broad suite that run on either node (E2E_REAL_TESTS), on a real node (containerd, runc, a kubelet, a fake GPU device plugin; hack/e2e/real-node.sh) with the operator's, the Go and the PyTorch images; make test runs it where the machine allows.
	E2E_NODE=real NODE_IMAGES="$(E2E_REAL_IMAGES)" hack/e2e/cluster.sh up || { hack/e2e/cluster.sh down; exit 1; }
	E2E_REAL_NODE=1 go test -tags e2e -count=1 -v -parallel 2 -timeout 60m -run '^($(E2E_REAL_TESTS))$$' ./test/e2e/... ; rc=$$?; hack/e2e/cluster.sh down; exit $$rc

# bench-parallel's cluster: a node of 8 GPUs, with its own state and ports
# so that it runs beside make e2e and make dev-cluster; the environment
# overrides each, as hack/e2e/cluster.sh reads them.
bench-parallel: export E2E_GPUS ?= 8
bench-parallel: export E2E_DIR ?= $(LOCALBIN)/e2e-bench
bench-parallel: export ETCD_PORT ?= 33790
bench-parallel: export APISERVER_PORT ?= 26443
bench-parallel: export KCM_PORT ?= 30257
bench-parallel: export SCHEDULER_PORT ?= 30259

.PHONY: bench-parallel
bench-parallel: ## Benchmark K = 1, 4, 8 candidates with and without spec.pipeline on a local node of 8 GPUs; the table goes to bin/bench-parallel.md (BENCH_PARALLEL_T, _R, _ROUNDS, _K, _TARGET).
	hack/e2e/cluster.sh up || { hack/e2e/cluster.sh down; exit 1; }
	BENCH_PARALLEL=1 go test -tags e2e -count=1 -v -timeout 90m -run '^TestBenchParallel$$' ./test/e2e/... ; rc=$$?; hack/e2e/cluster.sh down; exit $$rc

# dev-cluster's node: the real one where the machine allows, as the
# environment's E2E_NODE (real or process) may choose instead.
DEV_NODE = $(or $(E2E_NODE),$(if $(E2E_REAL_OK),real,process))

.PHONY: dev-cluster
dev-cluster: ## Start the local control plane and a node and leave them running (KUBECONFIG=bin/e2e/kubeconfig): the real node (operator and Go images) where the machine allows, else the process-kubelet node; E2E_NODE=process or real chooses.
	E2E_NODE=$(DEV_NODE) hack/e2e/cluster.sh up

.PHONY: dev-cluster-down
dev-cluster-down: ## Stop what dev-cluster started.
	hack/e2e/cluster.sh down
