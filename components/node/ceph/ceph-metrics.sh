#!/bin/sh
# ceph-metrics.sh enable [--timeout <s>]
#
# Turns on the manager's prometheus module and its output of the daemons' performance counters,
# idempotently, and waits (bounded) until the active manager serves it (`ceph mgr services` lists its URL): the storage's metrics Service scrapes
# port 9283 of the manager pods. Ceph restarts the managers in place to load the module (the wait
# covers the handover); nothing else of the cluster changes.
# Runs as client.admin ($ZCLOUD_CEPH_KEYS/admin). Output: one line per decision.
# Exit: 0 done, 1 failed, 2 usage, 3 the module not served within the bound.
set -eu

# Shipped as `sh -c '<lib.sh + ceph-lib.sh + this>' <name> <args>`; standalone it sources them.
# shellcheck source-path=SCRIPTDIR source=../lib.sh
command -v zc_log >/dev/null 2>&1 || . "$(dirname -- "$0")/../lib.sh"
# shellcheck source-path=SCRIPTDIR source=ceph-lib.sh
command -v zcc_ceph >/dev/null 2>&1 || . "$(dirname -- "$0")/ceph-lib.sh"

mt_usage="ceph-metrics.sh enable [--timeout <s>]"

# mt_enabled: whether the prometheus module is on (enabled, or always on in this release).
mt_enabled() {
    zcc_ceph mgr module ls --format json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
on = set(d.get("enabled_modules", [])) | set(d.get("always_on_modules", []))
sys.exit(0 if "prometheus" in on else 1)
'
}

# mt_served: prints the module's URL once the active manager serves it.
mt_served() {
    zcc_ceph mgr services --format json 2>/dev/null | python3 -c '
import json, sys
url = json.load(sys.stdin).get("prometheus")
print(url or "")
sys.exit(0 if url else 1)
'
}

# mt_enable: turns the module on unless it is.
mt_enable() {
    if mt_enabled; then
        zc_log "mgr" "the prometheus module is on"
        return 0
    fi
    zcc_ceph mgr module enable prometheus
    zc_log "mgr" "turned the prometheus module on"
}

# mt_perf_counters: the daemons' performance counters in the module's output. Ceph 20 leaves
# them to ceph-exporter daemons, which this project does not deploy; the module's own switch for
# a cluster without them serves them from the active manager.
mt_perf_counters() {
    if [ "$(zcc_ceph config get mgr mgr/prometheus/exclude_perf_counters 2>/dev/null || true)" = false ]; then
        zc_log "mgr" "the module serves the daemons' performance counters"
        return 0
    fi
    zcc_ceph config set mgr mgr/prometheus/exclude_perf_counters false
    zc_log "mgr" "the module now serves the daemons' performance counters (no ceph-exporter)"
}

mt_main() {
    [ "${1:-}" = enable ] || zcc_usage "$mt_usage"
    shift
    mt_timeout=120
    while [ $# -gt 0 ]; do
        case $1 in
            --timeout) zcc_need_value "$@"; mt_timeout=$2; shift 2 ;;
            *) zcc_usage "unknown argument '$1'; $mt_usage" ;;
        esac
    done
    case $mt_timeout in '' | *[!0-9]* | 0*) zcc_usage "--timeout must be a positive integer, got '$mt_timeout'" ;; esac
    mt_enable
    mt_perf_counters
    if ! zcc_wait "mgr" "$mt_timeout" "the active manager to serve the prometheus module" mt_served; then
        zc_log "mgr" "the active manager did not serve the prometheus module within ${mt_timeout}s: ${zcc_wait_out:-no answer}" >&2
        exit 3
    fi
    zc_log "mgr" "metrics served at $zcc_wait_out"
}

mt_main "$@"
