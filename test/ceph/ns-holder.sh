#!/bin/bash
# shellcheck disable=SC2016 # the inner scripts expand their own arguments
# ns-holder.sh <tmp> <watch-pid> <root>[:<other-root>...] <mon-ip>...: the private world of one
# Ceph test cluster, and its teardown.
#
# Starts a process in a new private mount and network namespace, chrooted into <root> (the tier's
# Ceph release, test/ceph/build-chroot.sh), in which the host's /dev and /sys, a /proc of its
# own, /run/udev (the host's if udevd runs, else <tmp>/udev) and <tmp> (at the same path) are
# visible, <tmp>/data is /var/lib/ceph and
# <tmp>/varlog is /var/log/ceph (ceph-volume hard-codes both) and the loopback
# also carries each <mon-ip> (the mon Services' ClusterIPs of the plans), prints `ns <pid>` once it is
# ready, and stays until <watch-pid> exits or <tmp>/stop appears (or SIGTERM/SIGINT). Then it
# tears everything down, whatever state the test left: every process in that namespace
# (daemons, ceph-fuse, scripts) is killed; the namespace and all
# its mounts (binds, OSD tmpfs, FUSE) go with its last process; loop devices backed by files
# under <tmp> are detached; <tmp> is removed. Prints `down` when done.
set -u

tmp=$1
watch=$2
roots=${3:-}
root=${roots%%:*}
if [ ! -d "$tmp" ] || [ -z "$watch" ] || [ ! -e "$root/.done" ] || [ -z "${4:-}" ]; then
    echo "usage: ns-holder.sh <tmp> <watch-pid> <root>[:<other-root>...] <mon-ip>... (roots: complete chroots)" >&2
    exit 2
fi
shift 3

# The mounts are the namespace's own: a chroot directory itself is never changed (the mount
# points exist in it: /dev, /proc, /sys, /run, /tmp, /mnt, /var/lib/ceph, /var/log/ceph). Other
# roots (another Ceph release, for an upgrade) are at /mnt/zc-roots/<name> in the first, with
# the same mounts and its /run and /tmp.
unshare --mount --net --propagation private -- bash -c '
    set -e
    t=$1
    roots=$2
    shift 2
    r=${roots%%:*}
    # world ROOT: ROOT a mount point of its own (so that a pod'"'"'s `unshare --propagation` works
    # inside) with the host'"'"'s /dev and /sys, its own /proc, <tmp> at its path, the data dirs.
    world() {
        mount --bind "$1" "$1"
        mount --rbind /dev "$1/dev"
        mount -t proc proc "$1/proc"
        mount --rbind /sys "$1/sys"
    }
    # dirs ROOT: <tmp>, /var/lib/ceph and /var/log/ceph (after /tmp is in place).
    dirs() {
        mkdir -p "$1$t"
        mount --bind "$t" "$1$t"
        mount --bind "$t/data" "$1/var/lib/ceph"
        mount --bind "$t/varlog" "$1/var/log/ceph"
    }
    world "$r"
    mount -t tmpfs zc-run "$r/run"
    # The node'"'"'s udev database (ceph-volume 20 reads /run/udev/data/b<major>:<minor> of every
    # block device): the host'"'"'s when udevd runs here, else the test'"'"'s stand-in <tmp>/udev.
    mkdir -p "$r/run/udev"
    if [ -d /run/udev/data ]; then mount --bind /run/udev "$r/run/udev"; else mount --bind "$t/udev" "$r/run/udev"; fi
    mount -t tmpfs zc-tmp "$r/tmp"
    dirs "$r"
    others=${roots#"$r"}
    if [ -n "$others" ]; then
        mount -t tmpfs zc-roots "$r/mnt"
        for x in $(echo "${others#:}" | tr ":" " "); do
            y="$r/mnt/zc-roots/$(basename "$x")"
            mkdir -p "$y"
            mount --bind "$x" "$y"
            world "$y"
            mount --rbind "$r/run" "$y/run"
            mount --rbind "$r/tmp" "$y/tmp"
            dirs "$y"
        done
    fi
    ip link set lo up
    for ip in "$@"; do ip addr add "$ip/32" dev lo; done
    echo ready >"$t/ns-ready"
    exec chroot "$r" sleep 7200
' ns-holder "$tmp" "$roots" "$@" &
nspid=$!

for _ in $(seq 1 50); do
    [ -e "$tmp/ns-ready" ] && break
    kill -0 "$nspid" 2>/dev/null || { echo "ns-holder: the namespace did not start" >&2; break; }
    sleep 0.1
done

# members: pids (other than the namespace's own) whose mount namespace is the test's.
members() {
    local ns
    ns=$(readlink "/proc/$nspid/ns/mnt" 2>/dev/null) || return 0
    ns=${ns//[^0-9]/} # mnt:[4026532...]: -lname takes a pattern, so match the number only
    find /proc -mindepth 3 -maxdepth 3 -path '/proc/[0-9]*/ns/mnt' -lname "mnt:?$ns?" 2>/dev/null |
        awk -F/ -v self="$nspid" '$3 != self { print $3 }'
}

teardown() {
    trap '' TERM INT
    local pids loop
    # FUSE first, lazily: a stuck ceph-fuse must not keep readers hanging.
    if [ -e "/proc/$nspid" ]; then
        nsenter -t "$nspid" -m -r -w -- sh -c '
            awk -v t="$1" '\''$2 ~ "^" t && $3 ~ /^fuse/ { print $2 }'\'' /proc/self/mounts |
                while read -r m; do umount -l "$m" || true; done
        ' teardown "$tmp" 2>/dev/null || true
    fi
    # The cluster's data is thrown away: no graceful shutdown needed (daemons that lost their
    # mon would wait out their own timeouts).
    pids=$(members)
    # shellcheck disable=SC2086 # one pid per word
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
    kill -KILL "$nspid" 2>/dev/null
    wait "$nspid" 2>/dev/null
    for _ in $(seq 1 25); do
        [ -z "$(members)" ] && break
        sleep 0.2
    done
    for loop in $(losetup --list --noheadings -O NAME,BACK-FILE 2>/dev/null | awk -v t="$tmp/" 'index($2, t) == 1 { print $1 }'); do
        losetup -d "$loop" 2>/dev/null || echo "ns-holder: could not detach $loop" >&2
    done
    rm -rf -- "$tmp"
    echo down
    exit 0
}
trap teardown TERM INT

if [ -e "$tmp/ns-ready" ]; then
    echo "ns $nspid"
fi
while kill -0 "$watch" 2>/dev/null && [ ! -e "$tmp/stop" ] && kill -0 "$nspid" 2>/dev/null; do
    sleep 0.5 &
    wait $!
done
teardown
