#!/usr/bin/env bash
# Builds the Ceph tier's root: a Debian chroot (debootstrap --variant=minbase) of one suite with
# only the Ceph packages the tier needs, at one pinned Ceph version, cached outside the clone.
# The host system gets nothing installed: the tier runs ceph, its daemons and tools from here.
#
# Usage: bash test/ceph/build-chroot.sh <suite> <ceph-version>   (the tier's: test/ceph/release.ts)
# Env:   ZCLOUD_CEPH_CACHE  cache root (default $HOME/.cache/zcloud-storage/ceph)
#        ZCLOUD_DEBIAN_MIRROR  (default http://deb.debian.org/debian)
# Output: "<suite> <version>: built|cached in <s>s, <size>", then, as the last line of stdout,
#   the chroot's path. The chroot is complete once <cache>/<suite>-<version>/.done exists; a
#   half-built one is removed and built again. It fails, naming both, when the suite's ceph is
#   not <ceph-version> (X.Y.Z, Debian's revision aside).
set -eu

if [ $# -ne 2 ]; then
    echo "usage: build-chroot.sh <suite> <ceph-version>" >&2
    exit 2
fi
SUITE=$1
VERSION=$2
CACHE=${ZCLOUD_CEPH_CACHE:-$HOME/.cache/zcloud-storage/ceph}
MIRROR=${ZCLOUD_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# ceph-volume ships in ceph-osd; udev gives udevadm (ceph-volume calls it); e2fsprogs mkfs.ext4
# (refusal tests); util-linux (minbase) blkid, wipefs, blockdev.
CEPH_PACKAGES="ceph-mon ceph-mgr ceph-mds ceph-osd ceph-fuse ceph-common"
OTHER_PACKAGES="udev e2fsprogs"

die() { echo "build-chroot: $*" >&2; exit 1; }

# The upstream X.Y.Z of a Debian version (epoch, +ds and revision dropped): 2:20.2.4+ds-1 -> 20.2.4.
upstream_version() {
    printf '%s\n' "$1" | sed -e 's/^[0-9]*://' -e 's/[-+~].*$//'
}

# Debian's candidate version of ceph in the chroot's suite.
candidate() {
    chroot "$1" apt-cache policy ceph-common | sed -n 's/^ *Candidate: //p'
}

build() {
    root=$1
    rm -rf "$root"
    mkdir -p "$root"
    debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR" >"$root.log" 2>&1 ||
        die "debootstrap $SUITE failed: $(tail -n 5 "$root.log")"
    # Daemons must not start in the chroot while packages install.
    printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
    chmod 755 "$root/usr/sbin/policy-rc.d"
    # A mirror snapshot serves a Release file past its Valid-Until: the packages are still the
    # signed ones (the signature is checked), only their age is not.
    echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99zcloud-snapshot"
    chroot "$root" apt-get update >>"$root.log" 2>&1 || die "apt-get update in the chroot failed: $(tail -n 5 "$root.log")"
    deb=$(candidate "$root")
    [ "$(upstream_version "$deb")" = "$VERSION" ] || die "$SUITE offers ceph $deb, not $VERSION"
    pins=""
    for p in $CEPH_PACKAGES; do pins="$pins $p=$deb"; done
    # Maintainer scripts need /proc: mounted in a mount namespace of the install's own, it goes
    # with it (nothing left mounted on any exit).
    # shellcheck disable=SC2016,SC2086 # the inner script expands its own arguments; one package per word
    DEBIAN_FRONTEND=noninteractive unshare --mount --propagation private -- sh -c '
        mount -t proc proc "$0/proc" && exec chroot "$0" apt-get install -y --no-install-recommends "$@"
    ' "$root" $pins $OTHER_PACKAGES >>"$root.log" 2>&1 ||
        die "installing ceph $deb in the chroot failed: $(tail -n 5 "$root.log")"
    chroot "$root" apt-get clean
    rm -rf "$root"/var/lib/apt/lists/*
    echo "$deb" >"$root/.ceph-version"
    touch "$root/.done"
}

main() {
    [ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot)"
    command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
    mkdir -p "$CACHE"
    root=$CACHE/$SUITE-$VERSION
    start=$(date +%s)
    how=cached
    if [ ! -e "$root/.done" ]; then
        build "$root"
        how=built
    fi
    echo "$SUITE $VERSION: $how in $(($(date +%s) - start))s, $(du -sh "$root" | cut -f1)"
    echo "$root"
}

main
