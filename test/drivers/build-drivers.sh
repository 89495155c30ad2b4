#!/bin/sh
# Builds the driver programs the rendered containers run, at the exact versions the images pin,
# from the Go module proxy, into a cache outside the clone (one directory per module version).
# Prints one line per driver: built, cached, or unavailable with the reason.
#   sh test/drivers/build-drivers.sh            build what is missing
#   ZCLOUD_DRIVER_CACHE=/some/dir sh ...        another cache root
set -eu

cache_root=${ZCLOUD_DRIVER_CACHE:-$HOME/.cache/zcloud-storage/drivers}

# TopoLVM: the image ships one binary, hypertopolvm, and links /lvmd, /topolvm-node and
# /topolvm-controller to it; it picks the program by the name it was started as.
topolvm_version=v0.41.0
topolvm_module=github.com/topolvm/topolvm

# kubernetes-csi's conformance suite, run against the CSI sockets of the started containers.
csi_sanity_version=v5.6.0
csi_sanity_module=github.com/kubernetes-csi/csi-test/v5

# Our own CSI client (test/drivers/csi-call), cached by the hash of its source.
csi_call_source=$(cd "$(dirname "$0")/csi-call" && pwd)

say() {
  echo "build-drivers: $*"
}

# The module's source at that exact version from the proxy (`go install pkg@version` would also
# ask for the module's version list, which the proxy here refuses), built with its own go.mod
# and go.sum into a fresh directory, then moved in place: a failed build leaves no half cache.
go_build() {
  dest=$1 module=$2 version=$3 package=$4 ldflags=$5
  source=$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  if [ -z "$source" ]; then
    say "$module@$version: the module proxy gave no source"
    return 1
  fi
  tmp="$dest.partial"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  started=$(date +%s)
  (cd "$source" && CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags "$ldflags" -o "$tmp/" "./$package")
  echo "$(($(date +%s) - started))" >"$tmp/build-seconds"
  rm -rf "$dest"
  mv "$tmp" "$dest"
}

build_topolvm() {
  dest="$cache_root/topolvm-$topolvm_version"
  if [ -x "$dest/hypertopolvm" ]; then
    say "topolvm $topolvm_version: cached in $dest"
    return 0
  fi
  go_build "$dest" "$topolvm_module" "$topolvm_version" cmd/hypertopolvm "-s -w -X $topolvm_module.Version=${topolvm_version#v}"
  for program in lvmd topolvm-node topolvm-controller; do
    ln -sf hypertopolvm "$dest/$program"
  done
  say "topolvm $topolvm_version: built in $(cat "$dest/build-seconds") s, $(du -k "$dest/hypertopolvm" | cut -f1) KiB"
}

build_csi_sanity() {
  dest="$cache_root/csi-sanity-$csi_sanity_version"
  if [ -x "$dest/csi-sanity" ]; then
    say "csi-sanity $csi_sanity_version: cached in $dest"
    return 0
  fi
  go_build "$dest" "$csi_sanity_module" "$csi_sanity_version" cmd/csi-sanity "-s -w"
  say "csi-sanity $csi_sanity_version: built in $(cat "$dest/build-seconds") s, $(du -k "$dest/csi-sanity" | cut -f1) KiB"
}

build_csi_call() {
  hash=$(cat "$csi_call_source/go.mod" "$csi_call_source/go.sum" "$csi_call_source/main.go" | sha256sum | cut -c1-12)
  dest="$cache_root/csi-call-$hash"
  if [ -x "$dest/csi-call" ]; then
    say "csi-call $hash: cached in $dest"
    return 0
  fi
  rm -rf "$dest.partial"
  mkdir -p "$dest.partial"
  (cd "$csi_call_source" && CGO_ENABLED=0 nice -n 10 go build -mod=readonly -trimpath -ldflags "-s -w" -o "$dest.partial/" .)
  mv "$dest.partial" "$dest"
  say "csi-call $hash: built, $(du -k "$dest/csi-call" | cut -f1) KiB"
}

# Refuses loudly: a driver this machine cannot build is named with the reason, never skipped.
report_unavailable() {
  say "$1: not built: $2"
}

main() {
  mkdir -p "$cache_root"
  build_topolvm
  build_csi_sanity
  build_csi_call
  report_unavailable "csi-driver-nfs v4.13.5 (nfsplugin)" "the Go module proxy answers 'not available' for github.com/kubernetes-csi/csi-driver-nfs"
  report_unavailable "ceph-csi v3.17.1 (cephcsi)" "the Go module proxy answers 'not available' for github.com/ceph/ceph-csi"
  report_unavailable "CSI sidecars (external-provisioner, resizer, snapshotter, livenessprobe, node-driver-registrar)" "the Go module proxy answers 'not available' for the kubernetes-csi sidecar modules"
}

main "$@"
