# shellcheck shell=sh
# zcloud partition guard (POSIX sh): a listed device that is a partition of another listed one.
#
# Shipped after lib.sh (zc_refuse, zc_sysfs, zc_devnum) and before the disk scripts that take a
# device list (lvm-reconcile.sh, cephfs-disks.sh), not in every bundle: a change here reaches only
# their commands, never the Ceph daemons' library or the iSCSI commands.

# zc_disk_of DEV: "major:minor" of the disk DEV is a partition of, or nothing for a whole disk.
zc_disk_of() {
    zc_do_sys=$(zc_sysfs "$1") || return 0
    [ -f "$zc_do_sys/partition" ] || return 0
    cat -- "${zc_do_sys%/*}/dev"
}

# zc_guard_no_disk_with_partition DEV...: refuses each listed device that is a partition of
# another listed one, compared by device number (so under any two names): preparing the disk
# would wipe its partition table and the partition with it. Devices that do not exist are left
# to the other guards.
zc_guard_no_disk_with_partition() {
    zc_gp_failed=0
    for zc_gp_dev in "$@"; do
        [ -b "$zc_gp_dev" ] || continue
        zc_gp_disk=$(zc_disk_of "$zc_gp_dev")
        [ -n "$zc_gp_disk" ] || continue
        for zc_gp_other in "$@"; do
            [ -b "$zc_gp_other" ] || continue
            [ "$(zc_devnum "$zc_gp_other")" = "$zc_gp_disk" ] || continue
            zc_refuse "$zc_gp_dev" "is a partition of $zc_gp_other, which is listed too; preparing the disk would wipe its partition table and this partition with it, so list either the disk or its partitions"
            zc_gp_failed=1
        done
    done
    [ "$zc_gp_failed" = 0 ]
}
