# nudgeflow — `make run` starts everything locally, `make test` proves it.
# Every tool is built from the Go module proxy into a per-version cache
# (${XDG_CACHE_HOME:-~/.cache}/nudgeflow/tools) on first use; see hack/tools.sh.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
export GOTOOLCHAIN := local
export GOPROXY ?= https://proxy.golang.org

TOOLS := hack/tools.sh
GO_TEST_FLAGS ?= -count=1 -timeout 45m

.PHONY: all build tools generate check-generated lint test e2e regen-histories run clean-tools

all: build

build:
	go build -o bin/nudgeflow ./cmd/nudgeflow

tools:
	$(TOOLS) all

generate:
	@cg=$$($(TOOLS) path controller-gen); \
	$$cg object paths=./api/...; \
	$$cg crd paths=./api/appstudio/... paths=./api/konflux/... output:crd:artifacts:config=deploy/crds; \
	$$cg crd paths=./api/mirror/... output:crd:artifacts:config=test/crds; \
	$$cg webhook paths=./bridge/... output:webhook:artifacts:config=deploy/webhooks; \
	$$cg rbac:roleName=nudgeflow-bridge paths=./bridge/... output:rbac:artifacts:config=deploy/rbac/bridge; \
	$$cg rbac:roleName=nudgeflow-worker paths=./activities/... output:rbac:artifacts:config=deploy/rbac/worker

# Regenerates and fails when anything generated was out of date, so a stale CRD or
# deepcopy can never pass CI.
GENERATED = api deploy/crds deploy/webhooks deploy/rbac test/crds
check-generated:
	@before=$$(find $(GENERATED) -type f -print0 | sort -z | xargs -0 sha256sum); \
	$(MAKE) --no-print-directory generate; \
	after=$$(find $(GENERATED) -type f -print0 | sort -z | xargs -0 sha256sum); \
	if [ "$$before" != "$$after" ]; then \
		diff <(echo "$$before") <(echo "$$after") || true; \
		echo "generated files were stale: 'make generate' rewrote them; commit the result" >&2; exit 1; \
	fi

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted" >&2; exit 1; fi
	go vet ./...
	$$($(TOOLS) path staticcheck) ./...
	$$($(TOOLS) path workflowcheck) ./...

# Tests find the real servers through these; hack/tools.sh builds what is missing.
test-env = KUBEBUILDER_ASSETS=$$($(TOOLS) assets) TEMPORAL_CLI=$$($(TOOLS) path temporal) \
	RENOVATE_CONFIG_VALIDATOR=$$($(TOOLS) path renovate-config-validator) GITEA=$$($(TOOLS) path gitea)

# The whole verbose log goes to test-output.log; the terminal gets each package's
# result, the e2e report line, and the full story of any failure.
test: check-generated lint
	@rc=0; $(test-env) go test $(GO_TEST_FLAGS) -v ./... > test-output.log 2>&1 || rc=$$?; \
	grep -E '^(ok|FAIL|panic:|changegroup-e2e |changegroup-chaos )|^--- FAIL' test-output.log || true; \
	if [ $$rc -ne 0 ]; then echo "--- failures (full log: test-output.log) ---"; grep -E -B3 -A40 -- '--- FAIL|^panic:|^# |setup failed|build failed' test-output.log | head -400; fi; \
	exit $$rc

# The ChangeGroup end-to-end scenario alone (ADR 59 at scale).
e2e:
	$(test-env) go test $(GO_TEST_FLAGS) -v -run 'E2E' ./test/changegroup/ 2>&1 | grep -E '^(=== RUN|--- |\s+\S+_test.go|changegroup-e2e|ok|FAIL|PASS)'

# Re-records the workflow histories the replay tests replay (after a deliberate,
# GetVersion-guarded change of a workflow's command sequence: keep the old files).
regen-histories:
	NUDGEFLOW_RECORD_HISTORIES=1 $(test-env) go test $(GO_TEST_FLAGS) ./test/changegroup/ ./test/nudges/

run: build
	./bin/nudgeflow dev

clean-tools:
	rm -rf "$${XDG_CACHE_HOME:-$$HOME/.cache}/nudgeflow/tools"
