# shellcheck shell=sh
# shellcheck disable=SC2154 # zi_ settings come from zi_parse in iscsi-lib.sh, shipped before
# iscsi-initiator: one node's iSCSI login to a storage's LUN (run after lib.sh and iscsi-lib.sh).
#
#   iscsi-initiator apply   OPTIONS   (stdin: the CHAP password, one line, with --chap-user)
#   iscsi-initiator release OPTIONS
#
# apply: a node record per portal (iscsiadm -o new), the CHAP lines written into it from stdin
# (atomically, mode 0600: iscsiadm takes no password but on its command line), login on every
# portal, a multipath map when there are several, and a bounded wait for the device. A changed
# record logs in again (path by path). A failed login puts every record back as it was.
# A changed target or LUN is refused while the VG on the current LUN holds volumes.
# release: refuses while an LV is active on this node; then lock-stop, logout, records deleted.
set -eu

zi_state_file() { echo "$zi_state_dir/$zi_storage.target"; }

# ---- node records ---------------------------------------------------------------------------

# zi_record_file PORTAL: the node record of (target, portal), whatever its tpgt and interface.
# open-iscsi names it `<address>,<port>[,<tpgt>]`: a file, or a directory of interface files.
zi_record_file() {
    zi_rf_name="${1%:*},${1##*:}"
    for zi_rf in "$(zi_record_dir)/$zi_target/$zi_rf_name",*/* "$(zi_record_dir)/$zi_target/$zi_rf_name"; do
        if [ -f "$zi_rf" ]; then
            echo "$zi_rf"
            return 0
        fi
    done
    return 1
}

# zi_write_record FILE: FILE with its CHAP lines (method, username, password) replaced, or
# removed without CHAP, written to a 0600 file next to it and renamed over it. printf is a shell
# builtin: no command's argv ever carries the password.
zi_write_record() {
    zi_wr_tmp=$(mktemp "$1.zcloud.XXXXXX")
    chmod 600 "$zi_wr_tmp"
    {
        zi_record_lines other "$1" || zc_fail "$zi_subject" "cannot read $1"
        if [ "$zi_chap" = 1 ]; then
            printf 'node.session.auth.authmethod = CHAP\n'
            printf 'node.session.auth.username = %s\n' "$zi_chap_user"
            printf 'node.session.auth.password = %s\n' "$zi_chap_password"
        fi
    } >"$zi_wr_tmp"
    mv -f "$zi_wr_tmp" "$1"
}

# zi_record_lines chap|other FILE: the record's CHAP lines (method, username, password), or
# every other line. Fails when FILE cannot be read.
zi_record_lines() {
    awk -v want="$1" '{ chap = $0 ~ /^node\.session\.auth\.(authmethod|username|password) =/ } (want == "chap") == chap' "$2"
}

# zi_restore_record FILE CONTENT: puts a record back as it was before this run.
zi_restore_record() {
    zi_rr_tmp=$(mktemp "$1.zcloud.XXXXXX")
    chmod 600 "$zi_rr_tmp"
    printf '%s\n' "$2" >"$zi_rr_tmp"
    mv -f "$zi_rr_tmp" "$1"
}

zi_session_exists() {
    iscsiadm -m session 2>/dev/null | awk -v p="$1" -v t="$zi_target" '$3 ~ "^" p "," && $4 == t { found = 1 } END { exit !found }'
}

zi_login() {
    iscsiadm -m node -T "$zi_target" -p "$1" --login >/dev/null 2>"$zi_err" && return 0
    sed 's/^/  iscsiadm: /' "$zi_err" >&2
    return 1
}

zi_logout() {
    if zi_session_exists "$1"; then
        iscsiadm -m node -T "$zi_target" -p "$1" --logout >/dev/null || zc_fail "$zi_subject" "logout from $1"
        zc_log "$zi_subject" "logged out of $1"
    fi
}

# ---- the device -----------------------------------------------------------------------------

zi_ensure_multipath() {
    if ! multipathd show daemon >/dev/null 2>&1; then
        systemctl start multipathd.service 2>/dev/null || multipathd || zc_fail "$zi_subject" "start multipathd"
    fi
}

# zi_device_ready: waits for every path, then the multipath map; prints the device facts.
zi_device_ready() {
    for zi_dr_p in $zi_portals; do
        zi_wait_for "$(zi_by_path "$zi_dr_p")" || zc_fail "$zi_subject" "no device for LUN $zi_lun through $zi_dr_p after ${zi_wait}s"
    done
    zi_dr_wwid=$(zi_wwid) || zc_fail "$zi_subject" "cannot read the WWID of LUN $zi_lun"
    if [ "$(zi_portal_count)" -gt 1 ]; then
        zi_ensure_multipath
        for zi_dr_p in $zi_portals; do
            multipath -a "$(zc_canonical "$(zi_by_path "$zi_dr_p")")" >/dev/null 2>&1 || true
        done
        multipath -r >/dev/null 2>&1 || true
        zi_wait_for "$(zi_lvm_device "$zi_dr_wwid")" || zc_fail "$zi_subject" "no multipath map for WWID $zi_dr_wwid after ${zi_wait}s"
        zc_log "$zi_subject" "multipath map $(zc_canonical "$(zi_lvm_device "$zi_dr_wwid")") over $(zi_portal_count) paths"
    fi
    printf 'zcloud-iscsi-lun: %s %s\n' "$zi_dr_wwid" "$(zi_lvm_device "$zi_dr_wwid")"
}

# ---- decisions ------------------------------------------------------------------------------

# zi_read_chap: the CHAP password from stdin, kept in a shell variable only.
zi_read_chap() {
    [ "$zi_chap" = 1 ] || return 0
    zi_chap_password=''
    IFS= read -r zi_chap_password || true
    if [ -z "$zi_chap_password" ]; then
        zc_die "$zi_subject" "--chap-user given but stdin holds no password line"
    fi
}

# zi_guard_target_change: a change of target or LUN is refused while the VG on the current
# LUN holds volumes; otherwise the old LUN is logged out first.
zi_guard_target_change() {
    zi_gt_old_target=$(zi_state_get "$(zi_state_file)" target) || return 0
    zi_gt_old_lun=$(zi_state_get "$(zi_state_file)" lun) || return 0
    zi_gt_old_portals=$(zi_state_get "$(zi_state_file)" portals) || return 0
    [ "$zi_gt_old_target" = "$zi_target" ] && [ "$zi_gt_old_lun" = "$zi_lun" ] && return 0
    zi_gt_volumes=$(zi_volumes)
    if [ -n "$zi_gt_volumes" ]; then
        zc_die "$zi_subject" "target $zi_gt_old_target LUN $zi_gt_old_lun -> $zi_target LUN $zi_lun refused: VG $zi_vg holds volumes ($zi_gt_volumes); move them off first"
    fi
    zc_log "$zi_subject" "target $zi_gt_old_target LUN $zi_gt_old_lun -> $zi_target LUN $zi_lun: VG $zi_vg holds no volumes, leaving the old LUN"
    zi_gt_new="$zi_target $zi_lun $zi_portals"
    zi_target=$zi_gt_old_target zi_lun=$zi_gt_old_lun zi_portals=$zi_gt_old_portals
    zi_leave
    # shellcheck disable=SC2086 # target, LUN, then one word per portal
    set -- $zi_gt_new
    zi_target=$1 zi_lun=$2
    shift 2
    zi_portals="$*"
}

# zi_prepare_record PORTAL: makes the record (new or rewritten); remembers how to undo it.
zi_prepare_record() {
    if zi_pr_file=$(zi_record_file "$1"); then
        zi_pr_old=$(cat "$zi_pr_file")
        zi_undo="$zi_undo restore:$1"
        eval "zi_old_$(zi_key "$1")=\$zi_pr_old"
    else
        iscsiadm -m node -o new -T "$zi_target" -p "$1" >/dev/null || zc_fail "$zi_subject" "iscsiadm -o new for $1"
        zi_pr_file=$(zi_record_file "$1") || zc_fail "$zi_subject" "no node record for $1 after iscsiadm -o new"
        zi_pr_old=''
        zi_undo="$zi_undo delete:$1"
        zc_log "$zi_subject" "node record for $1 created"
    fi
    iscsiadm -m node -T "$zi_target" -p "$1" -o update -n node.startup -v automatic >/dev/null
    zi_pr_auth_before=$(zi_record_lines chap "$zi_pr_file")
    zi_write_record "$zi_pr_file"
    zi_pr_auth_after=$(zi_record_lines chap "$zi_pr_file")
    if [ -n "$zi_pr_old" ] && [ "$zi_pr_auth_before" != "$zi_pr_auth_after" ]; then
        zc_log "$zi_subject" "CHAP of $1 changed"
        zi_changed="$zi_changed $1"
    fi
}

# zi_key PORTAL: a shell-variable-safe key of a portal.
zi_key() { printf '%s' "$1" | tr -c 'A-Za-z0-9' '_'; }

# zi_undo_all: every record back as before this run; sessions of changed records with them.
zi_undo_all() {
    for zi_ua in $zi_undo; do
        zi_ua_portal=${zi_ua#*:}
        case $zi_ua in
            delete:*)
                zi_logout "$zi_ua_portal"
                iscsiadm -m node -o delete -T "$zi_target" -p "$zi_ua_portal" >/dev/null 2>&1 || true
                ;;
            restore:*)
                eval "zi_ua_old=\$zi_old_$(zi_key "$zi_ua_portal")"
                zi_restore_record "$(zi_record_file "$zi_ua_portal")" "$zi_ua_old"
                if ! zi_session_exists "$zi_ua_portal"; then
                    zi_login "$zi_ua_portal" || true
                fi
                ;;
        esac
    done
    zc_log "$zi_subject" "node records put back as they were"
}

# zi_relogin PORTAL: logs a path in again with its new record. One path at a time, so a
# multipath device keeps serving; a lone path with an active LV keeps its session instead.
zi_relogin() {
    if [ "$(zi_portal_count)" = 1 ] && [ -n "$(zi_holder_names "$(zi_by_path "$1")")" ]; then
        zc_log "$zi_subject" "session on $1 kept: an LV is active on its only path; the new CHAP applies at the next login"
        return 0
    fi
    zi_logout "$1"
}

# zi_ensure_watchdog: the driver's wdmd needs a watchdog device; softdog when the host has none,
# loaded again at every boot (without one, wdmd exits and the node plugin's lvmctrld with it).
zi_ensure_watchdog() {
    if [ ! -e /dev/watchdog ]; then
        modprobe softdog 2>/dev/null || zc_fail "$zi_subject" "no /dev/watchdog and modprobe softdog failed"
        zc_log "$zi_subject" "softdog loaded (the lock daemons need a watchdog)"
    fi
    [ -d /sys/module/softdog ] && zi_keep_softdog
    return 0
}

# zi_keep_softdog: softdog in modules-load.d, for a node set up before this line existed too.
zi_keep_softdog() {
    grep -qx softdog "$zi_softdog_conf" 2>/dev/null && return 0
    mkdir -p "${zi_softdog_conf%/*}"
    printf 'softdog\n' >"$zi_softdog_conf"
    zc_log "$zi_subject" "softdog loaded at boot ($zi_softdog_conf)"
}

zi_apply() {
    zi_read_chap
    zi_guard_target_change
    zi_undo='' zi_changed=''
    for zi_a_p in $zi_portals; do
        zi_prepare_record "$zi_a_p"
    done
    # Path by path: a changed record's session goes and comes back before the next path's.
    for zi_a_p in $zi_portals; do
        case " $zi_changed " in
            *" $zi_a_p "*) zi_relogin "$zi_a_p" ;;
        esac
        if zi_session_exists "$zi_a_p"; then
            zc_log "$zi_subject" "logged in to $zi_a_p"
            continue
        fi
        if ! zi_login "$zi_a_p"; then
            zc_refuse "$zi_subject" "login to $zi_target on $zi_a_p failed"
            zi_undo_all
            exit 1
        fi
        zc_log "$zi_subject" "login to $zi_a_p"
    done
    zi_device_ready
    zi_ensure_watchdog
    mkdir -p "$zi_state_dir"
    printf 'target %s\nlun %s\nportals %s\n' "$zi_target" "$zi_lun" "$zi_portals" >"$(zi_state_file)"
}

# zi_leave: lock-stop, flush the multipath map, logout, delete the records (no checks).
zi_leave() {
    if lvmlockctl --info >/dev/null 2>&1; then
        vgchange --config "$zi_lockd" --lockstop "$zi_vg" >/dev/null 2>&1 || true
        zc_log "$zi_subject" "lockspace of VG $zi_vg stopped"
    fi
    if zi_l_wwid=$(zi_wwid) && [ -e "$(zi_lvm_device "$zi_l_wwid")" ]; then
        zi_l_held=$(zi_holder_names "$(zi_lvm_device "$zi_l_wwid")")
        [ -z "$zi_l_held" ] || zc_fail "$zi_subject" "the LUN is still held by $zi_l_held after lock-stop; not logging out"
    fi
    if [ "$(zi_portal_count)" -gt 1 ] && zi_l_wwid=$(zi_wwid); then
        multipath -f "$zi_l_wwid" >/dev/null 2>&1 || true
        for zi_l_p in $zi_portals; do
            zi_l_dev=$(zi_by_path "$zi_l_p")
            if [ -e "$zi_l_dev" ]; then
                multipath -w "$(zc_canonical "$zi_l_dev")" >/dev/null 2>&1 || true
            fi
        done
    fi
    for zi_l_p in $zi_portals; do
        zi_logout "$zi_l_p"
        if iscsiadm -m node -o delete -T "$zi_target" -p "$zi_l_p" >/dev/null 2>&1; then
            zc_log "$zi_subject" "node record for $zi_l_p deleted"
        fi
    done
}

# zi_active_volumes DEV: the active LVs on DEV, without lvmlockd's own lease volume (lvmlock,
# active while the lockspace runs; lock-stop removes it).
zi_active_volumes() {
    for zi_av in $(zi_holder_names "$1"); do
        case $zi_av in
            *-lvmlock) ;;
            *) printf '%s ' "$zi_av" ;;
        esac
    done
}

zi_release() {
    if zi_r_wwid=$(zi_wwid); then
        zi_r_dev=$(zi_lvm_device "$zi_r_wwid")
        if [ -e "$zi_r_dev" ]; then
            zi_r_active=$(zi_active_volumes "$zi_r_dev")
            [ -z "$zi_r_active" ] || zc_die "$zi_subject" "LV active on this node (${zi_r_active% }); deactivate it (its pod must leave) first"
        fi
    fi
    zi_leave
    rm -f "$(zi_state_file)"
}

zi_main "[--chap-user NAME]" "$@"
