#!/bin/sh
# ceph-fs.sh apply --fs <name> --hosts <n> [--replicas <r> [--replicas-configured]] [--pg-num <n>] [--timeout <s>]
#
# Makes the CephFS <name> exist, idempotently:
#   pools <name>-metadata and <name>-data, size = replicas (default min(3, hosts): by hosts,
#   never by disks), min_size = 2 when size >= 3, else 1; the file system on them; and the
#   subvolume group `csi` that ceph-csi provisions into (needs an active MDS: bounded wait); the
#   manager's pool `.mgr`, when it exists, gets the same size and min_size.
# A file system of that name on other pools is refused. Replicas are placed by the pools' crush
# rule (failure domain host by default), so <r> must not exceed <hosts>. Fewer copies than an
# existing pool keeps (size or min_size lowered, e.g. by hosts removed while replicas was left to
# its default) are set only with --replicas-configured (the stack config sets replicas itself);
# otherwise refused before any pool changes.
# Runs as client.admin ($ZCLOUD_CEPH_KEYS/admin). Output: one line per decision.
# Exit: 0 done, 1 refused or failed, 2 usage, 3 no active MDS within the bound.
set -eu

# Shipped as `sh -c '<lib.sh + ceph-lib.sh + this>' <name> <args>`; standalone it sources them.
# shellcheck source-path=SCRIPTDIR source=../lib.sh
command -v zc_log >/dev/null 2>&1 || . "$(dirname -- "$0")/../lib.sh"
# shellcheck source-path=SCRIPTDIR source=ceph-lib.sh
command -v zcc_ceph >/dev/null 2>&1 || . "$(dirname -- "$0")/ceph-lib.sh"

fs_usage="ceph-fs.sh apply --fs <name> --hosts <n> [--replicas <r> [--replicas-configured]] [--pg-num <n>] [--timeout <s>]"

# fs_number NAME VALUE: a positive integer.
fs_number() {
    case $2 in '' | *[!0-9]* | 0*) zcc_usage "$1 must be a positive integer, got '$2'" ;; esac
}

# fs_sizes HOSTS REPLICAS: sets fs_size and fs_min_size from the number of hosts.
fs_sizes() {
    fs_size=${2:-$(($1 < 3 ? $1 : 3))}
    if [ "$fs_size" -gt "$1" ]; then
        zc_die "$fs_name" "replicas $fs_size exceed the $1 host(s): replicas are placed on distinct hosts"
    fi
    if [ "$fs_size" -ge 3 ]; then fs_min_size=2; else fs_min_size=1; fi
}

# fs_pool_get POOL KEY: the pool's value of KEY (size, min_size, ...).
fs_pool_get() {
    zcc_ceph osd pool get "$1" "$2" 2>/dev/null | sed -n "s/^$2: //p"
}

# fs_pool_set POOL KEY VALUE: sets KEY when it differs.
fs_pool_set() {
    fs_ps_now=$(fs_pool_get "$1" "$2")
    if [ "$fs_ps_now" = "$3" ]; then
        zc_log "pool $1" "$2 is $3"
        return 0
    fi
    # One copy is refused without the flag even with mon_allow_pool_size_one (ceph.conf sets it):
    # the config asked for it (replicas 1, or one host).
    if [ "$2" = size ] && [ "$3" = 1 ]; then set -- "$1" "$2" "$3" --yes-i-really-mean-it; fi
    zcc_ceph osd pool set "$@" >/dev/null 2>&1 || zc_fail "pool $1" "set $2 $3"
    zc_log "pool $1" "$2 set to $3 (was ${fs_ps_now:-unset})"
}

# fs_fewer_copies POOL: prints "size S, min_size M" when the existing POOL keeps more copies (or
# a higher min_size) than planned; nothing when it is absent or would not be lowered.
fs_fewer_copies() {
    zcc_ceph osd pool ls | grep -qx -- "$1" || return 0
    fs_fc_size=$(fs_pool_get "$1" size)
    fs_fc_min=$(fs_pool_get "$1" min_size)
    if [ "${fs_fc_size:-0}" -gt "$fs_size" ] || [ "${fs_fc_min:-0}" -gt "$fs_min_size" ]; then
        printf 'size %s, min_size %s\n' "$fs_fc_size" "$fs_fc_min"
    fi
}

# fs_refuse_fewer_copies: unless the config sets replicas itself, refuses (before any pool
# changes) to lower an existing pool's copies: a default that follows the host count must not
# take copies away when hosts are removed.
fs_refuse_fewer_copies() {
    [ -z "$fs_configured" ] || return 0
    for fs_rf_pool in "$fs_meta" "$fs_data" "$fs_mgr"; do
        fs_rf_now=$(fs_fewer_copies "$fs_rf_pool")
        [ -z "$fs_rf_now" ] ||
            zc_die "pool $fs_rf_pool" "keeps $fs_rf_now; the default for $fs_hosts host(s) is size $fs_size, min_size $fs_min_size: fewer copies are set only when the stack config sets cephfs replicas itself (replicas: $fs_size, after checking that $fs_size copies are enough); nothing was changed"
    done
}

# fs_pool POOL: creates the pool when absent, then sizes it (fs_pool_sizes).
fs_pool() {
    if zcc_ceph osd pool ls | grep -qx -- "$1"; then
        zc_log "pool $1" "exists"
    else
        set -- "$1"
        [ -z "$fs_pg_num" ] || set -- "$1" "$fs_pg_num"
        zcc_ceph osd pool create "$@" >/dev/null 2>&1 || zc_fail "pool $1" "create"
        zc_log "pool $1" "created${fs_pg_num:+ with $fs_pg_num placement groups}"
    fi
    fs_pool_sizes "$1"
}

# fs_pool_sizes POOL: sets size and min_size in an order that keeps min_size <= size at every step.
fs_pool_sizes() {
    fs_p_min=$(fs_pool_get "$1" min_size)
    if [ -n "$fs_p_min" ] && [ "$fs_p_min" -gt "$fs_size" ]; then
        fs_pool_set "$1" min_size "$fs_min_size"
        fs_pool_set "$1" size "$fs_size"
    else
        fs_pool_set "$1" size "$fs_size"
        fs_pool_set "$1" min_size "$fs_min_size"
    fi
}

# fs_filesystem: `ceph fs new` when absent; refuses a file system of this name on other pools.
fs_filesystem() {
    fs_fl_line=$(zcc_ceph fs ls | grep "^name: $fs_name," || true)
    if [ -z "$fs_fl_line" ]; then
        zcc_ceph fs new "$fs_name" "$fs_meta" "$fs_data" >/dev/null 2>&1 || zc_fail "$fs_name" "ceph fs new"
        zc_log "$fs_name" "file system created on $fs_meta and $fs_data"
        return 0
    fi
    case $fs_fl_line in
        *"metadata pool: $fs_meta, data pools: [$fs_data "*) zc_log "$fs_name" "file system exists on $fs_meta and $fs_data" ;;
        *) zc_die "$fs_name" "exists on other pools ($fs_fl_line); not touching it" ;;
    esac
}

# fs_mds_active: true when the file system has an active MDS.
fs_mds_active() {
    zcc_ceph mds stat 2>/dev/null | grep -q "$fs_name:[0-9]* {[^}]*up:active"
}

# fs_group GROUP: the subvolume group ceph-csi provisions into.
fs_group() {
    if ! zcc_wait "$fs_name" "$fs_timeout" "an active MDS" fs_mds_active; then
        zc_refuse "$fs_name" "no active MDS after ${fs_timeout}s; subvolume group $1 not created yet"
        exit "$ZCC_EXIT_TIMEOUT"
    fi
    if zcc_ceph fs subvolumegroup ls "$fs_name" | grep -q "\"name\": \"$1\""; then
        zc_log "$fs_name" "subvolume group $1 exists"
        return 0
    fi
    zcc_ceph fs subvolumegroup create "$fs_name" "$1" >/dev/null 2>&1 ||
        zc_fail "$fs_name" "subvolumegroup create $1"
    zc_log "$fs_name" "subvolume group $1 created"
}

[ "${1:-}" = apply ] || zcc_usage "$fs_usage"
shift
fs_name=
fs_hosts=
fs_replicas=
fs_configured=
fs_pg_num=
fs_timeout=120
while [ $# -gt 0 ]; do
    case $1 in
        --fs) zcc_need_value "$1" "${2:-}"; fs_name=$2; shift 2 ;;
        --hosts) zcc_need_value "$1" "${2:-}"; fs_number "$1" "$2"; fs_hosts=$2; shift 2 ;;
        --replicas) zcc_need_value "$1" "${2:-}"; fs_number "$1" "$2"; fs_replicas=$2; shift 2 ;;
        --replicas-configured) fs_configured=1; shift ;;
        --pg-num) zcc_need_value "$1" "${2:-}"; fs_number "$1" "$2"; fs_pg_num=$2; shift 2 ;;
        --timeout) zcc_need_value "$1" "${2:-}"; fs_number "$1" "$2"; fs_timeout=$2; shift 2 ;;
        *) zcc_usage "$fs_usage" ;;
    esac
done
if [ -z "$fs_name" ] || [ -z "$fs_hosts" ]; then zcc_usage "$fs_usage"; fi
if [ -n "$fs_configured" ] && [ -z "$fs_replicas" ]; then zcc_usage "$fs_usage"; fi
case $fs_name in *[!a-z0-9-]* | -*) zcc_usage "fs name '$fs_name' must be lower-case letters, digits and -" ;; esac

fs_meta="$fs_name-metadata"
fs_data="$fs_name-data"
fs_mgr=.mgr
fs_sizes "$fs_hosts" "$fs_replicas"
zc_log "$fs_name" "replicas $fs_size, min_size $fs_min_size for $fs_hosts host(s)${fs_configured:+ (replicas set in the config)}"
fs_refuse_fewer_copies
fs_pool "$fs_meta"
fs_pool "$fs_data"
# The manager's own pool, made by Ceph with ceph.conf's default size when the first mgr started:
# sized like the storage's pools, so that a shrink (hosts drained) leaves it room too.
if zcc_ceph osd pool ls | grep -qx -- "$fs_mgr"; then fs_pool_sizes "$fs_mgr"; fi
fs_filesystem
fs_group csi
