#!/bin/sh
# Every action takes --fsid <fsid>, the storage's cluster from Pulumi state, and first refuses
# (changing nothing) unless ceph.conf and the cluster the admin key reaches are that cluster.
# ceph-osd-drain.sh check --fsid <fsid>
#   Only that check.
# ceph-osd-drain.sh drain --id <n> [--timeout <s>]
#   Refuses (not marking it out) when some pool's replicas would not fit in the failure domains
#   left without osd.<n>. Otherwise marks it out (once) and waits, bounded, until its data lives
#   elsewhere with full redundancy (safe-to-destroy, all PGs active+clean, the OSD holds no PG).
#   On timeout it exits 3 with the reason; the OSD stays out (data keeps moving) and nothing is
#   destroyed. Re-running continues the wait.
# ceph-osd-drain.sh purge --id <n> [--timeout <s>]
#   After the daemon was stopped: waits, bounded, until osd.<n> is down, checks safe-to-destroy
#   again and runs `ceph osd purge` (osdmap, crush and auth entries). Refuses while unsafe.
# ceph-osd-drain.sh zap --device <dev>
#   Erases the bluestore label and signatures of a device whose OSD was purged from this cluster.
#   Refuses a device of another cluster and one whose OSD still exists in this cluster.
# ceph-osd-drain.sh remove --id <n> --device <dev> [--timeout <s>]
#   drain, then purge (the orchestrator stops the daemon meanwhile; purge waits for it), then zap.
# Runs as client.admin ($ZCLOUD_CEPH_KEYS/admin); zap runs where the device is.
# Output: one line per decision. Exit: 0 done, 1 refused or failed, 2 usage, 3 bound ran out.
set -eu

# Shipped as `sh -c '<lib.sh + ceph-lib.sh + this>' <name> <args>`; standalone it sources them.
# shellcheck source-path=SCRIPTDIR source=../lib.sh
command -v zc_log >/dev/null 2>&1 || . "$(dirname -- "$0")/../lib.sh"
# shellcheck source-path=SCRIPTDIR source=ceph-lib.sh
command -v zcc_ceph >/dev/null 2>&1 || . "$(dirname -- "$0")/ceph-lib.sh"

dr_usage="ceph-osd-drain.sh check | drain|purge --id <n> [--timeout <s>] | zap --device <dev> | remove --id <n> --device <dev> [--timeout <s>] (each with --fsid <fsid>)"

# dr_osd_state ID: prints "absent", or "<up|down> <in|out>" from the osdmap.
dr_osd_state() {
    dr_os_dump=$(zcc_ceph osd dump) || zc_fail "osd.$1" "cannot read the osdmap"
    dr_os_line=$(printf '%s\n' "$dr_os_dump" | awk -v o="osd.$1" '$1 == o { print $2, $3; exit }')
    printf '%s\n' "${dr_os_line:-absent}"
}

# dr_osd_pgs ID: the number of placement groups osd.ID last reported it stores, or nothing.
dr_osd_pgs() {
    zcc_ceph osd df --format json 2>/dev/null | python3 -c '
import json, sys
for n in json.load(sys.stdin).get("nodes", []):
    if n.get("id") == int(sys.argv[1]):
        print(n.get("pgs", ""))
' "$1"
}

# dr_safe ID: true when osd.ID's data lives elsewhere; prints the reason when not (a wait keeps
# it in $zcc_wait_out). Three answers must agree: `ceph osd safe-to-destroy`, every placement
# group active+clean (full redundancy again), and, while the OSD is up, the OSD's own report of
# the placement groups it stores. Right after `osd out` the
# manager's placement group map can be stale and safe-to-destroy can say yes before peering
# ran; the OSD only lets go of its copies once they are clean elsewhere.
dr_safe() {
    zcc_ceph osd safe-to-destroy "osd.$1" 2>&1 || return 1
    dr_sf_unclean=$(zcc_ceph pg stat --format json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
d = d.get("pg_summary", d)
total = d.get("num_pgs", 0)
clean = sum(s["num"] for s in d.get("num_pg_by_state", [])
            if {"active", "clean"} <= set(s["name"].split("+")))
print(total - clean)
') || dr_sf_unclean=unknown
    if [ "$dr_sf_unclean" != 0 ]; then
        echo "safe-to-destroy says yes, but ${dr_sf_unclean} placement groups are not active+clean yet."
        return 1
    fi
    dr_sf_state=$(dr_osd_state "$1")
    case $dr_sf_state in
        "up "*)
            dr_sf_pgs=$(dr_osd_pgs "$1")
            if [ "$dr_sf_pgs" != 0 ]; then
                echo "safe-to-destroy says yes, but osd.$1 still reports ${dr_sf_pgs:-unknown} placement groups on it."
                return 1
            fi
            ;;
    esac
}

# dr_short_pools ID: pools whose replicas would not fit without osd.ID, one
# "<pool> needs <size> <type>s, <n> would remain" per line; nothing when all fit. A pool's
# replicas go to distinct failure domains (the crush rule's type, host by default); a failure
# domain counts when it holds an OSD, other than osd.ID, that is up and in.
dr_short_pools() {
    zcc_ceph osd tree --format json >"$zcc_tmp/tree.json" || zc_fail "osd.$1" "cannot read the osd tree"
    zcc_ceph osd pool ls detail --format json >"$zcc_tmp/pools.json" || zc_fail "osd.$1" "cannot read the pools"
    zcc_ceph osd crush rule dump --format json >"$zcc_tmp/rules.json" || zc_fail "osd.$1" "cannot read the crush rules"
    python3 -c '
import json, sys
gone = int(sys.argv[1])
tree, pools, rules = (json.load(open(f)) for f in sys.argv[2:5])
nodes = {n["id"]: n for n in tree["nodes"]}
def usable(i):
    n = nodes.get(i)
    if n is None:
        return False
    if n["type"] == "osd":
        return i != gone and n.get("status") == "up" and n.get("reweight", 0) > 0
    return any(usable(c) for c in n.get("children", []))
domain = {}
for r in rules:
    for st in r.get("steps", []):
        if st.get("op", "").startswith("choose"):
            domain[r["rule_id"]] = st.get("type", "host")
for p in pools:
    t = domain.get(p["crush_rule"], "host")
    left = sum(1 for n in tree["nodes"] if n["type"] == t and usable(n["id"]))
    if left < p["size"]:
        print("%s needs %d %ss, %d would remain" % (p["pool_name"], p["size"], t, left))
' "$1" "$zcc_tmp/tree.json" "$zcc_tmp/pools.json" "$zcc_tmp/rules.json"
}

# dr_drain ID: out (once, and only when every pool still fits without it), then the bounded
# wait for safe-to-destroy.
dr_drain() {
    dr_d_state=$(dr_osd_state "$1")
    case $dr_d_state in
        absent)
            zc_log "osd.$1" "not in the cluster; nothing to drain"
            return 0
            ;;
        *" in")
            dr_d_short=$(dr_short_pools "$1")
            if [ -n "$dr_d_short" ]; then
                zc_die "osd.$1" "draining it would leave pools without room for their replicas ($(printf '%s' "$dr_d_short" | tr '\n' ';' | sed 's/;/; /g')); add capacity or lower replicas first - not marked out"
            fi
            zcc_ceph osd out "$1" >/dev/null 2>&1 || zc_fail "osd.$1" "ceph osd out"
            zc_log "osd.$1" "marked out; its placement groups move to other OSDs"
            ;;
        *) zc_log "osd.$1" "already out" ;;
    esac
    if ! zcc_wait "osd.$1" "$dr_timeout" "safe-to-destroy (data moved off it)" dr_safe "$1"; then
        zc_refuse "osd.$1" "not safe to destroy after ${dr_timeout}s: $(printf '%s' "$zcc_wait_out" | tr '\n' ' ')- it stays out and nothing was destroyed; add capacity or lower replicas, then run drain again"
        exit "$ZCC_EXIT_TIMEOUT"
    fi
    zc_log "osd.$1" "safe to destroy; stop its daemon, then purge"
}

# dr_is_down ID: true when the OSD is down (or gone).
dr_is_down() {
    case $(dr_osd_state "$1") in absent | "down "*) return 0 ;; esac
    return 1
}

# dr_purge ID: waits for the daemon to be down, re-checks safety, purges.
dr_purge() {
    dr_p_state=$(dr_osd_state "$1")
    if [ "$dr_p_state" = absent ]; then
        zc_log "osd.$1" "already purged"
        return 0
    fi
    if ! zcc_wait "osd.$1" "$dr_timeout" "the daemon to be down" dr_is_down "$1"; then
        zc_refuse "osd.$1" "still up after ${dr_timeout}s; stop its daemon before purging"
        exit "$ZCC_EXIT_TIMEOUT"
    fi
    if ! dr_p_msg=$(dr_safe "$1"); then
        zc_die "osd.$1" "not safe to destroy: $(printf '%s' "$dr_p_msg" | tr '\n' ' ')- run drain first"
    fi
    zcc_ceph osd purge "$1" --yes-i-really-mean-it >/dev/null 2>&1 || zc_fail "osd.$1" "ceph osd purge"
    zc_log "osd.$1" "purged (osdmap, crush and auth entries removed)"
}

# dr_label DEV: sets dr_fsid, dr_id, dr_uuid from the bluestore label; 1 when there is none.
dr_label() {
    dr_fsid='' dr_id='' dr_uuid=''
    dr_lb_json=$(ceph-bluestore-tool show-label --dev "$1" 2>/dev/null </dev/null) || return 1
    dr_fsid=$(printf '%s\n' "$dr_lb_json" | sed -n 's/^[[:space:]]*"ceph_fsid": "\([^"]*\)".*/\1/p' | head -n 1)
    dr_id=$(printf '%s\n' "$dr_lb_json" | sed -n 's/^[[:space:]]*"whoami": "\([^"]*\)".*/\1/p' | head -n 1)
    dr_uuid=$(printf '%s\n' "$dr_lb_json" | sed -n 's/^[[:space:]]*"osd_uuid": "\([^"]*\)".*/\1/p' | head -n 1)
    dr_lb_json=
    return 0
}

# dr_zap_label_copies SUBJECT DEV: newer BlueStore (bluestore_bdev_label_multi, v19) keeps
# copies of the label at 1, 10, 100 and 1000 GiB and reads them when the first is gone: zero
# every such 4 KiB block that fits on the device (no-op on 16.2 devices, which have none).
dr_zap_label_copies() {
    dr_zl_size=$(blockdev --getsize64 "$2") || zc_fail "$1" "cannot read the size of $2"
    for dr_zl_gib in 1 10 100 1000; do
        dr_zl_block=$((dr_zl_gib * 262144)) # 4 KiB blocks per GiB
        [ $(((dr_zl_block + 1) * 4096)) -le "$dr_zl_size" ] || continue
        dd if=/dev/zero of="$2" bs=4096 count=1 seek="$dr_zl_block" conv=fsync,notrunc status=none </dev/null ||
            zc_fail "$1" "zeroing the label copy at ${dr_zl_gib} GiB"
    done
}

# dr_zap DEV: only a device whose OSD no longer exists in this cluster.
dr_zap() {
    zc_guard_exists "$1" || exit "$ZCC_EXIT_REFUSED"
    dr_z_dev=$(zc_canonical "$1")
    zc_guard_block "$1" "$dr_z_dev" || exit "$ZCC_EXIT_REFUSED"
    zc_guard_not_mounted "$1" "$dr_z_dev" || exit "$ZCC_EXIT_REFUSED"
    zc_guard_no_holders "$1" "$dr_z_dev" || exit "$ZCC_EXIT_REFUSED"
    if ! dr_label "$dr_z_dev"; then
        zc_log "$1" "no bluestore label; nothing to zap"
        return 0
    fi
    dr_z_fsid=$(zcc_fsid)
    if [ "$dr_fsid" != "$dr_z_fsid" ]; then
        zc_die "$1" "carries an OSD of another Ceph cluster (fsid $dr_fsid); not zapping it"
    fi
    dr_z_state=absent
    [ -z "$dr_id" ] || dr_z_state=$(dr_osd_state "$dr_id")
    if [ "$dr_z_state" != absent ]; then
        zc_die "$1" "osd.$dr_id still exists in this cluster; drain and purge it before zapping"
    fi
    dr_z_id=$dr_id
    dr_z_uuid=$dr_uuid
    wipefs --all --quiet -- "$dr_z_dev" </dev/null || zc_fail "$1" "wipefs --all"
    dd if=/dev/zero of="$dr_z_dev" bs=1M count=10 conv=fsync status=none </dev/null ||
        zc_fail "$1" "zeroing the first 10 MiB"
    dr_zap_label_copies "$1" "$dr_z_dev"
    if dr_label "$dr_z_dev"; then
        zc_fail "$1" "bluestore label still readable after zapping"
    fi
    zc_log "$1" "zapped (label of purged osd.$dr_z_id, uuid $dr_z_uuid, erased)"
}

dr_action=${1:-}
case $dr_action in check | drain | purge | zap | remove) shift ;; *) zcc_usage "$dr_usage" ;; esac
dr_fsid_want=
dr_osd=
dr_dev=
dr_timeout=600
while [ $# -gt 0 ]; do
    case $1 in
        --id) zcc_need_value "$1" "${2:-}"; dr_osd=$2; shift 2 ;;
        --fsid) zcc_need_value "$1" "${2:-}"; dr_fsid_want=$2; shift 2 ;;
        --device) zcc_need_value "$1" "${2:-}"; dr_dev=$2; shift 2 ;;
        --timeout) zcc_need_value "$1" "${2:-}"; dr_timeout=$2; shift 2 ;;
        *) zcc_usage "$dr_usage" ;;
    esac
done
case $dr_timeout in '' | *[!0-9]*) zcc_usage "--timeout must be seconds" ;; esac
case $dr_action in
    drain | purge | remove)
        case $dr_osd in '' | *[!0-9]*) zcc_usage "$dr_usage" ;; esac ;;
esac
case $dr_action in
    zap | remove) [ -n "$dr_dev" ] || zcc_usage "$dr_usage" ;;
esac

[ -n "$dr_fsid_want" ] || zcc_usage "$dr_usage"
zcc_require_cluster "$dr_fsid_want"
case $dr_action in
    check) zc_log "cluster $dr_fsid_want" "the admin pod's ceph.conf and the cluster it reaches are this storage's" ;;
    drain) dr_drain "$dr_osd" ;;
    purge) dr_purge "$dr_osd" ;;
    zap) dr_zap "$dr_dev" ;;
    remove)
        dr_drain "$dr_osd"
        dr_purge "$dr_osd"
        dr_zap "$dr_dev"
        ;;
esac
