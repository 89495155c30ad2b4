# shellcheck shell=sh
# discover.sh [--no-guards] [DECLARED_PATH]...: read-only inventory of this node's block
# devices for `npm run discover` and (with --no-guards: no per-device verdicts) `npm run status`.
#
# Runs after lib.sh and asks every device the same guard the disk scripts ask before they touch
# it (zc_guard_device, wipe off), so a verdict says exactly what a disk script would refuse.
# It changes nothing: it reads lsblk, /sys, /dev/disk/by-id, signature probes (wipefs without
# --all, blkid -p) and LVM reports.
#
# Output, one fact per line:
#   zcloud-lsblk: <lsblk JSON of every device tree, on one line>
#   zcloud-guard: <kernel path> ok
#   zcloud-guard: <kernel path> refused <reason>
#   zcloud-stable: <kernel path> <stable /dev/disk/by-id path>
#   zcloud-byid: <by-id link> <kernel path>
#   zcloud-declared: <declared path> <kernel path | missing>
#   zcloud-pv: <pv path>|<vg>|<vg size>|<vg free>|<lv count>
#   zcloud-lv: <vg>|<lv>|<lv attr>|<data percent>
set -eu

# zc_discover_lsblk: every device tree with the facts the inventory shows, as one JSON line.
zc_discover_lsblk() {
    zc_dl_json=$(lsblk -J -b -o NAME,PATH,TYPE,SIZE,MODEL,SERIAL,ROTA,WWN,MOUNTPOINTS,FSTYPE </dev/null)
    printf 'zcloud-lsblk: %s\n' "$(printf '%s' "$zc_dl_json" | tr -d '\n')"
}

# zc_discover_guard DEV: the disk scripts' verdict on DEV (its last refusal line, if any).
zc_discover_guard() {
    if zc_dg_err=$(zc_guard_device "$1" 0 2>&1 >/dev/null); then
        printf 'zcloud-guard: %s ok\n' "$1"
        return 0
    fi
    zc_dg_reason=$(printf '%s\n' "$zc_dg_err" | sed -n 's/^zcloud: .*: refused: //p' | tail -n 1)
    printf 'zcloud-guard: %s refused %s\n' "$1" "${zc_dg_reason:-guard failed without a reason}"
}

# zc_discover_devices: guard verdict and stable name of every top-level device with a medium
# (lsblk leaves out unbound loop devices; size 0 is an empty drive or an unset zram).
zc_discover_devices() {
    lsblk -d -n -b -r -o PATH,SIZE </dev/null | while read -r zc_dd_path zc_dd_size; do
        [ "$zc_dd_size" != 0 ] || continue
        zc_discover_guard "$zc_dd_path"
        if zc_dd_stable=$(zc_stable_name "$zc_dd_path"); then
            printf 'zcloud-stable: %s %s\n' "$zc_dd_path" "$zc_dd_stable"
        fi
    done
}

# zc_discover_byid: every /dev/disk/by-id link with the device it points at.
zc_discover_byid() {
    for zc_db_name in $(zc_ls /dev/disk/by-id); do
        zc_db_link=/dev/disk/by-id/$zc_db_name
        [ -L "$zc_db_link" ] || continue
        printf 'zcloud-byid: %s %s\n' "$zc_db_link" "$(zc_canonical "$zc_db_link")"
    done
}

# zc_discover_declared PATH...: where each declared path points on this node.
zc_discover_declared() {
    for zc_dc_path in "$@"; do
        if [ -e "$zc_dc_path" ]; then
            printf 'zcloud-declared: %s %s\n' "$zc_dc_path" "$(zc_canonical "$zc_dc_path")"
        else
            printf 'zcloud-declared: %s missing\n' "$zc_dc_path"
        fi
    done
}

# zc_discover_lvm: every PV with its VG's size, free space and LV count, and every LV with its
# data usage (thin pools). Nothing when LVM is not installed.
zc_discover_lvm() {
    command -v pvs >/dev/null 2>&1 || return 0
    pvs --noheadings --units b --nosuffix --separator '|' -o pv_name,vg_name,vg_size,vg_free,lv_count </dev/null 2>/dev/null |
        sed 's/^ *//; s/^/zcloud-pv: /'
    lvs --noheadings --separator '|' -o vg_name,lv_name,lv_attr,data_percent </dev/null 2>/dev/null |
        sed 's/^ *//; s/ *$//; s/^/zcloud-lv: /'
}

zc_discover_guards=1
if [ "${1:-}" = --no-guards ]; then
    zc_discover_guards=0
    shift
fi
zc_discover_lsblk
[ "$zc_discover_guards" = 0 ] || zc_discover_devices
zc_discover_byid
zc_discover_declared "$@"
zc_discover_lvm
