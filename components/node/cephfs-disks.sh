#!/bin/sh
# cephfs-disks.sh apply --node <node> [--wipe-on-create] [--wipe-device <dev>]... --fsid <fsid> <dev>...
#   Makes the listed devices ready for OSD workloads of Ceph cluster <fsid>, checking every device
#   before changing any: two listed paths of one disk (each resolved with readlink -f) are
#   refused, naming both; a device that already carries THIS cluster's bluestore label passes
#   untouched (its OSD activates it); one of another cluster is refused; any other device must
#   pass the shared guards (exists, block device, not mounted, no holders, no partition in use,
#   not a Ceph OSD, not in a VG, no signature unless it may be wiped). A device may be wiped when
#   --wipe-device names it (wipe.<node>), or under --wipe-on-create (wipe: true) while no listed
#   device holds an OSD of this cluster yet (the node's first apply). Signatures are erased only
#   after all devices passed. OSD preparation itself happens in the OSD workload (ceph-osd.sh).
# cephfs-disks.sh release --fsid <fsid> <dev>...
#   The node leaves the storage: refuses while any listed device still carries an OSD of this
#   cluster (the drain purges and zaps it first). Never zaps anything itself.
# Runs on the node (shipped inline after lib.sh); needs no Ceph tools: the bluestore label is
# read from the device's first block, and only its ceph_fsid and whoami fields are kept.
# Output: one line per decision, then `zcloud-device: <declared> <stable>` per device.
# Exit: 0 done, 1 refused or failed, 2 usage.
set -eu
set -f

# Shipped as `sh -c '<lib.sh + partition-guard.sh + this>' <name> <args>`; standalone it sources both.
# shellcheck source-path=SCRIPTDIR source=lib.sh disable=SC1091
command -v zc_log >/dev/null 2>&1 || . "$(dirname -- "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=partition-guard.sh disable=SC1091
command -v zc_guard_no_disk_with_partition >/dev/null 2>&1 || . "$(dirname -- "$0")/partition-guard.sh"

cd_usage() {
    printf 'usage: %s\n' "cephfs-disks.sh apply --node <node> [--wipe-on-create] [--wipe-device <dev>]... --fsid <fsid> <dev>... | release --fsid <fsid> <dev>..." >&2
    exit 2
}

# cd_label_field DEV NAME: the value of NAME in the bluestore label of DEV, or nothing.
# The label's meta map holds strings as a little-endian u32 length and the bytes: the key NAME
# is found with its length in front, the value is read by its own length (the label's crc
# follows the last value, so reading up to a non-name byte would glue crc bytes onto it). Only a
# value of [A-Za-z0-9_-] is printed; the osd_key value never leaves this pipeline.
cd_label_field() {
    dd if="$1" bs=4096 count=1 status=none 2>/dev/null </dev/null | od -An -v -tu1 |
        LC_ALL=C awk -v k="$2" '
            { for (i = 1; i <= NF; i++) b[n++] = $i }
            END {
                kl = length(k)
                for (i = 4; i + kl + 4 <= n; i++) {
                    if (b[i - 4] != kl || b[i - 3] != 0 || b[i - 2] != 0 || b[i - 1] != 0) continue
                    s = ""
                    for (j = 0; j < kl; j++) s = s sprintf("%c", b[i + j])
                    if (s != k) continue
                    p = i + kl
                    vl = b[p] + 256 * b[p + 1] + 65536 * b[p + 2] + 16777216 * b[p + 3]
                    if (vl > 256 || p + 4 + vl > n) exit
                    v = ""
                    for (j = 0; j < vl; j++) v = v sprintf("%c", b[p + 4 + j])
                    if (v ~ /^[A-Za-z0-9_-]+$/) print v
                    exit
                }
            }'
}

# cd_bluestore DEV: true when DEV starts with a bluestore label.
cd_bluestore() {
    [ "$(dd if="$1" bs=22 count=1 status=none 2>/dev/null </dev/null)" = "bluestore block device" ]
}

# cd_holds_ours FSID DEV...: true when a listed device already carries an OSD of cluster FSID.
cd_holds_ours() {
    cd_ho_fsid=$1
    shift
    for cd_ho_dev in "$@"; do
        [ -e "$cd_ho_dev" ] || continue
        cd_ho_canon=$(zc_canonical "$cd_ho_dev")
        if cd_bluestore "$cd_ho_canon" && [ "$(cd_label_field "$cd_ho_canon" ceph_fsid)" = "$cd_ho_fsid" ]; then
            return 0
        fi
    done
    return 1
}

# cd_wipe_licence DECLARED: why DECLARED may be wiped in this run (one phrase), or nothing.
cd_wipe_licence() {
    case " $cd_wipe_devices " in
        *" $1 "*)
            printf 'listed under wipe.%s' "$cd_node"
            return 0
            ;;
    esac
    if [ "$cd_wipe_on_create" = 1 ] && [ "$cd_first_apply" = 1 ]; then
        printf 'wipe: true, no OSD of this cluster on this node yet'
    fi
}

# cd_wipe_hint: what a refusal for signatures tells the user to do.
cd_wipe_hint() {
    if [ "$cd_first_apply" = 1 ]; then
        printf 'set wipe: true or list the device under wipe.%s to allow wiping it' "$cd_node"
    else
        printf 'this node already holds OSDs of this cluster, so only a device listed under wipe.%s may be wiped' "$cd_node"
    fi
}

# cd_check DECLARED FSID WIPE: prints "ours <osd-id>" or "clean"; refuses (returns 1) otherwise.
cd_check() {
    zc_guard_exists "$1" || return 1
    cd_ck_dev=$(zc_canonical "$1")
    zc_guard_block "$1" "$cd_ck_dev" || return 1
    if cd_bluestore "$cd_ck_dev"; then
        cd_ck_fsid=$(cd_label_field "$cd_ck_dev" ceph_fsid)
        if [ "$cd_ck_fsid" != "$2" ]; then
            zc_refuse "$1" "carries an OSD of another Ceph cluster (fsid ${cd_ck_fsid:-unknown}); not touching it"
            return 1
        fi
        printf 'ours %s\n' "$(cd_label_field "$cd_ck_dev" whoami)"
        return 0
    fi
    zc_guard_device "$1" "$3" "" "$(cd_wipe_hint)" || return 1
    echo clean
}

# cd_one_name_per_disk DEV...: refuses when two declared paths resolve (readlink -f) to one
# disk, naming both: one disk would get two OSD workloads. Paths that do not exist are left to
# the guards.
cd_one_name_per_disk() {
    cd_on_seen=
    cd_on_dup=0
    for cd_on_dev in "$@"; do
        [ -e "$cd_on_dev" ] || continue
        cd_on_canon=$(zc_canonical "$cd_on_dev")
        cd_on_other=$(printf '%s' "$cd_on_seen" | awk -v c="$cd_on_canon" '$1 == c { print $2; exit }')
        if [ -n "$cd_on_other" ]; then
            zc_refuse "$cd_on_dev" "is the same disk as $cd_on_other (both resolve to $cd_on_canon); list each disk once"
            cd_on_dup=1
        fi
        cd_on_seen="$cd_on_seen$cd_on_canon $cd_on_dev
"
    done
    [ "$cd_on_dup" = 0 ]
}

cd_action=${1:-}
case $cd_action in apply | release) shift ;; *) cd_usage ;; esac
cd_fsid=
cd_node=
cd_wipe_on_create=0
cd_wipe_devices=
while [ $# -gt 0 ]; do
    case $1 in
        --fsid) [ -n "${2:-}" ] || cd_usage; cd_fsid=$2; shift 2 ;;
        --node) if [ "$cd_action" != apply ] || [ -z "${2:-}" ]; then cd_usage; fi; cd_node=$2; shift 2 ;;
        --wipe-on-create) [ "$cd_action" = apply ] || cd_usage; cd_wipe_on_create=1; shift ;;
        --wipe-device) if [ "$cd_action" != apply ] || [ -z "${2:-}" ]; then cd_usage; fi; cd_wipe_devices="$cd_wipe_devices${cd_wipe_devices:+ }$2"; shift 2 ;;
        --) shift; break ;;
        -*) cd_usage ;;
        *) break ;;
    esac
done
if [ -z "$cd_fsid" ] || [ $# -eq 0 ]; then cd_usage; fi
if [ "$cd_action" = apply ] && [ -z "$cd_node" ]; then cd_usage; fi
for cd_dev in $cd_wipe_devices; do
    case " $* " in *" $cd_dev "*) ;; *) zc_die "$cd_dev" "--wipe-device names a device that is not listed" ;; esac
done
case $cd_fsid in *[!0-9a-f-]*) zc_die "$cd_fsid" "fsid must be a lower-case UUID" ;; esac
for cd_dev in "$@"; do
    case $cd_dev in /dev/*) ;; *) zc_die "$cd_dev" "device paths must be absolute under /dev" ;; esac
done

cd_one_name_per_disk "$@" || exit 1

if [ "$cd_action" = release ]; then
    cd_busy=0
    for cd_dev in "$@"; do
        if [ ! -e "$cd_dev" ]; then
            zc_log "$cd_dev" "gone; nothing to release"
            continue
        fi
        cd_canon=$(zc_canonical "$cd_dev")
        if cd_bluestore "$cd_canon" && [ "$(cd_label_field "$cd_canon" ceph_fsid)" = "$cd_fsid" ]; then
            zc_refuse "$cd_dev" "still holds osd.$(cd_label_field "$cd_canon" whoami) of this cluster; its drain (mark out, wait, purge, zap) has not finished"
            cd_busy=1
            continue
        fi
        zc_log "$cd_dev" "holds no OSD of this cluster; released"
    done
    [ "$cd_busy" = 0 ] || exit 1
    exit 0
fi

# apply: every device checked before anything changes.
zc_guard_no_disk_with_partition "$@" || exit 1
cd_first_apply=1
if cd_holds_ours "$cd_fsid" "$@"; then cd_first_apply=0; fi
cd_plan=
for cd_dev in "$@"; do
    cd_why=$(cd_wipe_licence "$cd_dev")
    cd_state=$(cd_check "$cd_dev" "$cd_fsid" "$([ -n "$cd_why" ] && echo 1 || echo 0)") || exit 1
    # "<dev> ours <osd id>" or "<dev> clean [<why it may be wiped>]"
    [ "$cd_state" != clean ] || cd_state="clean${cd_why:+ $cd_why}"
    cd_plan="$cd_plan$cd_dev $cd_state
"
done
printf '%s' "$cd_plan" | while read -r cd_dev cd_state cd_rest; do
    case $cd_state in
        ours) zc_log "$cd_dev" "already osd.$cd_rest of this cluster; left as it is" ;;
        clean)
            [ -z "$cd_rest" ] || zc_log "$cd_dev" "may be wiped ($cd_rest)"
            zc_wipe_signatures "$cd_dev" "$(zc_canonical "$cd_dev")"
            zc_log "$cd_dev" "ready for a new OSD"
            ;;
    esac
    zc_report_device "$cd_dev"
done
