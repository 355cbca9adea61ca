# nudgeflow — `make run` starts everything locally, `make test` proves it.
# Every tool is built from the Go module proxy into a per-version cache
# (${XDG_CACHE_HOME:-~/.cache}/nudgeflow/tools) on first use; see hack/tools.sh.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
export GOTOOLCHAIN := local
export GOPROXY ?= https://proxy.golang.org

TOOLS := $(CURDIR)/hack/tools.sh
GO_TEST_FLAGS ?= -count=1 -timeout 45m

.PHONY: all build build-dev tools generate check-generated lint check-shipped-deps check-layers test e2e bench regen-histories run run-forgejo clean-tools image

all: build

# The binary that ships (worker, bridge, the cluster tools).
build:
	go build -o bin/nudgeflow ./cmd/nudgeflow

# The dev binary of the test module: the shipped commands plus `dev` (make run)
# and `bench` (make bench).
build-dev:
	cd test && go build -o ../bin/nudgeflow-dev ./cmd/nudgeflow-dev

tools:
	$(TOOLS) all

generate:
	@cg=$$($(TOOLS) path controller-gen); \
	$$cg object paths=./api/...; \
	$$cg crd paths=./api/appstudio/... paths=./api/konflux/... output:crd:artifacts:config=deploy/crds; \
	$$cg crd paths=./api/mirror/... output:crd:artifacts:config=test/crds; \
	$$cg webhook paths=./bridge/... output:webhook:artifacts:config=deploy/webhooks; \
	$$cg rbac:roleName=nudgeflow-bridge paths=./bridge/... output:rbac:artifacts:config=deploy/rbac/bridge; \
	$$cg rbac:roleName=nudgeflow-worker paths=./activities/... paths=./worker/... output:rbac:artifacts:config=deploy/rbac/worker
	@$$($(TOOLS) path crd-ref-docs) --log-level=WARN --config=docs/reference/crd-ref-docs.yaml --source-path=./api \
		--renderer=markdown --output-path=docs/reference/api.md
	@cd test && go run ./cmd/docgen -root .. -page docs/development.md

# Regenerates and fails when anything generated was out of date, so a stale CRD,
# deepcopy, API reference or package list (docs/development.md) can never pass CI.
GENERATED = api deploy/crds deploy/webhooks deploy/rbac test/crds docs/reference docs/development.md
check-generated:
	@before=$$(find $(GENERATED) -type f -print0 | sort -z | xargs -0 sha256sum); \
	$(MAKE) --no-print-directory generate; \
	after=$$(find $(GENERATED) -type f -print0 | sort -z | xargs -0 sha256sum); \
	if [ "$$before" != "$$after" ]; then \
		diff <(echo "$$before") <(echo "$$after") || true; \
		echo "generated files were stale: 'make generate' rewrote them; commit the result" >&2; exit 1; \
	fi

# Both modules: the root (what ships) and test/ (the test module).
lint: check-shipped-deps check-layers
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted" >&2; exit 1; fi
	go vet ./...
	cd test && go vet ./...
	@sc=$$($(TOOLS) path staticcheck); set -x; $$sc ./...; (cd test && $$sc ./...)
	@wc=$$($(TOOLS) path workflowcheck); set -x; $$wc ./...; (cd test && $$wc ./...)

# Fails when the shipped binary reaches a package of the test module or a dev
# package (the local stack, the dev environment, the bench, the forge emulators).
DEV_PACKAGES = ^github.com/nudgeflow/nudgeflow/(test(/|$$)|(.*/)?(localenv|devenv|bench|forgeemu|localbridge)(/|$$))
check-shipped-deps:
	@deps=$$(go list -deps ./cmd/nudgeflow); \
	bad=$$(grep -E '$(DEV_PACKAGES)' <<<"$$deps" || true); \
	if [ -n "$$bad" ]; then echo "cmd/nudgeflow (the shipped binary) imports dev packages:" >&2; echo "$$bad" >&2; exit 1; fi

# Fails when a package of the shipped module imports up its floors (cmd > bridge,
# worker > workflows > activities > contracts > internal > api; docs/development.md
# "Layers"), or a workflow links a forge client.
check-layers:
	@hack/check-layers.sh

# Tests find the real servers through these; hack/tools.sh builds what is missing.
test-env = KUBEBUILDER_ASSETS=$$($(TOOLS) assets) TEMPORAL_CLI=$$($(TOOLS) path temporal) \
	RENOVATE_CONFIG_VALIDATOR=$$($(TOOLS) path renovate-config-validator) RENOVATE=$$($(TOOLS) path renovate) \
	GITEA=$$($(TOOLS) path gitea)

# The whole verbose log goes to test-output.log; the terminal gets each package's
# result, the e2e report line, and the full story of any failure.
test: check-generated lint
	@rc=0; { $(test-env) go test $(GO_TEST_FLAGS) -v ./... || rc=$$?; \
		(cd test && $(test-env) go test $(GO_TEST_FLAGS) -v ./...) || rc=$$?; } > test-output.log 2>&1; \
	grep -E '^(ok|FAIL|panic:|changegroup-e2e |changegroup-chaos |konflux-coexist |held-under-kueue |receiver-flood |tenant-isolation |bridge-rollout |nudge-diff )|^--- FAIL|renovate-e2e forge=' test-output.log || true; \
	if [ $$rc -ne 0 ]; then echo "--- failures (full log: test-output.log) ---"; grep -E -B3 -A40 -- '--- FAIL|^panic:|^# |setup failed|build failed' test-output.log | head -400; fi; \
	exit $$rc

# The ChangeGroup end-to-end scenario alone (ADR 59 at scale).
e2e:
	cd test && $(test-env) go test $(GO_TEST_FLAGS) -v -run 'E2E' ./changegroup/ 2>&1 | grep -E '^(=== RUN|--- |\s+\S+_test.go|changegroup-e2e|ok|FAIL|PASS)'

# nudgeflow's measures at a tenant's scale (docs/performance.md); BENCH_FLAGS=--quick
# for a smoke run.
bench: build-dev
	$(test-env) ./bin/nudgeflow-dev bench $(BENCH_FLAGS)

# Re-records the workflow histories the replay tests replay (after a deliberate,
# GetVersion-guarded change of a workflow's command sequence: keep the old files).
regen-histories:
	cd test && NUDGEFLOW_RECORD_HISTORIES=1 $(test-env) go test $(GO_TEST_FLAGS) ./changegroup/ ./nudges/ ./prgroups/ ./prgroupshape/

# FORGEJO=1 (or `make run-forgejo`) adds the real Gitea server and the third bundle
# (`nudgeflow-dev dev --forgejo`); opt-in, as its first build takes minutes.
run: build build-dev
	./bin/nudgeflow-dev dev $(if $(filter 1 yes true,$(FORGEJO)),--forgejo)

run-forgejo:
	$(MAKE) run FORGEJO=1

# The container image (Containerfile), with podman or docker, whichever can build
# here; without either it says so and succeeds, so it never fails a build machine
# that has none. Konflux builds the same Containerfile hermetically.
IMAGE ?= quay.io/konflux-ci/nudgeflow:dev
image:
	@engine=""; for e in podman docker; do \
		if command -v $$e >/dev/null 2>&1 && $$e info >/dev/null 2>&1; then engine=$$e; break; fi; \
	done; \
	if [ -z "$$engine" ]; then \
		echo "make image: skipped: neither podman nor docker can build here (not installed, or no daemon answers)."; \
		echo "make image: build elsewhere with: podman build -f Containerfile -t $(IMAGE) ."; \
		exit 0; \
	fi; \
	echo "make image: building $(IMAGE) with $$engine"; \
	$$engine build -f Containerfile -t $(IMAGE) .

clean-tools:
	rm -rf "$${XDG_CACHE_HOME:-$$HOME/.cache}/nudgeflow/tools"
