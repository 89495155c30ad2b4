# shellcheck shell=sh
# shellcheck disable=SC2154 # zi_ settings come from zi_parse in iscsi-lib.sh, shipped before
# iscsi-status.sh OPTIONS: read-only facts of one iSCSI storage on this initiator for
# `npm run status`. Runs after lib.sh and iscsi-lib.sh (same options; no CHAP, no secret).
#
# It changes nothing: it reads `iscsiadm -m session`, /dev/disk/by-id, `vgs` and the sanlock
# daemon's lockspaces. csi-sanlock-lvm runs sanlock inside its node pod, whose /run is not the
# host's: the daemon's process is visible from the host, its socket only in its mount namespace,
# so `sanlock client status` runs there (nsenter) when the daemon is not the host's own.
#
# Output, one fact per line:
#   zcloud-iscsi-session: <portal host:port> <target IQN>     (every session on the node)
#   zcloud-iscsi-multipath: <wwid> <device | missing>         (several portals only)
#   zcloud-iscsi-shared-vg: <vg> present | missing
#   zcloud-iscsi-lockspace: <vg> started | joining | stopped | no-daemon
set -eu

# zi_status_sessions: every session as portal and target (`tcp: [1] 10.0.0.5:3260,1 iqn... (non-flash)`).
zi_status_sessions() {
    { iscsiadm -m session 2>/dev/null </dev/null || true; } |
        sed -n 's/^[a-z]*: \[[0-9]*\] \([^,]*\),[0-9-]* \([^ ]*\).*/zcloud-iscsi-session: \1 \2/p'
}

# zi_status_multipath: the LUN's multipath device, when several portals lead to it.
zi_status_multipath() {
    [ "$(zi_portal_count)" -gt 1 ] || return 0
    if ! zi_sm_wwid=$(zi_wwid); then
        printf 'zcloud-iscsi-multipath: unknown missing\n'
        return 0
    fi
    zi_sm_dev=/dev/disk/by-id/dm-uuid-mpath-$zi_sm_wwid
    [ -e "$zi_sm_dev" ] || zi_sm_dev=missing
    printf 'zcloud-iscsi-multipath: %s %s\n' "$zi_sm_wwid" "$zi_sm_dev"
}

# zi_status_vg: the shared VG is visible on this node.
zi_status_vg() {
    if vgs --shared --noheadings -o vg_name "$zi_vg" </dev/null >/dev/null 2>&1; then
        printf 'zcloud-iscsi-shared-vg: %s present\n' "$zi_vg"
    else
        printf 'zcloud-iscsi-shared-vg: %s missing\n' "$zi_vg"
    fi
}

# zi_status_sanlock: `sanlock client status` of the running daemon, in its mount namespace.
zi_status_sanlock() {
    zi_ss_pid=$(pgrep -o -x sanlock) || return 1
    if [ "$(readlink "/proc/$zi_ss_pid/ns/mnt")" = "$(readlink /proc/self/ns/mnt)" ]; then
        sanlock client status </dev/null
    else
        nsenter --target "$zi_ss_pid" --mount -- sanlock client status </dev/null
    fi
}

# zi_status_lockspace: the VG's lockspace (`s lvm_<vg>:<host id>:<path>:0`; ` ADD` while joining).
zi_status_lockspace() {
    if ! zi_sl_out=$(zi_status_sanlock 2>/dev/null); then
        printf 'zcloud-iscsi-lockspace: %s no-daemon\n' "$zi_vg"
        return 0
    fi
    zi_sl_line=$(printf '%s\n' "$zi_sl_out" | grep "^s lvm_$zi_vg:" || true)
    case $zi_sl_line in
        '') zi_sl_state=stopped ;;
        *ADD*) zi_sl_state=joining ;;
        *) zi_sl_state=started ;;
    esac
    printf 'zcloud-iscsi-lockspace: %s %s\n' "$zi_vg" "$zi_sl_state"
}

zi_parse "$@"
zi_status_sessions
zi_status_multipath
zi_status_vg
zi_status_lockspace
