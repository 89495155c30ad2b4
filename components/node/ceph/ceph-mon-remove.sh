#!/bin/sh
# ceph-mon-remove.sh --id <mon> --fsid <fsid> [--timeout <s>]
#
# Takes mon.<id> out of the monmap (`ceph mon remove`) while the mons that stay keep their
# quorum: the step before Pulumi deletes the mon's workload when the config no longer places it
# (three hosts shrunk below three: mons b and c go). Runs in the storage's admin pod as
# client.admin; first refuses, changing nothing, unless ceph.conf and the cluster the admin key
# reaches are <fsid> (the storage's cluster from Pulumi state).
#   - mon.<id> not in the monmap: nothing to do (a re-run, or removed by hand).
#   - the mons that stay must hold a quorum of their own: more than half of them in the quorum
#     now (waited for, bounded: a mon that just restarted rejoins). Otherwise refused, naming the
#     mons outside the quorum: removing <id> would leave the cluster without one.
#   - then `ceph mon remove <id>`, and a bounded wait until the monmap no longer lists it and
#     the quorum answers again.
# The removed mon's daemon, if it still runs, stops by itself (it is no longer in the map).
# Output: one line per decision. Exit: 0 done, 1 refused or failed, 2 usage, 3 bound ran out.
set -eu

# Shipped as `sh -c '<lib.sh + ceph-lib.sh + this>' <name> <args>`; standalone it sources them.
# shellcheck source-path=SCRIPTDIR source=../lib.sh
command -v zc_log >/dev/null 2>&1 || . "$(dirname -- "$0")/../lib.sh"
# shellcheck source-path=SCRIPTDIR source=ceph-lib.sh
command -v zcc_ceph >/dev/null 2>&1 || . "$(dirname -- "$0")/ceph-lib.sh"

mr_usage="ceph-mon-remove.sh --id <mon> --fsid <fsid> [--timeout <s>]"

# mr_state ID: "<in|absent> <stay quorate: yes|no> <in quorum> <out of quorum>" for removing
# mon.ID: whether the monmap lists it, and whether the other mons hold a majority of themselves
# in the quorum (lists comma-separated, "-" when empty).
mr_state() {
    zcc_ceph quorum_status --format json 2>/dev/null | python3 -c '
import json, sys
gone = sys.argv[1]
d = json.load(sys.stdin)
mons = [m["name"] for m in d.get("monmap", {}).get("mons", [])]
quorum = set(d.get("quorum_names", []))
stay = [m for m in mons if m != gone]
inq = [m for m in stay if m in quorum]
out = [m for m in stay if m not in quorum]
ok = "yes" if stay and 2 * len(inq) > len(stay) else "no"
print("in" if gone in mons else "absent", ok, ",".join(inq) or "-", ",".join(out) or "-")
' "$1"
}

# mr_stay_quorate ID: true when the mons other than ID hold a quorum of their own; prints the
# state when not (kept for the refusal).
mr_stay_quorate() {
    mr_sq=$(mr_state "$1") || { echo "no quorum_status answer"; return 1; }
    case $mr_sq in
        *" yes "*) return 0 ;;
    esac
    # shellcheck disable=SC2086 # four words, none empty
    set -- $mr_sq
    echo "in the quorum: [$3], outside it: [$4]"
    return 1
}

# mr_gone ID: true once the monmap no longer lists ID and the quorum answers.
mr_gone() {
    mr_g=$(mr_state "$1") || { echo "no quorum_status answer"; return 1; }
    case $mr_g in
        "absent yes "*) return 0 ;;
    esac
    echo "$mr_g"
    return 1
}

# mr_remove ID: the decision and the removal.
mr_remove() {
    mr_r=$(mr_state "$1") || zc_fail "mon.$1" "cannot read quorum_status"
    case $mr_r in
        absent*)
            zc_log "mon.$1" "not in the monmap; nothing to remove"
            return 0
            ;;
    esac
    if ! zcc_wait "mon.$1" "$mr_timeout" "the mons that stay to hold a quorum without it" mr_stay_quorate "$1"; then
        zc_refuse "mon.$1" "the mons that stay would have no quorum without it ($zcc_wait_out) after ${mr_timeout}s; not removed, nothing was changed - bring those mons back (or remove a dead one by hand: ceph mon remove <id>), then run pulumi up again"
        exit "$ZCC_EXIT_TIMEOUT"
    fi
    zcc_ceph mon remove "$1" >/dev/null 2>&1 || zc_fail "mon.$1" "ceph mon remove"
    zc_log "mon.$1" "removed from the monmap"
    if ! zcc_wait "mon.$1" "$mr_timeout" "the quorum without it" mr_gone "$1"; then
        zc_refuse "mon.$1" "removed, but the quorum did not answer without it after ${mr_timeout}s: $zcc_wait_out"
        exit "$ZCC_EXIT_TIMEOUT"
    fi
    zc_log "mon.$1" "the quorum holds without it: [$(mr_state "$1" | awk '{ print $3 }')]"
}

mr_id=
mr_fsid=
mr_timeout=600
while [ $# -gt 0 ]; do
    case $1 in
        --id) zcc_need_value "$1" "${2:-}"; mr_id=$2; shift 2 ;;
        --fsid) zcc_need_value "$1" "${2:-}"; mr_fsid=$2; shift 2 ;;
        --timeout) zcc_need_value "$1" "${2:-}"; mr_timeout=$2; shift 2 ;;
        *) zcc_usage "$mr_usage" ;;
    esac
done
case $mr_id in '' | *[!a-z0-9]*) zcc_usage "$mr_usage" ;; esac
case $mr_timeout in '' | *[!0-9]*) zcc_usage "--timeout must be seconds" ;; esac
[ -n "$mr_fsid" ] || zcc_usage "$mr_usage"
zcc_require_cluster "$mr_fsid"
mr_remove "$mr_id"
