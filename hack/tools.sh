#!/usr/bin/env bash
# Builds nudgeflow's pinned tools from the Go module proxy into a per-version cache
# outside the work tree, so every clone (and CI) reuses them. Nothing else is downloaded.
#
#   hack/tools.sh path NAME     print the binary's path, building it first when missing
#   hack/tools.sh all           build every tool that is missing
#   hack/tools.sh assets        print the envtest assets folder (kube-apiserver, etcd, kubectl)
set -euo pipefail

KUBERNETES_VERSION=v1.34.2
ETCD_VERSION=v3.6.6
TEMPORAL_CLI_VERSION=v1.5.1
CONTROLLER_GEN_VERSION=v0.19.0
STATICCHECK_VERSION=v0.8.2
WORKFLOWCHECK_VERSION=v0.6.0
# Gitea is the real Forgejo/Gitea API server of the test world (hack/tools/gitea: its
# go.mod has replace directives). v1.26.0 is the newest tag whose go.mod still declares
# code.gitea.io/gitea (v1.27 moved to gitea.dev, which the module proxy does not serve).
GITEA_VERSION=v1.26.0
# kustomize v5.8.3 needs go 1.27; v5.8.2 (go 1.26.0, no replace directives) is
# go-installable with the local toolchain.
KUSTOMIZE_VERSION=v5.8.2
# crd-ref-docs renders docs/reference/api.md from the api/ packages (make generate).
CRD_REF_DOCS_VERSION=v0.3.0
# Renovate 39 is the newest line that runs on Node 20 (engines ^20.15.1 || ^22.11.0) and
# still takes fileMatch natively, like the pinned mintmaker Renovate image. It comes from
# the npm registry (the one tool that is not Go).
RENOVATE_VERSION=39.264.0

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${NUDGEFLOW_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/nudgeflow/tools}
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
export GOPROXY=${GOPROXY:-https://proxy.golang.org}

log() { printf 'tools: %s\n' "$*" >&2; }

# build_into DIR NAME CMD...: run CMD (which writes DIR/NAME) unless DIR/NAME exists.
# The binary is built in a scratch folder and moved in place, so an interrupted
# build never leaves a half-written tool behind.
build_into() {
	local dir=$1 name=$2; shift 2
	[ -x "$dir/$name" ] && return 0
	local tmp; tmp=$(mktemp -d "${cache}/.build-${name}.XXXXXX")
	log "building $name into $dir (first time only)"
	local start=$SECONDS
	if ! "$@" "$tmp/$name" >&2; then rm -rf "$tmp"; log "building $name failed"; return 1; fi
	# Files built beside the binary (a server's assets) move first, the binary last:
	# a present binary means a complete tool.
	mkdir -p "$dir" || return 1
	local f
	for f in "$tmp"/*; do
		[ "$f" = "$tmp/$name" ] && continue
		rm -rf "$dir/${f##*/}" && mv "$f" "$dir/" || return 1
	done
	mv "$tmp/$name" "$dir/$name" && rm -rf "$tmp"
	log "built $name in $((SECONDS - start))s"
}

wrapper_build() { # wrapper_build MODULE_DIR PACKAGE OUT
	(cd "$here/tools/$1" && go build -o "$3" "$2")
}
# gitea_build OUT: the server with the embedded SQLite driver (cgo), and beside it the
# templates, options (locales, licences) and public folders of the module, which a
# build without the bindata tag reads at run time from its STATIC_ROOT_PATH.
gitea_build() {
	local out=$1 dir src
	dir=$(dirname "$out")
	(cd "$here/tools/gitea" && CGO_ENABLED=1 go build -tags 'sqlite sqlite_unlock_notify' -o "$out" .) || return 1
	src=$(cd "$here/tools/gitea" && go list -m -f '{{.Dir}}' code.gitea.io/gitea) || return 1
	cp -R "$src/templates" "$src/options" "$src/public" "$dir/" && chmod -R u+w "$dir"
}
go_install() { # go_install PACKAGE@VERSION OUT
	local gobin; gobin=$(mktemp -d "${cache}/.gobin.XXXXXX")
	GOBIN=$gobin GOFLAGS= go install "$1" && mv "$gobin"/* "$2" && rm -rf "$gobin"
}

npm_install() { # npm_install PACKAGE@VERSION FINALDIR OUT: a wrapper script OUT runs the validator installed in FINALDIR
	local prefix=$2 out=$3 staging
	command -v npm >/dev/null || { log "npm is needed for $1 (Node >= 20.15)"; return 1; }
	staging=$(mktemp -d "${cache}/.npm.XXXXXX")
	npm install --silent --no-audit --no-fund --prefix "$staging" "$1" >&2 || { rm -rf "$staging"; return 1; }
	mkdir -p "$prefix" && rm -rf "$prefix/lib" && mv "$staging" "$prefix/lib"
	printf '#!/usr/bin/env bash\nexec "%s/lib/node_modules/.bin/renovate-config-validator" "$@"\n' "$prefix" >"$out"
	chmod +x "$out"
}

tool_path() {
	mkdir -p "$cache"
	local name=$1 dir
	case $name in
	kube-apiserver)
		dir=$cache/kube-apiserver-$KUBERNETES_VERSION
		build_into "$dir" kube-apiserver wrapper_build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver ;;
	kubectl)
		dir=$cache/kubectl-$KUBERNETES_VERSION
		build_into "$dir" kubectl wrapper_build kube-apiserver k8s.io/kubernetes/cmd/kubectl ;;
	etcd)
		dir=$cache/etcd-$ETCD_VERSION
		build_into "$dir" etcd wrapper_build etcd . ;;
	temporal)
		dir=$cache/temporal-$TEMPORAL_CLI_VERSION
		build_into "$dir" temporal go_install github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION ;;
	controller-gen)
		dir=$cache/controller-gen-$CONTROLLER_GEN_VERSION
		build_into "$dir" controller-gen go_install sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_GEN_VERSION ;;
	staticcheck)
		dir=$cache/staticcheck-$STATICCHECK_VERSION
		build_into "$dir" staticcheck go_install honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION ;;
	workflowcheck)
		dir=$cache/workflowcheck-$WORKFLOWCHECK_VERSION
		build_into "$dir" workflowcheck go_install go.temporal.io/sdk/contrib/tools/workflowcheck@$WORKFLOWCHECK_VERSION ;;
	gitea)
		dir=$cache/gitea-$GITEA_VERSION
		build_into "$dir" gitea gitea_build ;;
	kustomize)
		dir=$cache/kustomize-$KUSTOMIZE_VERSION
		build_into "$dir" kustomize go_install sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION ;;
	crd-ref-docs)
		dir=$cache/crd-ref-docs-$CRD_REF_DOCS_VERSION
		build_into "$dir" crd-ref-docs go_install github.com/elastic/crd-ref-docs@$CRD_REF_DOCS_VERSION ;;
	renovate-config-validator)
		dir=$cache/renovate-$RENOVATE_VERSION
		build_into "$dir" renovate-config-validator npm_install renovate@$RENOVATE_VERSION "$dir" ;;
	renovate)
		# The same npm install as the validator (one download): its node_modules/.bin
		# holds the `renovate` CLI the PipelineRun runner (test/plrunner) puts on PATH.
		tool_path renovate-config-validator >/dev/null || return 1
		printf '%s\n' "$cache/renovate-$RENOVATE_VERSION/lib/node_modules/.bin/renovate"
		return 0 ;;
	*) log "unknown tool $name"; return 2 ;;
	esac
	printf '%s\n' "$dir/$name"
}

# envtest wants kube-apiserver, etcd and kubectl side by side in one folder.
assets() {
	local dir=$cache/envtest-$KUBERNETES_VERSION-etcd-$ETCD_VERSION t p
	mkdir -p "$dir"
	for t in kube-apiserver etcd kubectl; do
		p=$(tool_path "$t")
		ln -sfn "$p" "$dir/$t"
	done
	printf '%s\n' "$dir"
}

case ${1:-} in
path) tool_path "$2" ;;
assets) assets ;;
all)
	assets >/dev/null
	for t in temporal controller-gen crd-ref-docs staticcheck workflowcheck kustomize gitea renovate-config-validator; do tool_path "$t" >/dev/null; done ;;
*) echo "usage: $0 path NAME | assets | all" >&2; exit 2 ;;
esac
