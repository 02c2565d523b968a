# autoresearch-operator

LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_TOOLS_VERSION ?= v0.23.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
GO_TEST_FLAGS ?= -count=1
DEMO_DIR ?= $(CURDIR)/.demo

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-12s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate the CRD from the API markers.
	$(CONTROLLER_GEN) crd paths="./api/..." output:crd:artifacts:config=config/crd/bases

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
lint: manifests generate vet ## Check formatting, vet and that generated files are committed.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@git diff --exit-code -- config api || (echo "generated files are out of date: run make manifests generate and commit"; exit 1)

.PHONY: test
test: lint test-deps build ## Run every test (installs what they need first).
	go test $(GO_TEST_FLAGS) ./...
	cd examples/tiny-lm-go && go test $(GO_TEST_FLAGS) ./...

.PHONY: test-deps
test-deps:
	@hack/install-test-deps.sh

.PHONY: bench
bench: ## Run the benchmarks.
	go test -run '^$$' -bench . -benchmem ./...

##@ Build

.PHONY: build
build: ## Build the autoresearch binary into bin/.
	go build -o $(LOCALBIN)/autoresearch ./cmd/autoresearch

.PHONY: demo
demo: build ## Run the bundled tiny-lm-go example for six rounds with the scripted Researcher.
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

##@ Tools

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN)
$(CONTROLLER_GEN):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $(CONTROLLER_GEN)
