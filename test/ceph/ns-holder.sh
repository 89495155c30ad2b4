#!/bin/bash
# shellcheck disable=SC2016 # the inner scripts expand their own arguments
# ns-holder.sh <tmp> <watch-pid> <mon-ip>...: the private world of one Ceph test cluster, and its
# teardown.
#
# Starts a process in a new private mount and network namespace in which <tmp>/data is
# /var/lib/ceph and <tmp>/varlog is /var/log/ceph (ceph-volume hard-codes both) and the loopback
# also carries each <mon-ip> (the mon Services' ClusterIPs of the plans), prints `ns <pid>` once it is
# ready, and stays until <watch-pid> exits or <tmp>/stop appears (or SIGTERM/SIGINT). Then it
# tears everything down, whatever state the test left: every process in that namespace
# (daemons, ceph-fuse, scripts) is killed; the namespace and all
# its mounts (binds, OSD tmpfs, FUSE) go with its last process; loop devices backed by files
# under <tmp> are detached; <tmp> is removed. Prints `down` when done.
set -u

tmp=$1
watch=$2
if [ ! -d "$tmp" ] || [ -z "$watch" ] || [ -z "${3:-}" ]; then
    echo "usage: ns-holder.sh <tmp> <watch-pid> <mon-ip>..." >&2
    exit 2
fi
shift 2

unshare --mount --net --propagation private -- bash -c '
    set -e
    mount --bind "$1/data" /var/lib/ceph
    mount --bind "$1/varlog" /var/log/ceph
    ip link set lo up
    t=$1
    shift
    for ip in "$@"; do ip addr add "$ip/32" dev lo; done
    echo ready >"$t/ns-ready"
    exec sleep 7200
' ns-holder "$tmp" "$@" &
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
        nsenter -t "$nspid" -m -- sh -c '
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
