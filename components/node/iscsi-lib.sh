# shellcheck shell=sh
# zcloud iSCSI library (POSIX sh): options, paths to the LUN, the device LVM uses, the records.
# Shipped after lib.sh and before iscsi-initiator.sh or iscsi-vg.sh; only defines functions.
# shellcheck disable=SC2034 # the zi_ settings are read by the script shipped after this file
#
# Options every iSCSI script takes (never a secret: the CHAP password comes on stdin):
#   --storage NAME --vg VG --target IQN --lun N --portal HOST:PORT... [--chap-user NAME] [--wipe]
#   [--io-timeout SECONDS] [--wait SECONDS]

# RPC volumes csi-sanlock-lvm needs in the shared VG (its README), and the tag it finds them by.
zi_rpc_tag=csi-sanlock-lvm.vleo.net/rpcRole
zi_state_dir=/etc/zcloud/iscsi
# The watchdog module csi-sanlock-lvm's wdmd needs, loaded at boot (systemd-modules-load).
zi_softdog_conf=/etc/modules-load.d/zcloud-softdog.conf
# lvmlockd's locking is switched on per command: the host's lvm.conf stays untouched.
zi_lockd='global/use_lvmlockd=1'

zi_parse() {
    zi_storage='' zi_vg='' zi_target='' zi_lun='' zi_portals='' zi_chap=0 zi_chap_user='' zi_wipe=0 zi_io_timeout=30 zi_wait=90
    while [ $# -gt 0 ]; do
        case $1 in
            --storage) zi_storage=$2; shift 2 ;;
            --vg) zi_vg=$2; shift 2 ;;
            --target) zi_target=$2; shift 2 ;;
            --lun) zi_lun=$2; shift 2 ;;
            --portal) zi_portals="$zi_portals${zi_portals:+ }$2"; shift 2 ;;
            --chap-user) zi_chap=1; zi_chap_user=$2; shift 2 ;;
            --wipe) zi_wipe=1; shift ;;
            --io-timeout) zi_io_timeout=$2; shift 2 ;;
            --wait) zi_wait=$2; shift 2 ;;
            *) zc_die "$0" "unknown option $1" ;;
        esac
    done
    for zi_p_opt in storage vg target lun portals; do
        eval "[ -n \"\$zi_$zi_p_opt\" ]" || zc_die "$0" "missing --${zi_p_opt%s}"
    done
    zi_subject="iscsi $zi_storage"
}

# zi_portal_count: number of portals (paths) to the LUN.
zi_portal_count() {
    # shellcheck disable=SC2086 # one word per portal
    set -- $zi_portals
    echo $#
}

# zi_by_path PORTAL: udev's link for the LUN through one portal.
zi_by_path() {
    printf '/dev/disk/by-path/ip-%s-iscsi-%s-lun-%s\n' "$1" "$zi_target" "$zi_lun"
}

# zi_scsi_id DEV: the SCSI WWID of DEV (the LUN's identity, the same through every path).
zi_scsi_id() {
    for zi_si in /usr/lib/udev/scsi_id /lib/udev/scsi_id; do
        if [ -x "$zi_si" ]; then
            "$zi_si" --whitelisted --replace-whitespace --device="$1" </dev/null && return 0
            return 1
        fi
    done
    return 1
}

# zi_wait_for PATH: waits (bounded by --wait) until PATH exists; fails after.
zi_wait_for() {
    zi_wf_left=$zi_wait
    while [ ! -e "$1" ]; do
        [ "$zi_wf_left" -gt 0 ] || return 1
        udevadm settle --timeout=5 2>/dev/null || true
        [ -e "$1" ] && break
        sleep 1
        zi_wf_left=$((zi_wf_left - 1))
    done
}

# zi_wwid: the LUN's WWID through the first path that is there; fails when no path is.
zi_wwid() {
    for zi_ww_p in $zi_portals; do
        zi_ww_dev=$(zi_by_path "$zi_ww_p")
        if [ -e "$zi_ww_dev" ]; then
            zi_scsi_id "$zi_ww_dev" && return 0
        fi
    done
    return 1
}

# zi_lvm_device WWID: the device the PV lives on: the multipath map when there are several
# portals (never a component path), else the one path.
zi_lvm_device() {
    if [ "$(zi_portal_count)" -gt 1 ]; then
        printf '/dev/disk/by-id/dm-uuid-mpath-%s\n' "$1"
    else
        # shellcheck disable=SC2086 # one word per portal
        set -- $zi_portals
        zi_by_path "$1"
    fi
}

# zi_holder_names DEV: the device-mapper names stacked on DEV (active LVs), space separated.
zi_holder_names() {
    zi_hn_out=''
    for zi_hn in $(zc_holders "$(zc_canonical "$1")"); do
        zi_hn_name=$(cat "/sys/block/$zi_hn/dm/name" 2>/dev/null || echo "$zi_hn")
        zi_hn_out="$zi_hn_out${zi_hn_out:+ }$zi_hn_name"
    done
    printf '%s' "$zi_hn_out"
}

# Reports read shared VGs without their lockspace (--shared: LVM otherwise hides them from a
# host whose lvmlockd is not running, which is every host here: the lock daemons live in pods).

# zi_pv_vg DEV: the VG of PV DEV (empty when in none); fails when DEV is no PV LVM shows.
zi_pv_vg() {
    zi_pv_out=$(pvs --nohints --shared --readonly --noheadings -o vg_name -- "$1" </dev/null 2>/dev/null) || return 1
    printf '%s\n' "$zi_pv_out" | awk 'NF { print $1; exit }'
}

# zi_volumes: the LVs of the VG other than the driver's RPC volumes, space separated.
zi_volumes() {
    lvs --shared --readonly --noheadings -o lv_name,lv_tags -- "$zi_vg" </dev/null 2>/dev/null |
        awk -v tag="$zi_rpc_tag=" 'NF && index($2, tag) == 0 { printf "%s%s", sep, $1; sep = " " }'
}

# zi_vg_field FIELD: one field of the VG as LVM reports it without locks.
zi_vg_field() {
    vgs --shared --readonly --noheadings -o "$1" -- "$zi_vg" </dev/null 2>/dev/null | awk 'NF { print $1; exit }'
}

# zi_state_get FILE KEY: a value of a record this program keeps on the node.
zi_state_get() {
    [ -r "$1" ] || return 1
    awk -v k="$2" '$1 == k { $1 = ""; sub(/^ /, ""); print; found = 1 } END { exit !found }' "$1"
}

# zi_record_dir: where open-iscsi keeps node records on this host.
zi_record_dir() {
    for zi_rd in /etc/iscsi/nodes /var/lib/iscsi/nodes; do
        if [ -d "$zi_rd" ]; then
            echo "$zi_rd"
            return 0
        fi
    done
    echo /etc/iscsi/nodes
}

# zi_main EXTRA_USAGE ACTION OPTIONS...: the entry point of each script: runs its zi_apply or
# zi_release with the options parsed and a scratch file for captured errors.
zi_main() {
    zi_m_usage=$1
    shift
    zi_action=${1:-}
    if [ $# -gt 0 ]; then shift; fi
    zi_parse "$@"
    zi_err=$(mktemp)
    trap 'rm -f "$zi_err"' EXIT
    case $zi_action in
        apply) zi_apply ;;
        release) zi_release ;;
        *) zc_die "$0" "usage: $0 apply|release --storage NAME --vg VG --target IQN --lun N --portal HOST:PORT... $zi_m_usage" ;;
    esac
}
