#!/bin/sh
# lvm-reconcile.sh: make one LVM volume group hold exactly the declared devices, or release it.
#
#   lvm-reconcile.sh apply --vg <vg> --node <node> [--wipe-on-create] [--wipe-device <dev>]...
#                          [--thin-pool <lv> --thin-percent <N>] <dev>...
#   lvm-reconcile.sh release --vg <vg>
#
# apply checks every device with every guard before it changes anything: one refusal and the
# run changes nothing. Devices already in <vg> are ours and pass. PVs of <vg> no longer listed
# are reduced, pvremoved and wiped, unless they hold extents. Re-running changes nothing.
# A device with signatures is wiped only by an explicit licence: --wipe-on-create (wipe: true)
# covers the devices of the run that creates <vg> on this machine, --wipe-device (wipe.<node>)
# the one declared device it names, at any time. A PV of another VG is never wiped.
# The VG is stamped with the machine that made it (LVM tag zcloud.machine=<machine-id>, and
# zcloud.node=<node> for people); a VG stamped by another machine is never adopted or released,
# and an unstamped one (made before stamping) is stamped in place.
# release refuses while any LV (other than an empty thin pool) exists, naming each with what
# holds it (mounted, held by another device, active); a missing VG is done.
# Shipped as `sh -c '<lib.sh + partition-guard.sh + this>' lvm-reconcile <args>`; standalone it
# sources both.
set -eu
set -f
# shellcheck source-path=SCRIPTDIR source=lib.sh disable=SC1091
command -v zc_log >/dev/null 2>&1 || . "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=partition-guard.sh disable=SC1091
command -v zc_guard_no_disk_with_partition >/dev/null 2>&1 || . "$(dirname "$0")/partition-guard.sh"

zl_usage() {
    zc_die lvm-reconcile "$1 (usage: apply --vg <vg> --node <node> [--wipe-on-create] [--wipe-device <dev>]... [--thin-pool <lv> --thin-percent <N>] <dev>... | release --vg <vg>)"
}

# zl_name_ok NAME: an LVM VG/LV name we accept.
zl_name_ok() {
    case $1 in
        '' | -* | *[!A-Za-z0-9+_.-]*) return 1 ;;
    esac
}

# zl_in WORD LIST: WORD is one of the space-separated LIST.
zl_in() {
    case " $2 " in
        *" $1 "*) return 0 ;;
    esac
    return 1
}

zl_parse() {
    zl_action=${1:-}
    [ $# -gt 0 ] && shift
    zl_vg='' zl_node='' zl_wipe_on_create=0 zl_wipe_devices='' zl_thin_pool='' zl_thin_percent='' zl_devices=''
    while [ $# -gt 0 ]; do
        case $1 in
            --vg | --node | --wipe-device | --thin-pool | --thin-percent)
                [ $# -ge 2 ] || zl_usage "$1 needs a value"
                case $1 in
                    --vg) zl_vg=$2 ;;
                    --node) zl_node=$2 ;;
                    --wipe-device) zl_wipe_devices="$zl_wipe_devices${zl_wipe_devices:+ }$2" ;;
                    --thin-pool) zl_thin_pool=$2 ;;
                    --thin-percent) zl_thin_percent=$2 ;;
                esac
                shift 2
                ;;
            --wipe-on-create) zl_wipe_on_create=1; shift ;;
            -*) zl_usage "unknown option $1" ;;
            *[[:space:]]*) zl_usage "device path with blanks: $1" ;;
            /*) zl_devices="$zl_devices${zl_devices:+ }$1"; shift ;;
            *) zl_usage "device path is not absolute: $1" ;;
        esac
    done
    case $zl_action in
        apply | release) ;;
        *) zl_usage "unknown action '$zl_action'" ;;
    esac
    zl_name_ok "$zl_vg" || zl_usage "--vg needs a valid VG name"
    case $zl_action in
        apply)
            [ -n "$zl_devices" ] || zl_usage "apply needs at least one device"
            zl_name_ok "$zl_node" || zl_usage "--node needs the node's name"
            for zl_wd in $zl_wipe_devices; do
                zl_in "$zl_wd" "$zl_devices" || zl_usage "--wipe-device $zl_wd is not one of the devices"
            done
            zl_machine=$(zc_machine_id) || zc_die "VG $zl_vg" "this machine has no /etc/machine-id to stamp its VG with"
            if [ -n "$zl_thin_pool$zl_thin_percent" ]; then
                zl_name_ok "$zl_thin_pool" || zl_usage "--thin-pool needs a valid LV name"
                case $zl_thin_percent in
                    '' | *[!0-9]* | 0*) zl_usage "--thin-percent needs a number from 1 to 100" ;;
                esac
                [ "$zl_thin_percent" -le 100 ] || zl_usage "--thin-percent needs a number from 1 to 100"
            fi
            ;;
        release)
            if [ -n "$zl_devices$zl_node$zl_wipe_devices$zl_thin_pool$zl_thin_percent" ] || [ "$zl_wipe_on_create" = 1 ]; then
                zl_usage "release takes only --vg"
            fi
            ;;
    esac
}

# ---- LVM queries (stdin closed: LVM never reads the script's stdin or waits on a prompt) ----
# Every LVM command that would trust the hints file gets --nohints (see zc_pv_vg): a VG another
# machine made on a shared device must be seen, never missed.

zl_vg_exists() {
    vgs --nohints --noheadings -o vg_name -- "$1" </dev/null >/dev/null 2>&1
}

# zl_vg_tag VG KEY: the value of VG's tag KEY=value (the first one), or nothing.
zl_vg_tag() {
    vgs --nohints --noheadings -o vg_tags -- "$1" </dev/null 2>/dev/null |
        tr ',' '\n' | awk -v k="$2=" 'index($1, k) == 1 { print substr($1, length(k) + 1); exit }'
}

# ---- the machine stamp --------------------------------------------------------------------------

# zl_guard_stamp VG MACHINE: VG is not stamped by another machine. Prints the refusal, returns 1.
zl_guard_stamp() {
    zl_gs_by=$(zl_vg_tag "$1" zcloud.machine)
    [ -z "$zl_gs_by" ] || [ "$zl_gs_by" = "$2" ] && return 0
    zl_gs_node=$(zl_vg_tag "$1" zcloud.node)
    zc_refuse "VG $1" "is stamped by another machine (zcloud.machine=$zl_gs_by${zl_gs_node:+, zcloud.node=$zl_gs_node}; this machine is $2); a node never adopts or releases another node's VG"
    return 1
}

# zl_stamp_tags: the vgcreate/vgchange options that stamp the VG with this machine and node.
zl_stamp_tags() {
    printf -- '--addtag zcloud.machine=%s --addtag zcloud.node=%s' "$zl_machine" "$zl_node"
}

# ---- wipe licences ------------------------------------------------------------------------------

# zl_wipe_licence DECLARED: why DECLARED may be wiped in this run (one phrase), or nothing when it
# may not: listed under wipe.<node>, or wipe: true while this run creates the VG.
zl_wipe_licence() {
    if zl_in "$1" "$zl_wipe_devices"; then
        printf 'listed under wipe.%s' "$zl_node"
    elif [ "$zl_wipe_on_create" = 1 ] && [ "$zl_vg_present" = 0 ]; then
        printf 'wipe: true, VG %s is created by this run' "$zl_vg"
    fi
}

# zl_wipe_hint: what a refusal for signatures tells the user to do.
zl_wipe_hint() {
    if [ "$zl_vg_present" = 1 ]; then
        printf 'VG %s exists on this node, so only a device listed under wipe.%s may be wiped' "$zl_vg" "$zl_node"
    else
        printf 'set wipe: true or list the device under wipe.%s to allow wiping it' "$zl_node"
    fi
}

# zl_vg_pvs VG: "pv_name|pv_used_bytes" lines for the PVs of VG.
zl_vg_pvs() {
    zl_vp_out=$(pvs --nohints --noheadings --separator '|' --units b --nosuffix -o pv_name,vg_name,pv_used </dev/null) ||
        zc_fail "VG $1" "pvs"
    printf '%s\n' "$zl_vp_out" | awk -F'|' -v vg="$1" '{ gsub(/^ +| +$/, "", $1); gsub(/ /, "", $2) } $2 == vg { print $1 "|" $3 + 0 }'
}

# zl_vg_pv_paths VG: sets zl_pv_lines (zl_vg_pvs output), zl_pv_paths (the PV paths of VG) and
# zl_pv_missing (a PV LVM cannot find, by the name LVM prints for it; empty when all are there).
zl_vg_pv_paths() {
    zl_pv_lines=$(zl_vg_pvs "$1") || exit 1
    zl_pv_paths='' zl_pv_missing=''
    for zl_pp_line in $zl_pv_lines; do
        zl_pp_pv=${zl_pp_line%%|*}
        case $zl_pp_pv in
            /*) zl_pv_paths="$zl_pv_paths${zl_pv_paths:+ }$zl_pp_pv" ;;
            *) zl_pv_missing=$zl_pp_pv ;;
        esac
    done
}

# zl_vg_lvs VG: "lv_name|segtype|pool_lv" lines for the visible LVs of VG, one per LV (segtype
# is a segment field: lvs prints a row per segment, e.g. for an LV spanning two PVs).
zl_vg_lvs() {
    zl_vl_out=$(lvs --nohints --noheadings --separator '|' -o lv_name,segtype,pool_lv -- "$1" </dev/null) ||
        zc_fail "VG $1" "lvs"
    printf '%s\n' "$zl_vl_out" | awk -F'|' 'NF { gsub(/ /, ""); if (!seen[$1]++) print }'
}

# zl_lv_use VG LV: what holds LV right now, for a refusal ("mounted at /mnt/x", "held by dm-7",
# "active"), or nothing for an inactive LV. Read from sysfs (the device-mapper device named
# <vg>-<lv>, dashes doubled), not from LVM's activation query, which needs the dm driver.
zl_lv_use() {
    zl_lu_name=$(printf '%s-%s' "$(printf '%s' "$1" | sed 's/-/--/g')" "$(printf '%s' "$2" | sed 's/-/--/g')")
    for zl_lu_dm in $(zc_ls /sys/block); do
        case $zl_lu_dm in dm-*) ;; *) continue ;; esac
        [ "$(cat "/sys/block/$zl_lu_dm/dm/name" 2>/dev/null)" = "$zl_lu_name" ] || continue
        zl_lu_num=$(cat "/sys/block/$zl_lu_dm/dev")
        zl_lu_at=$(awk -v n="$zl_lu_num" '$3 == n { print $5; exit }' /proc/self/mountinfo)
        if [ -n "$zl_lu_at" ]; then
            printf 'mounted at %s' "$zl_lu_at"
            return 0
        fi
        zl_lu_held=$(zc_ls "/sys/block/$zl_lu_dm/holders" | tr '\n' ' ')
        if [ -n "$zl_lu_held" ]; then
            printf 'held by %s' "${zl_lu_held% }"
            return 0
        fi
        printf 'active'
        return 0
    done
}

# ---- apply --------------------------------------------------------------------------------------

# zl_check_apply: every guard on every device, then the PVs to remove; sets zl_new (canonical
# paths to add), zl_keep (declared paths already ours), zl_remove (PVs to take out).
zl_check_apply() {
    zl_failed=0 zl_seen='' zl_new='' zl_keep='' zl_remove='' zl_ours='' zl_licences='' zl_unstamped=0
    zl_vg_present=0
    if zl_vg_exists "$zl_vg"; then
        zl_vg_present=1
        zl_guard_stamp "$zl_vg" "$zl_machine" || return 1
        [ -n "$(zl_vg_tag "$zl_vg" zcloud.machine)" ] || zl_unstamped=1
        zl_vg_pv_paths "$zl_vg"
        for zl_pv in $zl_pv_paths; do
            zl_ours="$zl_ours${zl_ours:+ }$(zc_canonical "$zl_pv")"
        done
        if [ -n "$zl_pv_missing" ]; then
            zc_refuse "VG $zl_vg" "has a missing PV ($zl_pv_missing); repair it by hand"
            zl_failed=1
        fi
    fi
    zl_hint=$(zl_wipe_hint)
    for zl_dev in $zl_devices; do
        zl_why=$(zl_wipe_licence "$zl_dev")
        if ! zc_guard_device "$zl_dev" "$([ -n "$zl_why" ] && echo 1 || echo 0)" "$zl_vg" "$zl_hint"; then
            zl_failed=1
            continue
        fi
        zl_canon=$(zc_canonical "$zl_dev")
        if zl_in "$zl_canon" "$zl_seen"; then
            zc_refuse "$zl_dev" "listed twice (as $zl_canon)"
            zl_failed=1
            continue
        fi
        zl_seen="$zl_seen${zl_seen:+ }$zl_canon"
        if zl_in "$zl_canon" "$zl_ours"; then
            zl_keep="$zl_keep${zl_keep:+ }$zl_dev"
        else
            zl_new="$zl_new${zl_new:+ }$zl_canon"
            [ -z "$zl_why" ] || zl_licences="$zl_licences$zl_dev|$zl_why
"
        fi
    done
    # shellcheck disable=SC2086 # the declared paths, one word each
    zc_guard_no_disk_with_partition $zl_devices || zl_failed=1
    if [ "$zl_vg_present" = 1 ]; then
        for zl_line in $zl_pv_lines; do
            case $zl_line in /*) ;; *) continue ;; esac
            zl_pv=$(zc_canonical "${zl_line%%|*}")
            zl_used=${zl_line##*|}
            zl_in "$zl_pv" "$zl_seen" && continue
            if [ "$zl_used" != 0 ]; then
                zc_refuse "$zl_pv" "is no longer listed but holds allocated extents of VG $zl_vg ($zl_used bytes); move or remove its LVs first"
                zl_failed=1
                continue
            fi
            zl_remove="$zl_remove${zl_remove:+ }$zl_pv"
        done
    fi
    if [ -n "$zl_thin_pool" ] && [ "$zl_vg_present" = 1 ]; then
        zl_lvlist=$(zl_vg_lvs "$zl_vg") || exit 1
        for zl_line in $zl_lvlist; do
            zl_lv=${zl_line%%|*}
            zl_seg=${zl_line#*|}
            zl_seg=${zl_seg%%|*}
            if [ "$zl_lv" = "$zl_thin_pool" ] && [ "$zl_seg" != thin-pool ]; then
                zc_refuse "VG $zl_vg" "LV $zl_thin_pool exists and is not a thin pool ($zl_seg)"
                zl_failed=1
            fi
        done
    fi
    [ "$zl_failed" = 0 ]
}

zl_apply() {
    zl_check_apply || exit 1
    for zl_dev in $zl_devices; do
        zc_report_device "$zl_dev"
    done
    zl_changed=0
    for zl_dev in $zl_keep; do
        zc_log "$zl_dev" "in VG $zl_vg, no change"
    done
    if [ "$zl_unstamped" = 1 ]; then
        # shellcheck disable=SC2046 # the tag options, two words each
        vgchange --nohints --quiet $(zl_stamp_tags) -- "$zl_vg" </dev/null >/dev/null || zc_fail "VG $zl_vg" "vgchange --addtag"
        zc_log "VG $zl_vg" "had no machine stamp (made before stamping); stamped zcloud.machine=$zl_machine zcloud.node=$zl_node, metadata only"
        zl_changed=1
    fi
    printf '%s' "$zl_licences" | while IFS='|' read -r zl_dev zl_why; do
        zc_log "$zl_dev" "may be wiped ($zl_why)"
    done
    if [ -n "$zl_new" ]; then
        for zl_dev in $zl_new; do
            zc_wipe_signatures "$zl_dev" "$zl_dev"
        done
        # vgcreate/vgextend initialise the new PVs themselves: one LVM transaction, no stray PVs.
        if [ "$zl_vg_present" = 1 ]; then
            # shellcheck disable=SC2086 # device list, one word each
            vgextend --quiet -- "$zl_vg" $zl_new </dev/null || zc_fail "VG $zl_vg" "vgextend $zl_new"
            zc_log "VG $zl_vg" "extended with $zl_new"
        else
            # shellcheck disable=SC2086 # device list, one word each
            # shellcheck disable=SC2046 # the tag options, two words each
            vgcreate --quiet $(zl_stamp_tags) -- "$zl_vg" $zl_new </dev/null || zc_fail "VG $zl_vg" "vgcreate $zl_new"
            zc_log "VG $zl_vg" "created with $zl_new"
        fi
        zl_changed=1
    fi
    for zl_pv in $zl_remove; do
        vgreduce --quiet -- "$zl_vg" "$zl_pv" </dev/null || zc_fail "$zl_pv" "vgreduce $zl_vg"
        pvremove --quiet -- "$zl_pv" </dev/null || zc_fail "$zl_pv" "pvremove"
        wipefs --all --quiet -- "$zl_pv" </dev/null || zc_fail "$zl_pv" "wipefs --all"
        zc_log "$zl_pv" "no longer listed: removed from VG $zl_vg, PV removed, wiped"
        zl_changed=1
    done
    if [ -n "$zl_thin_pool" ]; then
        zl_apply_thin
    fi
    if [ "$zl_changed" = 0 ]; then
        zc_log "VG $zl_vg" "no change"
    fi
}

zl_apply_thin() {
    if lvs --nohints -- "$zl_vg/$zl_thin_pool" </dev/null >/dev/null 2>&1; then
        zc_log "VG $zl_vg" "thin pool $zl_thin_pool present, no change"
        return 0
    fi
    lvcreate --nohints --quiet --yes -l "$zl_thin_percent%VG" -T -- "$zl_vg/$zl_thin_pool" </dev/null ||
        zc_fail "VG $zl_vg" "lvcreate thin pool $zl_thin_pool"
    zc_log "VG $zl_vg" "thin pool $zl_thin_pool created with $zl_thin_percent% of the VG"
    zl_changed=1
}

# ---- release ------------------------------------------------------------------------------------

zl_release() {
    if ! zl_vg_exists "$zl_vg"; then
        zc_log "VG $zl_vg" "does not exist, nothing to release"
        return 0
    fi
    zl_machine=$(zc_machine_id) || zc_die "VG $zl_vg" "this machine has no /etc/machine-id to check the VG's stamp with"
    zl_guard_stamp "$zl_vg" "$zl_machine" || exit 1
    zl_lvs=$(zl_vg_lvs "$zl_vg")
    zl_pools='' zl_blocking=''
    for zl_line in $zl_lvs; do
        zl_lv=${zl_line%%|*}
        zl_seg=${zl_line#*|}
        zl_seg=${zl_seg%%|*}
        if [ "$zl_seg" = thin-pool ]; then
            # A pool in use is not listed: the thin LVs in it are, and they block.
            zl_pool_used "$zl_lv" "$zl_lvs" || zl_pools="$zl_pools${zl_pools:+ }$zl_lv"
            continue
        fi
        zl_use=$(zl_lv_use "$zl_vg" "$zl_lv")
        zl_blocking="$zl_blocking${zl_blocking:+, }$zl_lv${zl_use:+: $zl_use}"
    done
    if [ -n "$zl_blocking" ]; then
        zc_die "VG $zl_vg" "holds logical volumes ($zl_blocking); remove them first"
    fi
    zl_vg_pv_paths "$zl_vg"
    if [ -n "$zl_pv_missing" ]; then
        zc_die "VG $zl_vg" "has a missing PV ($zl_pv_missing); repair it by hand"
    fi
    for zl_lv in $zl_pools; do
        lvremove --nohints --quiet --yes -- "$zl_vg/$zl_lv" </dev/null || zc_fail "VG $zl_vg" "lvremove $zl_lv"
        zc_log "VG $zl_vg" "empty thin pool $zl_lv removed"
    done
    vgremove --quiet -- "$zl_vg" </dev/null || zc_fail "VG $zl_vg" "vgremove"
    zc_log "VG $zl_vg" "removed"
    for zl_pv in $zl_pv_paths; do
        pvremove --quiet -- "$zl_pv" </dev/null || zc_fail "$zl_pv" "pvremove"
        wipefs --all --quiet -- "$zl_pv" </dev/null || zc_fail "$zl_pv" "wipefs --all"
        zc_log "$zl_pv" "PV removed, wiped"
    done
}

# zl_pool_used POOL LVS: some LV of LVS ("name|segtype|pool" lines) lives in thin pool POOL.
zl_pool_used() {
    for zl_pu in $2; do
        [ "${zl_pu##*|}" = "$1" ] && return 0
    done
    return 1
}

zl_parse "$@"
case $zl_action in
    apply) zl_apply ;;
    release) zl_release ;;
esac
