#!/bin/sh
# ceph-gate.sh: the health gates of a rolling daemon restart (one daemon, or one CRUSH host's
# OSDs, at a time). Runs in the storage's admin pod as client.admin. Every action takes
# --fsid <fsid> (the storage's cluster from Pulumi state) and first refuses, changing nothing,
# unless ceph.conf and the cluster the admin key reaches are that cluster; waits are bounded by
# --timeout <s> (default 600). On timeout the message names the daemon and carries
# `ceph health detail`.
#
# ceph-gate.sh roll-start
#   Before the roll's first restart (its gate guards every daemon, so it runs before whichever
#   daemon a change restarts first). Refuses at once, naming them, while a mon of the monmap is
#   outside the quorum (restarting another mon would lose the quorum) or an OSD is down but in
#   (its placement groups miss a copy: the OSD roll would stop at the next host's ok-to-stop);
#   waits, bounded, until every placement group is active. Says so when noout is set.
# ceph-gate.sh mon-quorum --id <mon>
#   Waits until mon.<id> and every other mon of the monmap are in the quorum (quorum_status).
# ceph-gate.sh mgr-available --id <mgr>
#   Waits until the cluster has an available manager and mgr.<id> is it or one of its standbys.
# ceph-gate.sh osd-ok-to-stop --host <crush host>
#   Refuses, with Ceph's reason, when stopping every OSD of that CRUSH host would leave some
#   placement group inactive (`ceph osd ok-to-stop`). A host without OSDs: nothing to check.
#   While Ceph answers EAGAIN (no placement group stats yet, e.g. right after a manager
#   restart), or EBUSY only for placement groups inactive already (peering for a moment, as
#   after the previous host's OSDs came back) and none that stopping would make inactive, it
#   asks again, bounded by --timeout; that bound running out refuses the same way.
# ceph-gate.sh osd-up --host <crush host> [--osds <n>]
#   Waits until the CRUSH host holds <n> OSDs (its OSD workloads: a new one is in the map only
#   once its prepare made it), every OSD of it is up and in and every placement group is active
#   and neither undersized nor degraded (the restarted OSDs back in every acting set, so the
#   next host's ok-to-stop counts them). While fewer hosts have up OSDs than some pool's
#   min_size (size), as when a new cluster forms, its placement groups cannot be active (whole)
#   yet: the OSDs being up is enough.
# ceph-gate.sh noout set|unset
#   Sets or clears the cluster's noout flag (around the OSD roll).
# ceph-gate.sh mds-handover --name <mds> --fs <fs>
#   When mds.<name> holds a rank of <fs> and a standby exists: fails it over (`ceph mds fail`)
#   and waits until <fs> has an active MDS again that is not <name>. Without a standby, or when
#   <name> holds no rank: nothing to do.
# ceph-gate.sh fs-active --fs <fs> [--name <mds>]
#   Waits until <fs> has an active MDS (an fs that does not exist yet: nothing to wait for);
#   with --name, also until mds.<name> is back in the fs map (active or standby), so the next
#   handover finds it as a standby.
# A refusal or timeout while the cluster's noout flag is set says that it stays set and how to
# clear it. Output: one line per decision. Exit: 0 done, 1 refused or failed, 2 usage, 3 bound ran out.
set -eu

# Shipped as `sh -c '<lib.sh + ceph-lib.sh + this>' <name> <args>`; standalone it sources them.
# shellcheck source-path=SCRIPTDIR source=../lib.sh
command -v zc_log >/dev/null 2>&1 || . "$(dirname -- "$0")/../lib.sh"
# shellcheck source-path=SCRIPTDIR source=ceph-lib.sh
command -v zcc_ceph >/dev/null 2>&1 || . "$(dirname -- "$0")/ceph-lib.sh"

gt_usage="ceph-gate.sh roll-start | mon-quorum|mgr-available --id <daemon> | osd-ok-to-stop|osd-up --host <host> [--osds <n>] | noout set|unset | mds-handover --name <mds> --fs <fs> | fs-active --fs <fs> [--name <mds>] (each with --fsid <fsid> [--timeout <s>])"

# gt_noout_note: what a refusal adds while the cluster's noout flag is set (a roll stopped between
# its `noout set` and `noout unset` gates): that it stays set, and how to clear it.
gt_noout_note() {
    gt_nn_flags=$(zcc_ceph osd dump 2>/dev/null | awk '$1 == "flags" { print $2; exit }') || return 0
    case ",$gt_nn_flags," in
        *,noout,*) printf '%s' " - noout stays set (a stopped OSD is not marked out, its data not copied elsewhere) until a pulumi up gets past this storage's noout-unset gate; by hand, once every OSD is up: ceph osd unset noout (in an admin pod)" ;;
    esac
}

# gt_timeout SUBJECT WHAT: the bound ran out; names the daemon, the last answer and the cluster's
# health detail (and a set noout), exits 3.
gt_timeout() {
    gt_to_health=$(zcc_ceph health detail 2>/dev/null | head -n 40 | tr '\n' ' ') || true
    zc_refuse "$1" "$2 after ${gt_limit}s: $(printf '%s' "$zcc_wait_out" | tr '\n' ' ') - health: ${gt_to_health:-unknown}$(gt_noout_note)"
    exit "$ZCC_EXIT_TIMEOUT"
}

# gt_quorum: "<mons in the quorum>|<mons of the monmap outside it>", names space-separated.
gt_quorum() {
    zcc_ceph quorum_status --format json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
q = d.get("quorum_names", [])
m = [x["name"] for x in d.get("monmap", {}).get("mons", [])]
print(" ".join(q) + "|" + " ".join(n for n in m if n not in q))
'
}

# gt_in_quorum ID: true when mon.ID and every other mon of the monmap are in the quorum (the
# next mon may then restart without losing it); prints the quorum and the monmap when not.
gt_in_quorum() {
    gt_q=$(gt_quorum) || { echo "no quorum_status answer"; return 1; }
    gt_q_in=${gt_q%|*}
    gt_q_out=${gt_q#*|}
    case " $gt_q_in " in
        *" $1 "*) [ -n "$gt_q_out" ] || return 0 ;;
    esac
    if [ -n "$gt_q_out" ]; then
        echo "quorum is [$gt_q_in], not in it: [$gt_q_out]"
    else
        echo "quorum is [$gt_q_in]"
    fi
    return 1
}

# gt_mgr_in ID: true when a manager is available and mgr.ID is the active one or a standby;
# prints the map's managers when not.
gt_mgr_in() {
    gt_m=$(zcc_ceph mgr dump --format json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
names = [d.get("active_name", "")] + [s.get("name", "") for s in d.get("standbys", [])]
print(("available" if d.get("available") else "unavailable") + "|" + " ".join(n for n in names if n))
') || { echo "no mgr dump answer"; return 1; }
    case "$gt_m" in available\|*) case " ${gt_m#*|} " in *" $1 "*) return 0 ;; esac ;; esac
    echo "managers: ${gt_m%%|*} [${gt_m#*|}]"
    return 1
}

# gt_host_osds HOST: the ids of the OSDs under CRUSH host HOST, space-separated (none: empty).
gt_host_osds() {
    zcc_ceph osd tree --format json 2>/dev/null | python3 -c '
import json, sys
nodes = {n["id"]: n for n in json.load(sys.stdin)["nodes"]}
ids = [c for n in nodes.values() if n["type"] == "host" and n["name"] == sys.argv[1] for c in n.get("children", [])]
print(" ".join(str(i) for i in sorted(ids) if i >= 0))
' "$1"
}

# gt_already_inactive ANSWER: when Ceph's ok-to-stop ANSWER (EBUSY) finds no placement group
# that stopping would make inactive, only ones inactive already (peering again, as after a
# restarted OSD's pg_temp is cleared), prints their ids; fails otherwise.
gt_already_inactive() {
    case $1 in *EBUSY*) ;; *) return 1 ;; esac
    printf '%s\n' "$1" | python3 -c '
import json, sys
for line in sys.stdin:
    if line.startswith("{"):
        d = json.loads(line)
        bad = d.get("bad_already_inactive", [])
        if bad and d.get("num_not_ok_pgs") == len(bad) and not d.get("ambiguous_pgs"):
            print(" ".join(bad))
            sys.exit(0)
sys.exit(1)
' 2>/dev/null
}

# gt_ok_to_stop HOST: refuses with Ceph's reason unless every OSD of HOST may stop at once.
gt_ok_to_stop() {
    gt_ok_ids=$(gt_host_osds "$1") || zc_fail "host $1" "cannot read the osd tree"
    if [ -z "$gt_ok_ids" ]; then
        zc_log "host $1" "no OSDs in the CRUSH map; nothing to check"
        return 0
    fi
    gt_ok_deadline=$(($(zcc_now) + gt_limit))
    gt_ok_said=
    # shellcheck disable=SC2086 # one argument per id
    while ! gt_ok_out=$(zcc_ceph osd ok-to-stop $gt_ok_ids 2>&1); do
        # Asked again within the bound: EAGAIN (Ceph cannot answer yet: right after a manager
        # restart its placement group stats are unknown), and EBUSY for placement groups that
        # are inactive already but none that stopping would make inactive (a moment of peering).
        # Any other answer refuses at once.
        gt_ok_wait=
        case $gt_ok_out in
            *EAGAIN*) gt_ok_wait="Ceph to answer ok-to-stop (EAGAIN)" ;;
            *) gt_ok_pgs=$(gt_already_inactive "$gt_ok_out") && gt_ok_wait="placement groups $gt_ok_pgs, inactive already (peering?), to be active; stopping this host's OSDs would make no other inactive" ;;
        esac
        if [ -n "$gt_ok_wait" ] && [ "$(zcc_now)" -lt "$gt_ok_deadline" ]; then
            [ "$gt_ok_said" = "$gt_ok_wait" ] || zc_log "host $1" "waiting up to ${gt_limit}s for $gt_ok_wait"
            gt_ok_said=$gt_ok_wait
            sleep "$ZCLOUD_CEPH_POLL"
            continue
        fi
        # Ceph's reason, without the client's own log lines (timestamped)
        gt_ok_out=$(printf '%s\n' "$gt_ok_out" | grep -v '^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T' | tr '\n' ' ')
        case $gt_ok_wait in
            placement*) zc_die "host $1" "placement groups $gt_ok_pgs still inactive after ${gt_limit}s (see ceph health detail): ${gt_ok_out}- not restarted$(gt_noout_note)" ;;
        esac
        zc_die "host $1" "stopping osd $(echo "$gt_ok_ids" | sed 's/ /,/g') would make placement groups inactive: ${gt_ok_out}- not restarted$(gt_noout_note)"
    done
    zc_log "host $1" "osd $(echo "$gt_ok_ids" | sed 's/ /,/g') ok to stop"
}

# gt_osds_up IDS: true when every listed OSD is up and in and every placement group is active
# and whole (none undersized or degraded: the restarted OSDs are back in every acting set and
# caught up, so the next host's ok-to-stop counts them); prints what is missing when not.
gt_osds_up() {
    zcc_ceph osd dump >"$zcc_tmp/dump" 2>&1 || { echo "cannot read the osdmap"; return 1; }
    for gt_u_id in $1; do
        gt_u_state=$(awk -v o="osd.$gt_u_id" '$1 == o { print $2, $3; exit }' "$zcc_tmp/dump")
        [ "$gt_u_state" = "up in" ] || { echo "osd.$gt_u_id is ${gt_u_state:-absent}"; return 1; }
    done
    gt_u_pgs=$(gt_pg_counts) || gt_u_pgs="unknown unknown"
    gt_u_inactive=${gt_u_pgs% *}
    gt_u_partial=${gt_u_pgs#* }
    [ "$gt_u_inactive" = 0 ] && [ "$gt_u_partial" = 0 ] && return 0
    if [ "$gt_u_inactive" != 0 ]; then
        if gt_u_forming=$(gt_forming min_size); then
            echo "$gt_u_inactive placement groups are not active, as expected while the cluster forms: $gt_u_forming"
            return 0
        fi
        echo "$gt_u_inactive placement groups are not active"
        return 1
    fi
    if gt_u_forming=$(gt_forming size); then
        echo "$gt_u_partial placement groups are undersized or degraded, as expected while the cluster forms: $gt_u_forming"
        return 0
    fi
    echo "$gt_u_partial placement groups are undersized or degraded"
    return 1
}

# gt_forming FIELD: true, printing why, when fewer CRUSH hosts have an up OSD than some pool's
# FIELD (min_size: its PGs cannot be active; size: they cannot be whole): a cluster still being
# built (its first hosts' OSDs), whose placement groups wait for more hosts. An established
# cluster always has that many.
gt_forming() {
    zcc_ceph osd tree --format json >"$zcc_tmp/tree" 2>/dev/null || return 1
    zcc_ceph osd dump --format json >"$zcc_tmp/dumpj" 2>/dev/null || return 1
    python3 -c '
import json, sys
nodes = json.load(open(sys.argv[1]))["nodes"]
up = {n["id"] for n in nodes if n["id"] >= 0 and n.get("status") == "up"}
hosts = sum(1 for n in nodes if n["type"] == "host" and up.intersection(n.get("children", [])))
need = max([p.get(sys.argv[3], 1) for p in json.load(open(sys.argv[2])).get("pools", [])] or [0])
if hosts >= need:
    sys.exit(1)
print("%d host(s) with up OSDs, pools need %d (%s)" % (hosts, need, sys.argv[3]))
' "$zcc_tmp/tree" "$zcc_tmp/dumpj" "$1"
}

# gt_pg_counts: "<not active> <active but undersized or degraded>" placement group counts.
gt_pg_counts() {
    zcc_ceph pg stat --format json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
d = d.get("pg_summary", d)
total = d.get("num_pgs", 0)
states = [(s["name"].split("+"), s["num"]) for s in d.get("num_pg_by_state", [])]
active = sum(n for st, n in states if "active" in st)
partial = sum(n for st, n in states if "active" in st and ("undersized" in st or "degraded" in st))
print(total - active, partial)
' 2>/dev/null
}

# gt_pgs_active: true when every placement group is active; prints how many are not when not.
gt_pgs_active() {
    gt_pa=$(gt_pg_counts) || { echo "no pg stat answer"; return 1; }
    [ "${gt_pa% *}" != 0 ] || return 0
    echo "${gt_pa% *} placement groups are not active"
    return 1
}

# gt_osds_down_in: the OSDs that are down but in, as "osd.<id> (host <h>)", comma-separated.
gt_osds_down_in() {
    zcc_ceph osd tree --format json 2>/dev/null | python3 -c '
import json, sys
nodes = json.load(sys.stdin)["nodes"]
host = {c: n["name"] for n in nodes if n["type"] == "host" for c in n.get("children", [])}
bad = [n for n in nodes if n["id"] >= 0 and n.get("status") != "up" and n.get("reweight", 0) > 0]
print(", ".join("osd.%d (host %s)" % (n["id"], host.get(n["id"], "none")) for n in sorted(bad, key=lambda n: n["id"])))
'
}

# gt_roll_start: refuses unless every mon is in the quorum and no OSD is down but in; waits,
# bounded, for every placement group to be active.
gt_roll_start() {
    gt_rs_c="cluster $gt_fsid_want"
    gt_rs_q=$(gt_quorum) || zc_fail "$gt_rs_c" "cannot read the quorum status"
    gt_rs_out=${gt_rs_q#*|}
    if [ -n "$gt_rs_out" ]; then
        zc_die "$gt_rs_c" "mon $(echo "$gt_rs_out" | sed 's/ /, /g') not in the quorum [${gt_rs_q%|*}]: restarting another mon now could lose the quorum - bring it back first (its pod's log, ceph health detail), then run pulumi up again; no daemon was restarted$(gt_noout_note)"
    fi
    gt_rs_down=$(gt_osds_down_in) || zc_fail "$gt_rs_c" "cannot read the osd tree"
    if [ -n "$gt_rs_down" ]; then
        zc_die "$gt_rs_c" "$gt_rs_down down but in: its placement groups miss a copy, so the OSD roll would stop at the next host's ok-to-stop - bring it back (or mark it out, ceph osd out <id>, and let the data recover) first, then run pulumi up again; no daemon was restarted$(gt_noout_note)"
    fi
    if ! zcc_wait "$gt_rs_c" "$gt_limit" "every placement group active" gt_pgs_active; then
        gt_timeout "$gt_rs_c" "placement groups not active"
    fi
    zc_log "$gt_rs_c" "every mon in the quorum [${gt_rs_q%|*}], no OSD down but in, every placement group active: the roll may start"
    if [ -n "$(gt_noout_note)" ]; then
        zc_log "$gt_rs_c" "noout is set (a roll that stopped before its noout-unset gate?): this roll's noout-unset gate clears it when the OSDs roll; else, once every OSD is up: ceph osd unset noout"
    fi
}

# gt_host_up HOST N: true when CRUSH host HOST holds at least N OSDs and gt_osds_up holds for
# them; prints what is missing when not.
gt_host_up() {
    gt_hu_ids=$(gt_host_osds "$1") || { echo "cannot read the osd tree"; return 1; }
    gt_hu_n=$(echo "$gt_hu_ids" | wc -w)
    if [ "$gt_hu_n" -lt "$2" ]; then
        echo "host $1 holds $gt_hu_n of its $2 OSDs in the CRUSH map"
        return 1
    fi
    gt_osds_up "$gt_hu_ids"
}

gt_osd_up() {
    if ! zcc_wait "host $1" "$gt_limit" "its OSDs up and in and all placement groups active" gt_host_up "$1" "$2"; then
        gt_timeout "host $1 (osd $(gt_host_osds "$1" 2>/dev/null | sed 's/ /,/g'))" "not up with all placement groups active"
    fi
    gt_ou_ids=$(gt_host_osds "$1") || zc_fail "host $1" "cannot read the osd tree"
    if [ -n "$zcc_wait_out" ]; then
        zc_log "host $1" "osd $(echo "$gt_ou_ids" | sed 's/ /,/g') up and in; $zcc_wait_out"
    else
        zc_log "host $1" "osd $(echo "$gt_ou_ids" | sed 's/ /,/g') up and in, all placement groups active"
    fi
}

# gt_fs_ranks FS: "<active names> | <standby count>" of FS, or "absent".
gt_fs_ranks() {
    zcc_ceph fs dump --format json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
fs = [f["mdsmap"] for f in d.get("filesystems", []) if f["mdsmap"]["fs_name"] == sys.argv[1]]
if not fs:
    print("absent")
    sys.exit(0)
active = [i["name"] for i in fs[0]["info"].values() if i["state"] == "up:active"]
print(" ".join(sorted(active)) + "|" + str(len(d.get("standbys", []))))
' "$1"
}

# gt_fs_is_active FS [NOT]: true when FS has an active MDS (other than NOT); absent counts.
gt_fs_is_active() {
    gt_fa=$(gt_fs_ranks "$1") || { echo "cannot read the fs map"; return 1; }
    [ "$gt_fa" != absent ] || return 0
    for gt_fa_n in ${gt_fa%|*}; do
        [ "$gt_fa_n" = "${2:-}" ] || return 0
    done
    echo "no active MDS for $1 (active: [${gt_fa%|*}])"
    return 1
}

# gt_mds_known NAME: true when mds.NAME is in the fs map (a rank or a standby).
gt_mds_known() {
    zcc_ceph fs dump --format json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
names = [s["name"] for s in d.get("standbys", [])] + [i["name"] for f in d.get("filesystems", []) for i in f["mdsmap"]["info"].values()]
if sys.argv[1] not in names:
    print("mds.%s is not in the fs map (daemons: [%s])" % (sys.argv[1], " ".join(sorted(names))))
    sys.exit(1)
' "$1"
}

gt_fs_active() {
    if ! zcc_wait "fs $1" "$gt_limit" "an active MDS" gt_fs_is_active "$1" "${2:-}"; then
        gt_timeout "fs $1" "no active MDS"
    fi
    zc_log "fs $1" "active"
}

gt_mds_handover() {
    gt_mh=$(gt_fs_ranks "$2") || zc_fail "mds.$1" "cannot read the fs map"
    case " ${gt_mh%|*} " in
        *" $1 "*) ;;
        *)
            zc_log "mds.$1" "holds no active rank of $2; nothing to hand over"
            return 0
            ;;
    esac
    if [ "${gt_mh#*|}" = 0 ]; then
        zc_log "mds.$1" "active for $2 with no standby; restarts without a handover (fs briefly unavailable)"
        return 0
    fi
    zcc_ceph mds fail "$1" >/dev/null 2>&1 || zc_fail "mds.$1" "ceph mds fail"
    zc_log "mds.$1" "failed over to a standby"
    gt_fs_active "$2" "$1"
}

gt_action=${1:-}
case $gt_action in roll-start | mon-quorum | mgr-available | osd-ok-to-stop | osd-up | noout | mds-handover | fs-active) shift ;; *) zcc_usage "$gt_usage" ;; esac
gt_flag=
if [ "$gt_action" = noout ]; then
    case ${1:-} in set | unset) gt_flag=$1; shift ;; *) zcc_usage "$gt_usage" ;; esac
fi
gt_fsid_want='' gt_id='' gt_host='' gt_fs='' gt_limit=600 gt_osds=0
while [ $# -gt 0 ]; do
    case $1 in
        --fsid) zcc_need_value "$1" "${2:-}"; gt_fsid_want=$2; shift 2 ;;
        --id | --name) zcc_need_value "$1" "${2:-}"; gt_id=$2; shift 2 ;;
        --host) zcc_need_value "$1" "${2:-}"; gt_host=$2; shift 2 ;;
        --fs) zcc_need_value "$1" "${2:-}"; gt_fs=$2; shift 2 ;;
        --osds) zcc_need_value "$1" "${2:-}"; gt_osds=$2; shift 2 ;;
        --timeout) zcc_need_value "$1" "${2:-}"; gt_limit=$2; shift 2 ;;
        *) zcc_usage "$gt_usage" ;;
    esac
done
case $gt_limit in '' | *[!0-9]*) zcc_usage "--timeout must be seconds" ;; esac
case $gt_osds in '' | *[!0-9]*) zcc_usage "--osds must be a count" ;; esac
case $gt_action in
    mon-quorum | mgr-available) [ -n "$gt_id" ] || zcc_usage "$gt_usage" ;;
    osd-ok-to-stop | osd-up) [ -n "$gt_host" ] || zcc_usage "$gt_usage" ;;
    mds-handover) [ -n "$gt_id" ] || zcc_usage "$gt_usage"; [ -n "$gt_fs" ] || zcc_usage "$gt_usage" ;;
    fs-active) [ -n "$gt_fs" ] || zcc_usage "$gt_usage" ;;
esac
[ -n "$gt_fsid_want" ] || zcc_usage "$gt_usage"
# The mons may be electing (a mon just restarted or joined: no answer for some seconds): wait,
# bounded, until the cluster answers, then check that it is the storage's.
gt_conf_fsid=$(zcc_fsid) || exit 1
if [ "$gt_conf_fsid" = "$gt_fsid_want" ] && ! zcc_wait "cluster $gt_fsid_want" "$gt_limit" "the cluster to answer (the mons may be electing)" zcc_ceph fsid; then
    zc_refuse "cluster $gt_fsid_want" "no answer from the cluster after ${gt_limit}s (no mon quorum?); nothing was changed"
    exit "$ZCC_EXIT_TIMEOUT"
fi
zcc_require_cluster "$gt_fsid_want"
zcc_private_dir

case $gt_action in
    roll-start) gt_roll_start ;;
    mon-quorum)
        if ! zcc_wait "mon.$gt_id" "$gt_limit" "it to be in the quorum" gt_in_quorum "$gt_id"; then
            gt_timeout "mon.$gt_id" "not in the quorum"
        fi
        zc_log "mon.$gt_id" "in the quorum"
        ;;
    mgr-available)
        if ! zcc_wait "mgr.$gt_id" "$gt_limit" "it to be the active manager or a standby" gt_mgr_in "$gt_id"; then
            gt_timeout "mgr.$gt_id" "not available"
        fi
        zc_log "mgr.$gt_id" "available"
        ;;
    osd-ok-to-stop) gt_ok_to_stop "$gt_host" ;;
    osd-up) gt_osd_up "$gt_host" "$gt_osds" ;;
    noout)
        zcc_ceph osd "$gt_flag" noout >/dev/null 2>&1 || zc_fail "cluster $gt_fsid_want" "ceph osd $gt_flag noout"
        zc_log "cluster $gt_fsid_want" "noout ${gt_flag}"
        ;;
    mds-handover) gt_mds_handover "$gt_id" "$gt_fs" ;;
    fs-active)
        gt_fs_active "$gt_fs"
        if [ -n "$gt_id" ] && [ "$(gt_fs_ranks "$gt_fs")" != absent ]; then
            if ! zcc_wait "mds.$gt_id" "$gt_limit" "it to be back (active or standby)" gt_mds_known "$gt_id"; then
                gt_timeout "mds.$gt_id" "not back in the fs map"
            fi
            zc_log "mds.$gt_id" "in the fs map"
        fi
        ;;
esac
