#!/bin/sh
# ceph-osd.sh prepare|prepare-only|activate|run --device <dev> --host <crush-host> [--device-class <class>]
#
# One OSD workload per (node, device), and one prepare Job per (node, device).
#   prepare   a device with this cluster's bluestore label is activated, never prepared again;
#             a clean device is prepared (`ceph-volume raw prepare --bluestore`) and activated;
#             a device of another cluster, a half-prepared one, or one that is mounted, held,
#             partitioned in use or carries any other signature is refused untouched.
#   prepare-only  the same decision, without activating: a clean device is prepared, a device
#             with this cluster's OSD is left untouched (the prepare Job of a new OSD).
#   activate  only activates: refuses a device without this cluster's label.
#   run       prepare, then exec the OSD daemon in the foreground with crush location
#             root=default host=<crush-host> (the Kubernetes node name).
# The decision and the prepare run under the host's lock of the device (flock on
# $ZCLOUD_CEPH_OSD_LOCKS/<kernel name>.lock, a host directory every OSD pod and prepare Job
# mounts), so the Job and the OSD pod never prepare one device at once; the lock is released
# before the activation and the daemon. A wait longer than $ZCLOUD_CEPH_OSD_LOCK_WAIT seconds
# (600) fails.
# ceph-volume keeps OSD data under /var/lib/ceph/osd/ceph-<id> and reads the bootstrap keyring
# from /var/lib/ceph/bootstrap-osd/ceph.keyring whatever is configured, so ZCLOUD_CEPH_DATA
# must be /var/lib/ceph here (in a container it is; tests use a private mount namespace).
# Keys: $ZCLOUD_CEPH_KEYS/bootstrap-osd (bare key). Loop devices need
# CEPH_VOLUME_ALLOW_LOOP_DEVICES=true (tests only).
# Output: decisions, then the fact line `zcloud-osd: <dev> <osd-id> <osd-uuid>`.
# Exit: 0 done, 1 refused or failed, 2 usage.
set -eu

# Shipped as `sh -c '<lib.sh + ceph-lib.sh + this>' <name> <args>`; standalone it sources them.
# shellcheck source-path=SCRIPTDIR source=../lib.sh
command -v zc_log >/dev/null 2>&1 || . "$(dirname -- "$0")/../lib.sh"
# shellcheck source-path=SCRIPTDIR source=ceph-lib.sh
command -v zcc_ceph >/dev/null 2>&1 || . "$(dirname -- "$0")/ceph-lib.sh"

od_usage="ceph-osd.sh prepare|prepare-only|activate|run --device <dev> --host <crush-host> [--device-class <class>]"
od_bootstrap=/var/lib/ceph/bootstrap-osd/ceph.keyring
od_lock_dir=${ZCLOUD_CEPH_OSD_LOCKS:-/run/zcloud/ceph-osd-locks}
od_lock_wait=${ZCLOUD_CEPH_OSD_LOCK_WAIT:-600}

# od_lock CANON: takes the host's lock of the device (fd 9) before the decision: whoever holds
# it decides and prepares alone; the other finds the device prepared.
od_lock() {
    command -v flock >/dev/null 2>&1 ||
        zc_die "$od_dev" "flock is missing: cannot lock the device against another prepare of it"
    mkdir -p -- "$od_lock_dir"
    od_lk_file="$od_lock_dir/${1##*/}.lock"
    exec 9>"$od_lk_file"
    if ! flock -n 9; then
        zc_log "$od_dev" "another prepare of this device holds $od_lk_file; waiting (at most ${od_lock_wait}s)"
        flock -w "$od_lock_wait" 9 ||
            zc_fail "$od_dev" "$od_lk_file still held after ${od_lock_wait}s; not deciding"
    fi
}

# od_unlock: releases the device's lock (never held by the activation or the daemon).
od_unlock() {
    exec 9>&-
}

# od_relay FILE: a tool's log on stderr, indented, with anything shaped like a key masked: an
# AES-128 key (`AQ` + 38 base64 characters, the program's and Ceph 19's) or an AES-256 one (`Ag`
# + 58, what Ceph 20 generates, e.g. ceph-volume for a new OSD).
od_relay() {
    sed -e 's/A[Qg][A-Za-z0-9+/]\{36,\}=\{0,2\}/[secret]/g' -e 's/^/  /' -- "$1" >&2
}

# od_label DEV: reads the bluestore label into od_fsid, od_id, od_uuid, od_mkfs_done (yes once
# the OSD's mkfs completed: the label's `mkfs_done: yes` up to Ceph 19, or `ready: ready`, the
# last thing `ceph-osd --mkfs` writes, which is all Ceph 20's label keeps).
# Returns 1 when DEV carries no bluestore label. The label also holds the OSD's key: only the
# named fields are kept, the label text itself is never printed.
od_label() {
    od_fsid='' od_id='' od_uuid='' od_mkfs_done=''
    od_lb_json=$(ceph-bluestore-tool show-label --dev "$1" 2>/dev/null </dev/null) || return 1
    od_fsid=$(od_field "$od_lb_json" ceph_fsid)
    od_id=$(od_field "$od_lb_json" whoami)
    od_uuid=$(od_field "$od_lb_json" osd_uuid)
    od_mkfs_done=$(od_field "$od_lb_json" mkfs_done)
    [ "$(od_field "$od_lb_json" ready)" != ready ] || od_mkfs_done=yes
    od_lb_json=
    [ -n "$od_fsid" ] || [ -n "$od_uuid" ]
}

# od_field JSON NAME: one string field of show-label's JSON.
od_field() {
    printf '%s\n' "$1" | sed -n "s/^[[:space:]]*\"$2\": \"\\([^\"]*\\)\".*/\\1/p" | head -n 1
}

# od_decide DEV FSID: prints activate | prepare, or refuses (this cluster's device, a clean
# device, anything else).
od_decide() {
    if od_label "$1"; then
        if [ "$od_fsid" != "$2" ]; then
            zc_die "$od_dev" "carries an OSD of another Ceph cluster (fsid $od_fsid, osd.$od_id); not touching it"
        fi
        if [ "$od_mkfs_done" != yes ] || [ -z "$od_id" ]; then
            zc_die "$od_dev" "carries a half-prepared OSD of this cluster (mkfs not done); drain and zap it first"
        fi
        echo activate
        return 0
    fi
    zc_guard_not_mounted "$od_dev" "$1" || exit "$ZCC_EXIT_REFUSED"
    zc_guard_no_holders "$od_dev" "$1" || exit "$ZCC_EXIT_REFUSED"
    zc_guard_partitions_unused "$od_dev" "$1" || exit "$ZCC_EXIT_REFUSED"
    zc_guard_not_foreign_pv "$od_dev" "$1" || exit "$ZCC_EXIT_REFUSED"
    zc_guard_no_signature "$od_dev" "$1" 0 || exit "$ZCC_EXIT_REFUSED"
    echo prepare
}

# od_prepare DEV: ceph-volume raw prepare with the bootstrap-osd key, then reads the new label.
od_prepare() {
    od_pr_key=$(zcc_read_key "$(zcc_key_file bootstrap-osd)")
    mkdir -p -- "${od_bootstrap%/*}"
    # shellcheck disable=SC2064 # expand now: fixed paths
    trap "rm -rf -- '$zcc_tmp' '$od_bootstrap'" EXIT
    (umask 077 && zcc_keyring_entry client.bootstrap-osd "$od_pr_key" bootstrap-osd "" >"$od_bootstrap")
    od_pr_key=
    set -- raw prepare --bluestore --data "$1"
    [ -z "$od_class" ] || set -- "$@" --crush-device-class "$od_class"
    if ! ceph-volume --cluster ceph "$@" >"$zcc_tmp/prepare.log" 2>&1 </dev/null; then
        od_relay "$zcc_tmp/prepare.log"
        rm -f -- "$od_bootstrap"
        zc_fail "$od_dev" "ceph-volume raw prepare (it rolls back the OSD id it took)"
    fi
    rm -f -- "$od_bootstrap"
    od_label "$od_canon" || zc_fail "$od_dev" "no bluestore label after prepare"
    zc_log "$od_dev" "prepared osd.$od_id (uuid $od_uuid) for cluster $od_fsid"
}

# od_activate DEV: ceph-volume raw activate (tmpfs data dir primed from the label).
od_activate() {
    if ! ceph-volume --cluster ceph raw activate --device "$1" --no-systemd \
        >"$zcc_tmp/activate.log" 2>&1 </dev/null; then
        od_relay "$zcc_tmp/activate.log"
        zc_fail "$od_dev" "ceph-volume raw activate"
    fi
    od_ac_dir="$ZCLOUD_CEPH_DATA/osd/ceph-$od_id"
    IFS= read -r od_ac_who <"$od_ac_dir/whoami" || zc_fail "$od_dev" "activation left no $od_ac_dir/whoami"
    [ "$od_ac_who" = "$od_id" ] || zc_fail "$od_dev" "$od_ac_dir/whoami says $od_ac_who, label says $od_id"
    zc_log "$od_dev" "activated osd.$od_id at $od_ac_dir"
}

od_action=${1:-}
case $od_action in prepare | prepare-only | activate | run) shift ;; *) zcc_usage "$od_usage" ;; esac
od_dev=
od_host=
od_class=
while [ $# -gt 0 ]; do
    case $1 in
        --device) zcc_need_value "$1" "${2:-}"; od_dev=$2; shift 2 ;;
        --host) zcc_need_value "$1" "${2:-}"; od_host=$2; shift 2 ;;
        --device-class) zcc_need_value "$1" "${2:-}"; od_class=$2; shift 2 ;;
        *) zcc_usage "$od_usage" ;;
    esac
done
if [ -z "$od_dev" ] || [ -z "$od_host" ]; then zcc_usage "$od_usage"; fi
case $od_host in *[!A-Za-z0-9_.-]*) zcc_usage "crush host '$od_host' must be letters, digits, _ . -" ;; esac
case $od_class in *[!A-Za-z0-9_-]*) zcc_usage "device class '$od_class' must be letters, digits, _ -" ;; esac
case $od_lock_wait in '' | *[!0-9]*) zcc_usage "ZCLOUD_CEPH_OSD_LOCK_WAIT '$od_lock_wait' must be whole seconds" ;; esac
[ "$ZCLOUD_CEPH_DATA" = /var/lib/ceph ] ||
    zc_die "$od_dev" "ceph-volume keeps OSD data under /var/lib/ceph; ZCLOUD_CEPH_DATA is $ZCLOUD_CEPH_DATA"

od_cluster_fsid=$(zcc_fsid)
zc_guard_exists "$od_dev" || exit "$ZCC_EXIT_REFUSED"
od_canon=$(zc_canonical "$od_dev")
zc_guard_block "$od_dev" "$od_canon" || exit "$ZCC_EXIT_REFUSED"
zcc_private_dir
if [ ! -d "$ZCLOUD_CEPH_DATA/osd" ]; then
    mkdir -p -- "$ZCLOUD_CEPH_DATA/osd"
    zcc_chown "$ZCLOUD_CEPH_DATA/osd"
fi

od_lock "$od_canon"
od_decision=$(od_decide "$od_canon" "$od_cluster_fsid")
od_label "$od_canon" || true
case $od_decision in
    activate)
        if [ "$od_action" = prepare-only ]; then
            zc_log "$od_dev" "already osd.$od_id of this cluster (uuid $od_uuid); nothing to prepare"
        else
            zc_log "$od_dev" "already osd.$od_id of this cluster (uuid $od_uuid); activating, not preparing"
        fi
        ;;
    prepare)
        [ "$od_action" != activate ] ||
            zc_die "$od_dev" "carries no OSD of this cluster; nothing to activate"
        zc_log "$od_dev" "clean device; preparing a new OSD"
        od_prepare "$od_canon"
        ;;
esac
od_unlock
[ "$od_action" = prepare-only ] || od_activate "$od_canon"
printf 'zcloud-osd: %s %s %s\n' "$od_dev" "$od_id" "$od_uuid"

if [ "$od_action" = run ]; then
    zc_log "osd.$od_id" "starting the daemon (crush location root=default host=$od_host)"
    rm -rf -- "$zcc_tmp"
    trap - EXIT
    exec ceph-osd --conf "$CEPH_CONF" --cluster ceph --id "$od_id" --foreground \
        --setuser "$ZCLOUD_CEPH_USER" --setgroup "$ZCLOUD_CEPH_USER" \
        --crush-location "root=default host=$od_host"
fi
