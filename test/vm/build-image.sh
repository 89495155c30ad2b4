#!/bin/bash
# Build (or reuse) the Debian bookworm guest image for the VM test tier.
#
#   test/vm/build-image.sh <cache-dir>
#
# Prints the image directory on stdout (last line); everything else goes to
# stderr. The image directory holds:
#   root.img     raw ext4 root filesystem (label zcloud-root), sparse
#   vmlinuz      kernel for qemu -kernel
#   initrd.img   initramfs for qemu -initrd (virtio_pci/blk/net + ext4)
#   cmdline      the kernel command line the image expects
#   manifest     kernel version, package list, build time, sizes
# The directory name carries a hash of this script (package list and every
# guest file are in it), so a second run reuses the image and a change of the
# script builds a new one. Downloaded .debs are kept in <cache-dir>/debs.
#
# Needs root (debootstrap, chroot) and the Debian packages debootstrap,
# e2fsprogs. The mirror is the one apt on this machine uses for Debian
# (override with ZCLOUD_VM_MIRROR=<url>).
set -eu
set -o pipefail

SUITE=bookworm
# Packages on top of minbase. The iSCSI test needs open-iscsi, lvm2-lockd,
# sanlock and multipath-tools; sudo lets tests run scripts as a non-root user;
# the nodes tier's guests run kube-proxy, whose nftables mode execs nft.
PACKAGES="linux-image-amd64 udev systemd-sysv kmod iproute2 procps
openssh-server sudo
lvm2 thin-provisioning-tools xfsprogs e2fsprogs
open-iscsi lvm2-lockd sanlock multipath-tools nfs-common
nftables"
# Kernel module trees a headless virtio guest never loads; dropped to keep
# the image small.
PRUNE_MODULES="sound drivers/gpu drivers/media drivers/net/wireless
drivers/net/ethernet drivers/infiniband drivers/staging drivers/bluetooth
drivers/iio drivers/usb drivers/hid drivers/isdn net/wireless net/mac80211
net/bluetooth"

log() { printf '[vm-image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

[ $# -eq 1 ] || die "usage: $0 <cache-dir>"
cache_dir=$1
script_path=$(readlink -f "$0")

hash=$(sha256sum "$script_path" | cut -c1-16)
image_dir="$cache_dir/image-$hash"

if [ -f "$image_dir/manifest" ]; then
    log "reusing $image_dir"
    printf '%s\n' "$image_dir"
    exit 0
fi

[ "$(id -u)" -eq 0 ] || die "building the image needs root (debootstrap, chroot)"
for tool in debootstrap mkfs.ext4 chroot flock; do
    command -v "$tool" >/dev/null 2>&1 || die "missing $tool (apt-get install debootstrap e2fsprogs util-linux)"
done

mkdir -p "$cache_dir/debs"
exec 9>"$cache_dir/.build.lock"
log "waiting for the build lock"
flock 9
if [ -f "$image_dir/manifest" ]; then   # built by someone else meanwhile
    log "reusing $image_dir"
    printf '%s\n' "$image_dir"
    exit 0
fi

# The Debian mirror apt uses here: first repository whose suite is $SUITE.
find_mirror() {
    # shellcheck disable=SC2016  # apt expands $(...) itself
    apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(ORIGIN)' 'Created-By: Packages' 2>/dev/null |
        awk -v suite="$SUITE" '$2 == suite { print $1; exit }'
}
mirror=${ZCLOUD_VM_MIRROR:-$(find_mirror || true)}
if [ -z "$mirror" ]; then
    # The host runs another release: take its Debian main archive.
    # shellcheck disable=SC2016
    mirror=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(ORIGIN)' 'Created-By: Packages' 2>/dev/null |
        awk '$3 == "Debian" && $2 !~ /security/ { print $1; exit }' || true)
fi
[ -n "$mirror" ] || die "no Debian mirror found in apt's sources; set ZCLOUD_VM_MIRROR"

# debootstrap mounts proc/sys in the target; never leave them behind.
remove_build_dir() {
    for m in dev/pts dev proc sys; do
        if mountpoint -q "$1/root/$m" 2>/dev/null; then umount -l "$1/root/$m" || true; fi
    done
    rm -rf --one-file-system "$1"
}
# Leftovers of a build that was killed (we hold the lock: no build runs).
for stale in "$cache_dir"/build.*; do
    if [ -d "$stale" ]; then log "removing stale $stale"; remove_build_dir "$stale"; fi
done
work=$(mktemp -d "$cache_dir/build.XXXXXX")
trap 'remove_build_dir "$work"' EXIT
trap 'exit 130' INT TERM
root="$work/root"
start=$(date +%s)

# Files placed before debootstrap: not owned by any package, read by dpkg and
# initramfs-tools during the install (no fsync per file; a small initrd).
mkdir -p "$root/etc/dpkg/dpkg.cfg.d" "$root/etc/initramfs-tools/conf.d" \
    "$root/usr/share/initramfs-tools/modules.d"
echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/zcloud-unsafe-io"
cat >"$root/etc/initramfs-tools/conf.d/zcloud-vm" <<'EOF'
MODULES=list
COMPRESS=gzip
EOF
cat >"$root/usr/share/initramfs-tools/modules.d/zcloud-vm" <<'EOF'
virtio_pci
virtio_blk
virtio_net
virtio_rng
ext4
crc32c_generic
EOF

# No udev in the initramfs: the modules above are loaded by the initramfs
# itself (conf/modules), the root is found by blkid (root=LABEL=), and the
# guest's udev coldplugs everything once. Saves a device scan under TCG.
# Same-named files under /etc/initramfs-tools/scripts replace the packaged ones.
mkdir -p "$root/etc/initramfs-tools/scripts/init-top" "$root/etc/initramfs-tools/scripts/init-bottom"
cat >"$root/etc/initramfs-tools/scripts/init-top/udev" <<'EOF'
#!/bin/sh
[ "${1:-}" = prereqs ] && exit 0
exit 0
EOF
cat >"$root/etc/initramfs-tools/scripts/init-bottom/udev" <<'EOF'
#!/bin/sh
[ "${1:-}" = prereqs ] && exit 0
# Hand /dev (devtmpfs) over to the real root, as the packaged script does.
mount -n -o move /dev "${rootmnt:?}/dev" || mount -n --move /dev "${rootmnt}/dev"
if command -v nuke >/dev/null; then nuke /dev; else rm -rf /dev; fi
ln -s "${rootmnt}/dev" /dev
EOF
chmod 755 "$root/etc/initramfs-tools/scripts/init-top/udev" "$root/etc/initramfs-tools/scripts/init-bottom/udev"

log "debootstrap $SUITE from $mirror"
include=$(echo "$PACKAGES" | tr -s ' \n' ',,' | sed 's/,$//')
if ! debootstrap --variant=minbase --cache-dir="$(readlink -f "$cache_dir/debs")" \
    --include="$include" "$SUITE" "$root" "$mirror" >"$work/debootstrap.log" 2>&1; then
    tail -n 30 "$work/debootstrap.log" >&2
    [ -f "$root/debootstrap/debootstrap.log" ] && tail -n 30 "$root/debootstrap/debootstrap.log" >&2
    die "debootstrap failed"
fi
log "debootstrap done after $(( $(date +%s) - start )) s"

kver=$(basename "$(ls "$root"/boot/vmlinuz-*)" | sed 's/^vmlinuz-//')

# --- guest configuration -----------------------------------------------------
rm -f "$root/etc/dpkg/dpkg.cfg.d/zcloud-unsafe-io"
echo zcloud-vm >"$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 zcloud-vm\n' >"$root/etc/hosts"
echo 'LABEL=zcloud-root / ext4 rw,errors=remount-ro 0 1' >"$root/etc/fstab"
echo 'nameserver 10.0.2.3' >"$root/etc/resolv.conf"
: >"$root/etc/machine-id"            # a fresh machine id every boot
rm -f "$root/var/lib/dbus/machine-id"
rm -f "$root"/etc/ssh/ssh_host_*     # injected per run (or generated at boot)

mkdir -p "$root/etc/ssh/sshd_config.d"
cat >"$root/etc/ssh/sshd_config.d/zcloud-vm.conf" <<'EOF'
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
MaxStartups 50:30:100
EOF

# Per-run identity from QEMU fw_cfg (opt/zcloud/*): hostname, root's
# authorized_keys, the SSH host key. Without them (manual boots) the guest
# generates host keys and accepts no login. The network is QEMU user-mode
# networking, whose DHCP server always hands out 10.0.2.15/24 via 10.0.2.2
# with DNS 10.0.2.3: configured here directly, which saves starting
# systemd-networkd (seconds under TCG).
cat >"$root/usr/local/sbin/zcloud-seed" <<'EOF'
#!/bin/sh
set -eu
modprobe qemu_fw_cfg 2>/dev/null || true
d=/sys/firmware/qemu_fw_cfg/by_name/opt/zcloud
if [ -r "$d/hostname/raw" ]; then
    name=$(cat "$d/hostname/raw")
    echo "$name" >/etc/hostname
    hostname "$name"
    printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$name" >/etc/hosts
fi
if [ -r "$d/authorized_keys/raw" ]; then
    install -d -m 700 /root/.ssh
    install -m 600 "$d/authorized_keys/raw" /root/.ssh/authorized_keys
fi
if [ -r "$d/ssh_host_ed25519_key/raw" ]; then
    install -m 600 "$d/ssh_host_ed25519_key/raw" /etc/ssh/ssh_host_ed25519_key
    if [ -r "$d/ssh_host_ed25519_key_pub/raw" ]; then
        install -m 644 "$d/ssh_host_ed25519_key_pub/raw" /etc/ssh/ssh_host_ed25519_key.pub
    else
        ssh-keygen -y -f /etc/ssh/ssh_host_ed25519_key >/etc/ssh/ssh_host_ed25519_key.pub
    fi
    echo 'HostKey /etc/ssh/ssh_host_ed25519_key' >/etc/ssh/sshd_config.d/00-hostkey.conf
else
    ssh-keygen -A
fi
i=0
while [ ! -e /sys/class/net/eth0 ] && [ "$i" -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
EOF
chmod 755 "$root/usr/local/sbin/zcloud-seed"
cat >"$root/etc/systemd/system/zcloud-seed.service" <<'EOF'
[Unit]
Description=zcloud test guest identity from fw_cfg
DefaultDependencies=no
After=local-fs.target systemd-remount-fs.service
Before=ssh.service network-pre.target network.target sysinit.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/zcloud-seed

[Install]
WantedBy=sysinit.target
EOF
# Every guest is its own iSCSI initiator (made when iscsid first starts).
cat >"$root/etc/systemd/system/zcloud-iscsi-name.service" <<'EOF'
[Unit]
Description=zcloud test guest: unique iSCSI initiator name
Before=iscsid.service open-iscsi.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'echo "InitiatorName=$(iscsi-iname)" >/etc/iscsi/initiatorname.iscsi'

[Install]
WantedBy=iscsid.service
EOF
# sshd -t before every start costs seconds under TCG; the config is fixed here.
mkdir -p "$root/etc/systemd/system/ssh.service.d"
printf '[Service]\nExecStartPre=\n' >"$root/etc/systemd/system/ssh.service.d/zcloud-vm.conf"
mkdir -p "$root/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\n' >"$root/etc/systemd/journald.conf.d/zcloud-vm.conf"
# A line on the serial console once sshd is up (the harness waits for SSH
# itself; the line helps reading a console log).
cat >"$root/etc/systemd/system/zcloud-ready.service" <<'EOF'
[Unit]
Description=zcloud test guest ready marker
After=ssh.service
Wants=ssh.service

[Service]
Type=oneshot
ExecStart=/bin/sh -c 'echo "zcloud-vm: ready $(hostname)" >/dev/ttyS0'

[Install]
WantedBy=multi-user.target
EOF

chroot "$root" systemctl enable zcloud-seed.service zcloud-iscsi-name.service zcloud-ready.service ssh.service >&2
chroot "$root" systemctl set-default multi-user.target >&2
# Nothing that reaches outside, nothing a test guest without a login needs:
# every unit costs seconds of boot under TCG. Lock daemons (lvmlockd, sanlock,
# wdmd), dmeventd monitoring (lvm2-monitor) and the NFS client target are
# started by the tests that need them.
chroot "$root" systemctl mask apt-daily.timer apt-daily-upgrade.timer \
    dpkg-db-backup.timer e2scrub_all.timer fstrim.timer e2scrub_reap.service \
    systemd-networkd.service systemd-networkd.socket systemd-network-generator.service \
    systemd-networkd-wait-online.service getty.target getty-static.service \
    dev-hugepages.mount dev-mqueue.mount sys-kernel-debug.mount sys-kernel-tracing.mount \
    sys-fs-fuse-connections.mount proc-sys-fs-binfmt_misc.automount systemd-binfmt.service \
    modprobe@efi_pstore.service modprobe@fuse.service modprobe@drm.service systemd-pstore.service \
    systemd-update-utmp.service systemd-update-utmp-runlevel.service rpc-statd-notify.service \
    lvm2-monitor.service >&2
chroot "$root" systemctl disable lvmlockd.service lvmlocks.service \
    sanlock.service wdmd.service nfs-client.target rpcbind.service \
    multipathd.service multipathd.socket >&2

# --- slim down ----------------------------------------------------------------
for p in $PRUNE_MODULES; do
    rm -rf "$root/usr/lib/modules/$kver/kernel/$p"
done
chroot "$root" depmod -a "$kver" 2>/dev/null
rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/* \
    "$root"/usr/share/info/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
    "$root"/var/lib/apt/lists/* "$root"/var/log/*.log "$root/debootstrap"

# --- kernel, initrd, root filesystem --------------------------------------------
out="$work/image"
mkdir -p "$out"
cp "$root/boot/vmlinuz-$kver" "$out/vmlinuz"
cp "$root/boot/initrd.img-$kver" "$out/initrd.img"
rm -f "$root"/boot/vmlinuz-* "$root"/boot/initrd.img-* "$root"/boot/System.map-*
echo "root=LABEL=zcloud-root rw console=ttyS0,115200 net.ifnames=0 fsck.mode=skip mitigations=off panic=1" >"$out/cmdline"

used_mib=$(du -sm "$root" | cut -f1)
size_mib=$(( used_mib * 13 / 10 + 1024 ))
log "root filesystem: ${used_mib} MiB used, ${size_mib} MiB image"
truncate -s "${size_mib}M" "$out/root.img"
mkfs.ext4 -q -F -L zcloud-root -d "$root" "$out/root.img" >&2

end=$(date +%s)
{
    echo "suite: $SUITE"
    echo "kernel: $kver"
    echo "mirror: $mirror"
    echo "packages: $(echo "$PACKAGES" | tr -s ' \n' '  ')"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "build-seconds: $(( end - start ))"
    echo "root-used-mib: $used_mib"
    echo "image-disk-mib: $(du -sm "$out/root.img" | cut -f1)"
} >"$out/manifest"

# Publish atomically; drop images of older script versions.
for old in "$cache_dir"/image-*; do
    [ -d "$old" ] && [ "$old" != "$image_dir" ] && rm -rf "$old"
done
mv "$out" "$image_dir"
log "built $image_dir in $(( end - start )) s"
printf '%s\n' "$image_dir"
