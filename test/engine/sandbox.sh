#!/usr/bin/env bash
# The engine sandbox: a control plane on 127.0.0.1 with kwok-managed nodes node1..nodeN, and per
# node a real sshd on 127.0.0.1 with loop devices and an LVM view of its own.
#
#   bash test/engine/sandbox.sh start [--nodes N] [--devices M] [--pulumi]   # defaults 2 and 2; root
#   bash test/engine/sandbox.sh stop <dir>
#
# start prints the sandbox directory as the last line of stdout. It holds `env` (source it:
# KUBECONFIG, PATH with kubectl and Node LTS, and with --pulumi also the Pulumi CLI and plugins,
# a local file backend and its passphrase), `nodes.json` and `id_ed25519`. stop ends every process the sandbox started and
# releases every device (VGs, PVs, loop devices), also after a failed start or test run.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

usage() {
    echo "usage: sandbox.sh start [--nodes N] [--devices M] [--pulumi] | stop <dir>" >&2
    exit 2
}

# positive_int FLAG VALUE: VALUE, or a usage error naming FLAG.
positive_int() {
    case "$2" in
        '' | *[!0-9]* | 0*) echo "sandbox: $1 needs a positive number, got '$2'" >&2; exit 2 ;;
    esac
    printf '%s\n' "$2"
}

# nodes_cli VERB DIR ARGS...: the SSH node half (test/engine/nodes.ts) under the repo's tsx.
nodes_cli() {
    (cd "$root" && node --import tsx test/engine/nodes.ts "$@")
}

# tools_env TOOLS...: the path of the engine binaries' env file (built once per version, then
# cached); the build's progress goes to stderr.
tools_env() {
    build=$(bash "$here/build-tools.sh" "$@") || { printf '%s\n' "$build" >&2; exit 1; }
    printf '%s\n' "$build" | sed '$d' >&2
    printf '%s\n' "$build" | tail -n 1
}

# write_env DIR TOOLS_ENV: the sourceable environment of the sandbox.
write_env() {
    {
        cat "$2"
        printf 'export KUBECONFIG=%q\n' "$1/controlplane/kubeconfig"
        printf 'export PULUMI_BACKEND_URL=%q\n' "file://$1/state"
        printf 'export PULUMI_CONFIG_PASSPHRASE=%q\n' "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
        echo 'export PULUMI_SKIP_CONFIRMATIONS=true'
        echo 'export PULUMI_DIY_BACKEND_NO_LEGACY_WARNING=true'
        echo 'export PULUMI_SUPPRESS_COPILOT_LINK=true'
    } >"$1/env"
    mkdir -p "$1/state"
}

start() {
    nodes=2
    devices=2
    # The control plane's tools; the Pulumi CLI and plugins only when asked (see README: they
    # cannot be built on every machine).
    tools="node kubernetes etcd kwok"
    while [ $# -gt 0 ]; do
        case "$1" in
            --pulumi) tools=""; shift ;;
            --nodes) nodes=$(positive_int "$1" "${2:-}"); shift 2 ;;
            --devices) devices=$(positive_int "$1" "${2:-}"); shift 2 ;;
            *) usage ;;
        esac
    done
    [ "$(id -u)" = 0 ] || { echo "sandbox: needs root (loop devices, LVM, sshd)" >&2; exit 1; }
    dir=$(mktemp -d "${TMPDIR:-/tmp}/zcloud-sandbox.XXXXXX")
    # A failed start leaves nothing behind.
    trap 'echo "sandbox: start failed; releasing $dir" >&2; release "$dir" >&2' EXIT
    # shellcheck disable=SC2086 # tools is a word list; empty means every tool
    write_env "$dir" "$(tools_env $tools)"
    # shellcheck disable=SC1091 # written just above
    . "$dir/env"
    bash "$here/controlplane.sh" start "$dir/controlplane" >&2
    # shellcheck disable=SC2046 # one word per node name
    bash "$here/controlplane.sh" add-node "$dir/controlplane" $(seq -f 'node%g' 1 "$nodes") >&2
    nodes_cli start "$dir" --nodes "$nodes" --devices "$devices" >&2
    trap - EXIT
    echo "sandbox: $nodes nodes with $devices devices each; . $dir/env; stop with: bash test/engine/sandbox.sh stop $dir" >&2
    printf '%s\n' "$dir"
}

# release DIR: ends what the sandbox in DIR started, frees its devices, removes DIR.
release() {
    if [ -f "$1/env" ]; then
        # shellcheck disable=SC1091 # the sandbox's own env file
        . "$1/env"
    fi
    nodes_cli stop "$1"
    if [ -d "$1/controlplane" ]; then
        bash "$here/controlplane.sh" stop "$1/controlplane"
    fi
    rm -rf "$1"
}

stop() {
    [ -d "$1" ] || { echo "sandbox: no sandbox at $1" >&2; exit 1; }
    [ -f "$1/env" ] || [ -d "$1/nodes" ] || { echo "sandbox: $1 is not a sandbox directory" >&2; exit 1; }
    release "$1"
    echo "sandbox: stopped and released $1"
}

case "${1:-}" in
    start) shift; start "$@" ;;
    stop) [ $# -eq 2 ] || usage; stop "$2" ;;
    *) usage ;;
esac
