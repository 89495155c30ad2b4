#!/bin/sh
# writer.sh CONF KEYFILE POOL DIR: client I/O during a roll. Until DIR/stop exists: 64 KiB of
# random data, its sha256, `rados put roll-<n>`; each acknowledged put appends
# "roll-<n> <sha256> <start> <end>" (unix times) to DIR/manifest, a failed one "failed roll-<n>
# <exit>". Objects are never rewritten: each name is written once.
set -eu
conf=$1 keyfile=$2 pool=$3 dir=$4
n=0
while [ ! -e "$dir/stop" ]; do
    head -c 65536 /dev/urandom >"$dir/w"
    sum=$(sha256sum "$dir/w" | cut -d' ' -f1)
    start=$(date +%s.%N)
    if rados --conf "$conf" --name client.admin --keyfile "$keyfile" -p "$pool" put "roll-$n" "$dir/w"; then
        echo "roll-$n $sum $start $(date +%s.%N)" >>"$dir/manifest"
    else
        echo "failed roll-$n $?" >>"$dir/manifest"
    fi
    n=$((n + 1))
done
