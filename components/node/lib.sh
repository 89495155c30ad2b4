# shellcheck shell=sh
# zcloud node library: logging and device guards (POSIX sh).
#
# Shipped concatenated before every node script, so it only defines functions.
# POSIX sh has no `local`: each function keeps its scratch variables under its own prefix.
# Every guard takes the declared path as the subject of its messages, prints one refusal line
# on stderr when the device fails it and returns 1; it never changes anything.

# ---- output ---------------------------------------------------------------------------------

# zc_log SUBJECT DECISION: one decision on stdout.
zc_log() {
    printf 'zcloud: %s: %s\n' "$1" "$2"
}

# zc_refuse SUBJECT REASON: one refusal on stderr (the caller exits non-zero).
zc_refuse() {
    printf 'zcloud: %s: refused: %s\n' "$1" "$2" >&2
}

# zc_die SUBJECT REASON: refuse and stop.
zc_die() {
    zc_refuse "$1" "$2"
    exit 1
}

# zc_fail SUBJECT WHAT: a command failed while changing things; stop.
zc_fail() {
    printf 'zcloud: %s: failed: %s\n' "$1" "$2" >&2
    exit 1
}

# zc_fact_device DECLARED STABLE: the machine-readable fact the program exposes as an output.
zc_fact_device() {
    printf 'zcloud-device: %s %s\n' "$1" "$2"
}

# ---- device facts -----------------------------------------------------------------------------

# zc_canonical PATH: the path with every symlink resolved.
zc_canonical() {
    readlink -f -- "$1"
}

# zc_devnum DEV: "major:minor" of a block device.
zc_devnum() {
    zc_dn_hex=$(stat -L -c '%t %T' -- "$1") || return 1
    # shellcheck disable=SC2086 # two words on purpose
    set -- $zc_dn_hex
    printf '%d:%d\n' "0x$1" "0x$2"
}

# zc_ls DIR: the names in DIR, sorted, one per line (nothing if DIR is missing). Names under
# /sys and /dev/disk have no blanks. No shell glob: callers may run with noglob (set -f).
zc_ls() {
    [ -d "$1" ] || return 0
    find "$1" -mindepth 1 -maxdepth 1 | sed 's|.*/||' | LC_ALL=C sort
}

# zc_sysfs DEV: the device's directory under /sys (follows /sys/dev/block/M:m).
zc_sysfs() {
    zc_sf_num=$(zc_devnum "$1") || return 1
    readlink -f -- "/sys/dev/block/$zc_sf_num"
}

# zc_partitions DEV: the /dev paths of the device's partitions, one per line.
zc_partitions() {
    zc_pt_sys=$(zc_sysfs "$1") || return 0
    for zc_pt_name in $(zc_ls "$zc_pt_sys"); do
        [ -f "$zc_pt_sys/$zc_pt_name/partition" ] || continue
        printf '/dev/%s\n' "$zc_pt_name"
    done
}

# zc_mountpoint DEV: the first mount point of DEV (by device number, then by path), or nothing.
zc_mountpoint() {
    zc_mp_num=$(zc_devnum "$1") || return 0
    zc_mp_at=$(awk -v n="$zc_mp_num" '$3 == n { print $5; exit }' /proc/self/mountinfo)
    if [ -z "$zc_mp_at" ]; then
        zc_mp_at=$(awk -v d="$1" '$1 == d { print $2; exit }' /proc/mounts)
    fi
    printf '%s' "$zc_mp_at"
}

# zc_is_swap DEV: true when DEV is an active swap device. Compared by device number, so any name
# of the device (kernel name, /dev/disk/by-id link, /dev/mapper name) matches what /proc/swaps
# lists; swap files (not block devices) never match.
zc_is_swap() {
    [ -r /proc/swaps ] || return 1
    zc_sw_num=$(zc_devnum "$1") || return 1
    # /proc/swaps escapes blanks in names as \040; such a name is a file, never one of our devices.
    zc_sw_hit=$(awk 'NR > 1 { print $1 }' /proc/swaps | while IFS= read -r zc_sw_dev; do
        if [ -b "$zc_sw_dev" ] && [ "$(zc_devnum "$zc_sw_dev" || true)" = "$zc_sw_num" ]; then
            printf '%s\n' "$zc_sw_dev"
        fi
    done)
    [ -n "$zc_sw_hit" ]
}

# zc_block_driver DEV: the driver name /proc/devices gives the block major number of DEV's whole
# disk (loop, zram, device-mapper, md, sd, virtblk, ...). A partition counts as its disk: a
# partition of a loop device has the generic major blkext.
zc_block_driver() {
    zc_bd_sys=$(zc_sysfs "$1") || return 1
    [ -f "$zc_bd_sys/partition" ] && zc_bd_sys=${zc_bd_sys%/*}
    zc_bd_num=$(cat "$zc_bd_sys/dev") || return 1
    awk -v m="${zc_bd_num%%:*}" '/^Block devices:/ { b = 1; next } b && $1 == m { print $2; exit }' /proc/devices
}

# zc_dm_uuid DEV: the device-mapper UUID of DEV (LVM-..., mpath-..., CRYPT-...), or nothing.
zc_dm_uuid() {
    zc_du_sys=$(zc_sysfs "$1") || return 0
    cat "$zc_du_sys/dm/uuid" 2>/dev/null || true
}

# zc_dm_name DEV: the device-mapper name of DEV (vg-lv for an LVM volume), or nothing.
zc_dm_name() {
    zc_dn_sys=$(zc_sysfs "$1") || return 0
    cat "$zc_dn_sys/dm/name" 2>/dev/null || true
}

# zc_device_class DRIVER DM_UUID: the class of a block device from its driver and device-mapper
# UUID: lvm-lv, multipath, dm (another device-mapper target), zram, loop, md or disk.
# Pure: decides on its arguments only.
zc_device_class() {
    case $1 in
        device-mapper)
            case $2 in
                LVM-*) echo lvm-lv ;;
                mpath-*) echo multipath ;;
                *) echo dm ;;
            esac
            ;;
        zram) echo zram ;;
        loop) echo loop ;;
        md | mdp) echo md ;;
        *) echo disk ;;
    esac
}

# zc_loop_allowed: loop devices are accepted only when the node's environment says so
# (ZCLOUD_ALLOW_LOOP=1, set by test sshd configs; no stack config key or script argument sets it).
zc_loop_allowed() {
    [ "${ZCLOUD_ALLOW_LOOP:-}" = 1 ]
}

# zc_holders DEV: names of the devices stacked on DEV (dm, md, ...), space separated.
zc_holders() {
    zc_hd_sys=$(zc_sysfs "$1") || return 0
    zc_hd_out=''
    for zc_hd in $(zc_ls "$zc_hd_sys/holders"); do
        zc_hd_out="$zc_hd_out${zc_hd_out:+ }$zc_hd"
    done
    printf '%s' "$zc_hd_out"
}

# zc_signatures DEV: the signature types on DEV (filesystem, RAID, LVM, partition table),
# comma separated, or nothing.
# Fails when the device cannot be read: unreadable never counts as clean.
zc_signatures() {
    zc_sg_out=$(wipefs --noheadings --output TYPE -- "$1" </dev/null) || return 1
    printf '%s\n' "$zc_sg_out" | awk 'NF { printf "%s%s", sep, $1; sep = "," }'
}

# zc_blkid_type DEV: the low-level probe's TYPE of DEV, or nothing.
zc_blkid_type() {
    blkid -p -o value -s TYPE -- "$1" </dev/null 2>/dev/null || true
}

# zc_pv_vg DEV: prints the VG of PV DEV (empty line for a PV in no VG); fails when LVM does not
# show DEV as a PV. --nohints: LVM's hints file lists the PVs this host knew of, so a PV label
# another machine wrote on a shared LUN since would go unseen; every query here reads the devices.
zc_pv_vg() {
    zc_pv_out=$(pvs --nohints --noheadings -o vg_name -- "$1" </dev/null 2>/dev/null) || return 1
    printf '%s\n' "$zc_pv_out" | awk 'NF { print $1; exit }'
}

# zc_stable_name DEV: a /dev/disk/by-id link to canonical DEV, wwn- first, then the first other
# name in sorted order (lvm-pv-uuid- links change with the PV and are not stable). Fails if none.
zc_stable_name() {
    zc_sn_best=''
    for zc_sn_name in $(zc_ls /dev/disk/by-id); do
        zc_sn_link=/dev/disk/by-id/$zc_sn_name
        [ -L "$zc_sn_link" ] || continue
        case ${zc_sn_link##*/} in
            lvm-pv-uuid-*) continue ;;
        esac
        [ "$(readlink -f -- "$zc_sn_link")" = "$1" ] || continue
        case ${zc_sn_link##*/} in
            wwn-*)
                printf '%s\n' "$zc_sn_link"
                return 0
                ;;
        esac
        [ -n "$zc_sn_best" ] || zc_sn_best=$zc_sn_link
    done
    [ -n "$zc_sn_best" ] || return 1
    printf '%s\n' "$zc_sn_best"
}

# zc_report_device DECLARED: prints the zcloud-device fact with the stable name, and says so
# when the device has no /dev/disk/by-id name (then the canonical path stands in).
zc_report_device() {
    zc_rd_canon=$(zc_canonical "$1")
    if zc_rd_stable=$(zc_stable_name "$zc_rd_canon"); then
        zc_fact_device "$1" "$zc_rd_stable"
    else
        zc_log "$1" "no /dev/disk/by-id name, using $zc_rd_canon"
        zc_fact_device "$1" "$zc_rd_canon"
    fi
}

# zc_machine_id: this machine's identity (/etc/machine-id, 32 hex digits), the stamp a node puts
# on the local VGs it makes; fails when the machine has none.
zc_machine_id() {
    zc_mi=$(cat /etc/machine-id 2>/dev/null) || return 1
    case $zc_mi in
        '' | *[!0-9a-f]*) return 1 ;;
    esac
    [ "${#zc_mi}" = 32 ] || return 1
    printf '%s\n' "$zc_mi"
}

# ---- guards: one decision each; SUBJECT is the declared path, DEV the canonical one ----------

# zc_guard_exists SUBJECT
zc_guard_exists() {
    if [ ! -e "$1" ]; then
        zc_refuse "$1" "does not exist"
        return 1
    fi
}

# zc_guard_block SUBJECT DEV
zc_guard_block() {
    if [ ! -b "$2" ]; then
        zc_refuse "$1" "$2 is not a block device"
        return 1
    fi
}

# zc_guard_device_class SUBJECT DEV: DEV is a disk-like device we may take: not an LVM logical
# volume, not zram, not active swap, not a loop device unless zc_loop_allowed. md RAID,
# multipath and other device-mapper devices pass (iSCSI LUNs come through multipath).
zc_guard_device_class() {
    if zc_is_swap "$2"; then
        zc_refuse "$1" "$2 is active swap (listed in /proc/swaps)"
        return 1
    fi
    case $(zc_device_class "$(zc_block_driver "$2")" "$(zc_dm_uuid "$2")") in
        lvm-lv)
            zc_refuse "$1" "$2 is an LVM logical volume ($(zc_dm_name "$2")); declare the disks under it, not a volume"
            return 1
            ;;
        zram)
            zc_refuse "$1" "$2 is a zram device (compressed RAM, empty after a reboot)"
            return 1
            ;;
        loop)
            zc_loop_allowed && return 0
            zc_refuse "$1" "$2 is a loop device (a file, not a disk); loop devices are taken only with ZCLOUD_ALLOW_LOOP=1 in the node's environment"
            return 1
            ;;
    esac
}

# zc_guard_not_mounted SUBJECT DEV: neither DEV nor a partition of it is mounted or swap.
zc_guard_not_mounted() {
    # shellcheck disable=SC2046 # device paths have no blanks; one word per line
    for zc_gm_dev in "$2" $(zc_partitions "$2"); do
        zc_gm_at=$(zc_mountpoint "$zc_gm_dev")
        if [ -n "$zc_gm_at" ]; then
            zc_refuse "$1" "$zc_gm_dev is mounted at $zc_gm_at"
            return 1
        fi
        if zc_is_swap "$zc_gm_dev"; then
            zc_refuse "$1" "$zc_gm_dev is in use as swap"
            return 1
        fi
    done
}

# zc_guard_no_holders SUBJECT DEV: nothing (device-mapper, md, ...) is stacked on DEV.
zc_guard_no_holders() {
    zc_gh=$(zc_holders "$2")
    if [ -n "$zc_gh" ]; then
        zc_refuse "$1" "$2 is held by $zc_gh"
        return 1
    fi
}

# zc_guard_partitions_unused SUBJECT DEV: no partition of DEV is held or is an LVM PV.
zc_guard_partitions_unused() {
    for zc_gp in $(zc_partitions "$2"); do
        zc_gp_h=$(zc_holders "$zc_gp")
        if [ -n "$zc_gp_h" ]; then
            zc_refuse "$1" "partition $zc_gp is held by $zc_gp_h"
            return 1
        fi
        if zc_gp_vg=$(zc_pv_vg "$zc_gp"); then
            zc_refuse "$1" "partition $zc_gp is an LVM PV${zc_gp_vg:+ of VG $zc_gp_vg}"
            return 1
        fi
    done
}

# zc_guard_not_ceph SUBJECT DEV: DEV carries no Ceph OSD (bluestore label, or a ceph-volume VG).
zc_guard_not_ceph() {
    case $(zc_blkid_type "$2") in
        ceph_bluestore)
            zc_refuse "$1" "is a Ceph OSD (bluestore label)"
            return 1
            ;;
    esac
    case ,$(zc_signatures "$2" || true), in
        *,ceph_bluestore,*)
            zc_refuse "$1" "is a Ceph OSD (bluestore label)"
            return 1
            ;;
    esac
    if zc_gc_vg=$(zc_pv_vg "$2"); then
        case $zc_gc_vg in
            ceph-*)
                zc_refuse "$1" "is a Ceph OSD (PV of VG $zc_gc_vg)"
                return 1
                ;;
        esac
    fi
}

# zc_guard_not_foreign_pv SUBJECT DEV [OWN_VG]: DEV is not a PV of a VG other than OWN_VG, and
# not an LVM PV that this host's LVM hides (filter or devices file: we cannot tell whose it is).
zc_guard_not_foreign_pv() {
    if zc_gf_vg=$(zc_pv_vg "$2"); then
        if [ -n "$zc_gf_vg" ] && [ "$zc_gf_vg" != "${3:-}" ]; then
            zc_refuse "$1" "is a PV of another VG ($zc_gf_vg)"
            return 1
        fi
        return 0
    fi
    if [ "$(zc_blkid_type "$2")" = LVM2_member ]; then
        zc_refuse "$1" "carries an LVM PV label that LVM on this host does not show (filter or devices file)"
        return 1
    fi
}

# zc_guard_no_signature SUBJECT DEV WIPE [HINT]: no signature on DEV, unless WIPE is 1. HINT says
# how the device may be wiped (the caller knows which wipe setting applies to it).
zc_guard_no_signature() {
    if ! zc_gs=$(zc_signatures "$2"); then
        zc_refuse "$1" "cannot read the signatures of $2"
        return 1
    fi
    if [ -n "$zc_gs" ] && [ "$3" != 1 ]; then
        zc_refuse "$1" "carries signatures ($zc_gs); ${4:-set wipe: true to allow wiping them}"
        return 1
    fi
}

# zc_guard_device SUBJECT WIPE [OWN_VG [HINT]]: every guard, in order, stopping at the first
# refusal. Sets zc_canon to the canonical path. A PV of OWN_VG is ours: it passes after exists,
# block and device class. A PV of any other VG is refused whatever WIPE says.
zc_guard_device() {
    zc_canon=
    zc_guard_exists "$1" || return 1
    zc_canon=$(zc_canonical "$1")
    zc_guard_block "$1" "$zc_canon" || return 1
    zc_guard_device_class "$1" "$zc_canon" || return 1
    if [ -n "${3:-}" ] && [ "$(zc_pv_vg "$zc_canon" || true)" = "$3" ]; then
        return 0
    fi
    zc_guard_not_mounted "$1" "$zc_canon" || return 1
    zc_guard_no_holders "$1" "$zc_canon" || return 1
    zc_guard_partitions_unused "$1" "$zc_canon" || return 1
    zc_guard_not_ceph "$1" "$zc_canon" || return 1
    zc_guard_not_foreign_pv "$1" "$zc_canon" "${3:-}" || return 1
    zc_guard_no_signature "$1" "$zc_canon" "$2" "${4:-}" || return 1
}

# zc_wipe_signatures SUBJECT DEV: erase every signature on DEV (only after the guards passed).
zc_wipe_signatures() {
    zc_ws=$(zc_signatures "$2") || zc_fail "$1" "cannot read the signatures of $2"
    [ -n "$zc_ws" ] || return 0
    wipefs --all --quiet -- "$2" </dev/null || zc_fail "$1" "wipefs --all $2"
    zc_log "$1" "wiped signatures ($zc_ws)"
}
