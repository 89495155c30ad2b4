#!/bin/sh
# Unpacks Debian's prometheus package (promtool and the Prometheus server) into the cache outside
# the clone, once per version, and points `current` at it. Nothing is installed on the host: no
# service, no user, nothing started. test/setup runs it after `apt-get update`; the monitoring
# tier reads <cache>/current/usr/bin (test/monitoring/tools.ts).
#
#   sh test/monitoring/ensure-prometheus.sh            # cache in $HOME/.cache/zcloud-storage/prometheus
#   ZCLOUD_PROMETHEUS_DIR=<dir> sh test/monitoring/ensure-prometheus.sh
set -eu

cache=${ZCLOUD_PROMETHEUS_DIR:-$HOME/.cache/zcloud-storage/prometheus}

# candidate: the version apt would install (bookworm's, with its security updates).
candidate() {
    apt-cache policy prometheus | sed -n 's/^  Candidate: //p'
}

# unpack VERSION: downloads that version's .deb and extracts it into <cache>/<version>.
unpack() {
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    chmod 755 "$work" # apt downloads as its own user where it can
    (cd "$work" && apt-get download -q "prometheus=$1" >/dev/null)
    mkdir -p "$work/root"
    dpkg-deb -x "$work"/prometheus_*.deb "$work/root"
    rm -rf "${cache:?}/$1"
    mkdir -p "$cache"
    mv "$work/root" "$cache/$1"
}

version=$(candidate)
if [ -z "$version" ] || [ "$version" = "(none)" ]; then
    echo "ensure-prometheus: apt knows no prometheus package (run apt-get update first)" >&2
    exit 1
fi
if [ ! -x "$cache/$version/usr/bin/promtool" ]; then
    unpack "$version"
fi
ln -sfn "$version" "$cache/current"
"$cache/current/usr/bin/promtool" --version 2>&1 | head -n 1
