# shellcheck shell=sh
# shellcheck disable=SC2154 # zi_ settings come from zi_parse in iscsi-lib.sh, shipped before
# iscsi-vg: the shared (sanlock) VG of a storage on its LUN, run on one initiator after its login
# (after lib.sh and iscsi-lib.sh).
#
#   iscsi-vg apply   OPTIONS [--wipe]
#   iscsi-vg release OPTIONS
#
# apply: adopts the storage's VG when the LUN holds it, else creates it exactly once
# (vgcreate --shared, then the driver's two inactive RPC volumes) on a LUN without signatures
# (an empty VG or a filesystem is refused unless --wipe; a VG with logical volumes, or an LVM
# label this host's LVM does not show, is refused even with --wipe). It records the LUN's WWID and the VG's
# UUID on the node; a later run on another LUN, or on a VG with another UUID, is refused.
# The lock daemons run in the driver's node pods, not on the host: creating the VG starts a
# sanlock and lvmlockd of its own for the few commands, and stops them after.
# release: never removes the VG; refuses while it holds volumes.
set -eu

zi_vg_state_file() { echo "$zi_state_dir/$zi_storage.vg"; }

# zi_guard_lun DEV: the LUN is a block device nobody uses; an empty VG or any signature is
# refused unless --wipe. Prints the refusal and returns 1.
zi_guard_lun() {
    zc_guard_exists "$1" || return 1
    zi_gl_canon=$(zc_canonical "$1")
    zc_guard_block "$1" "$zi_gl_canon" || return 1
    zc_guard_not_mounted "$1" "$zi_gl_canon" || return 1
    zc_guard_no_holders "$1" "$zi_gl_canon" || return 1
    zc_guard_partitions_unused "$1" "$zi_gl_canon" || return 1
    zi_guard_no_volumes "$1" "$zi_gl_canon" || return 1
    if zi_gl_vg=$(zi_pv_vg "$zi_gl_canon") && [ -n "$zi_gl_vg" ] && [ "$zi_wipe" != 1 ]; then
        zc_refuse "$1" "is a PV of another VG ($zi_gl_vg); set wipe: true to allow wiping it"
        return 1
    fi
    zc_guard_no_signature "$1" "$zi_gl_canon" "$zi_wipe" || return 1
}

# zi_guard_no_volumes SUBJECT DEV: DEV is no PV of a VG that holds logical volumes (another
# storage's shared VG always does: its RPC volumes), and no LVM PV this host's LVM hides (then
# nobody here can tell what it holds). Whatever --wipe says.
zi_guard_no_volumes() {
    if zi_gv_vg=$(zi_pv_vg "$2"); then
        [ -n "$zi_gv_vg" ] || return 0
        zi_gv_lvs=$(lvs --nohints --shared --readonly --noheadings -o lv_name -- "$zi_gv_vg" </dev/null 2>/dev/null |
            awk 'NF { printf "%s%s", sep, $1; sep = ", " }')
        [ -n "$zi_gv_lvs" ] || return 0
        zc_refuse "$1" "is a PV of VG $zi_gv_vg, which holds logical volumes ($zi_gv_lvs); wipe never wipes a VG with volumes"
        return 1
    fi
    if [ "$(zc_blkid_type "$2")" = LVM2_member ]; then
        zc_refuse "$1" "carries an LVM PV label that LVM on this host does not show (filter, devices file or another machine's system ID); wipe never wipes it"
        return 1
    fi
}

# ---- a short-lived lock stack for creating the VG -------------------------------------------

zi_started_sanlock=0 zi_started_lvmlockd=0

zi_lock_stack_up() {
    if ! sanlock client status >/dev/null 2>&1; then
        sanlock daemon -w 0 -o "$zi_io_timeout" || zc_fail "$zi_subject" "start sanlock"
        zi_started_sanlock=1
    fi
    if ! lvmlockctl --info >/dev/null 2>&1; then
        # host id 1: no other host runs this VG's lockspace before the VG exists.
        lvmlockd --host-id 1 || zc_fail "$zi_subject" "start lvmlockd"
        zi_started_lvmlockd=1
    fi
    zi_lu_left=30
    until lvmlockctl --info >/dev/null 2>&1; do
        [ "$zi_lu_left" -gt 0 ] || zc_fail "$zi_subject" "lvmlockd did not answer"
        sleep 1
        zi_lu_left=$((zi_lu_left - 1))
    done
}

zi_lock_stack_down() {
    vgchange --config "$zi_lockd" --lockstop "$zi_vg" >/dev/null 2>&1 || true
    [ "$zi_started_lvmlockd" = 0 ] || lvmlockctl --quit >/dev/null 2>&1 || true
    [ "$zi_started_sanlock" = 0 ] || sanlock shutdown -f 1 >/dev/null 2>&1 || true
}

# zi_lvm_retry CMD...: runs an LVM command until the lockspace has started (bounded: a sanlock
# lockspace takes a few io timeouts to join).
zi_lvm_retry() {
    zi_lr_left=$((zi_io_timeout * 8))
    until "$@" >/dev/null 2>"$zi_err"; do
        if [ "$zi_lr_left" -le 0 ]; then
            sed 's/^/  lvm: /' "$zi_err" >&2
            return 1
        fi
        sleep 2
        zi_lr_left=$((zi_lr_left - 2))
    done
}

zi_create_vg() {
    zi_cv_dev=$1
    zi_lock_stack_up
    trap 'zi_lock_stack_down; rm -f "$zi_err"' EXIT
    zc_wipe_signatures "$zi_cv_dev" "$(zc_canonical "$zi_cv_dev")"
    if ! vgcreate --config "$zi_lockd" --shared --addtag "zcloud.storage=$zi_storage" -- "$zi_vg" "$zi_cv_dev" >/dev/null 2>"$zi_err"; then
        sed 's/^/  lvm: /' "$zi_err" >&2
        # vgcreate labels the PV before it fails: take the label back, the LUN was clean.
        if [ "$(zi_pv_vg "$zi_cv_dev" || echo none)" = "" ]; then
            pvremove -q -- "$zi_cv_dev" >/dev/null 2>&1 || true
        fi
        zc_fail "$zi_subject" "vgcreate --shared $zi_vg"
    fi
    zc_log "$zi_subject" "VG $zi_vg created (shared, sanlock) on $zi_cv_dev"
    vgchange --config "$zi_lockd" --lockstart "$zi_vg" >/dev/null 2>&1 || true
    for zi_cv_rpc in data:8m lock:512b; do
        zi_cv_role=${zi_cv_rpc%%:*}
        zi_lvm_retry lvcreate --config "$zi_lockd" -an -Zn -L "${zi_cv_rpc#*:}" -n "csl-rpc-$zi_cv_role" \
            --addtag "$zi_rpc_tag=$zi_cv_role" -- "$zi_vg" || zc_fail "$zi_subject" "lvcreate csl-rpc-$zi_cv_role"
        zc_log "$zi_subject" "RPC volume csl-rpc-$zi_cv_role created (inactive)"
    done
    zi_lock_stack_down
    trap 'rm -f "$zi_err"' EXIT
}

# zi_guard_adopt WWID: the VG on the LUN is this storage's: shared with sanlock, the UUID on
# record (when there is one), both RPC volumes present.
zi_guard_adopt() {
    zi_ga_lock=$(zi_vg_field vg_lock_type)
    [ "$zi_ga_lock" = sanlock ] || zc_die "$zi_subject" "VG $zi_vg is not shared with sanlock (lock type '${zi_ga_lock:-none}'); not adopting it"
    zi_ga_uuid=$(zi_vg_field vg_uuid)
    if zi_ga_want=$(zi_state_get "$(zi_vg_state_file)" vg_uuid) && [ -n "$zi_ga_want" ] && [ "$zi_ga_want" != "$zi_ga_uuid" ]; then
        zc_die "$zi_subject" "VG $zi_vg has UUID $zi_ga_uuid, but this storage made $zi_ga_want; not adopting another VG"
    fi
    for zi_ga_role in data lock; do
        lvs --shared --readonly --noheadings -o lv_tags -- "$zi_vg" 2>/dev/null | grep -q "$zi_rpc_tag=$zi_ga_role" ||
            zc_die "$zi_subject" "VG $zi_vg has no RPC volume tagged $zi_rpc_tag=$zi_ga_role"
    done
    zc_log "$zi_subject" "VG $zi_vg adopted (shared, sanlock, uuid $zi_ga_uuid)"
}

# zi_guard_same_lun WWID: a LUN other than the one on record is refused while the recorded VG
# is not on it: the storage's data lives on the recorded LUN.
zi_guard_same_lun() {
    zi_gs_want=$(zi_state_get "$(zi_vg_state_file)" wwid) || return 0
    [ "$zi_gs_want" = "$1" ] && return 0
    zc_die "$zi_subject" "LUN $zi_lun has WWID $1, but VG $zi_vg was made on WWID $zi_gs_want; refusing another LUN"
}

zi_apply() {
    zi_a_wwid=$(zi_wwid) || zc_die "$zi_subject" "LUN $zi_lun of $zi_target is not visible on this node (is it logged in?)"
    zi_a_dev=$(zi_lvm_device "$zi_a_wwid")
    zi_wait_for "$zi_a_dev" || zc_die "$zi_subject" "$zi_a_dev does not exist"
    if [ "$(zi_pv_vg "$zi_a_dev" || true)" = "$zi_vg" ]; then
        zi_guard_adopt
    else
        zi_guard_same_lun "$zi_a_wwid"
        zi_guard_lun "$zi_a_dev" || exit 1
        zi_create_vg "$zi_a_dev"
    fi
    zi_a_uuid=$(zi_vg_field vg_uuid)
    [ -n "$zi_a_uuid" ] || zc_fail "$zi_subject" "LVM shows no UUID for VG $zi_vg"
    mkdir -p "$zi_state_dir"
    printf 'wwid %s\nvg_uuid %s\n' "$zi_a_wwid" "$zi_a_uuid" >"$(zi_vg_state_file)"
    printf 'zcloud-iscsi-vg: %s %s %s\n' "$zi_vg" "$zi_a_uuid" "$zi_a_wwid"
}

zi_release() {
    if [ -z "$(zi_vg_field vg_uuid)" ]; then
        zc_log "$zi_subject" "no VG $zi_vg on this node; nothing to release"
        return 0
    fi
    zi_r_volumes=$(zi_volumes)
    [ -z "$zi_r_volumes" ] || zc_die "$zi_subject" "VG $zi_vg holds volumes ($zi_r_volumes); delete their claims first, the VG is never removed with data"
    zc_log "$zi_subject" "VG $zi_vg kept on the LUN (no volumes; only the driver's RPC volumes)"
}

zi_main "[--wipe]" "$@"
