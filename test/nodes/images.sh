#!/usr/bin/env bash
# The nodes tier's container images, built here from what the pinned releases are made of
# (container registries are out of reach), then pushed into the tier's local registry.
#
# Usage:
#   bash test/nodes/images.sh build               each image's layers, once per recipe, into the cache
#   bash test/nodes/images.sh push <registry>     every built image into <registry> (host:port, plain
#        HTTP) under its pinned name with the registry host replaced (as the stack's imageRegistry
#        turns the pins into references); prints "<image> <reference>" per image
# Images:
#   toolbox      busybox from Debian's busybox-static (the tier's own probes: sh, httpd, wget; not
#                its `wget -T`, which crashes in bookworm's build: `timeout 5 wget`)
#   ceph         quay.io/ceph/ceph:v20.2.4 from the Ceph tier's Debian sid chroot (20.2.4), the ceph
#                user re-numbered to quay.io's uid/gid 167 (Debian's is 64045)
#   ceph-debian  the same with Debian's 64045 (an existing stack's daemons roll from it to `ceph`)
#   topolvm      ghcr.io/topolvm/topolvm-with-sidecar:0.41.0 as upstream's Dockerfile makes it (its
#                base ubuntu:22.04 plus btrfs-progs, file, xfsprogs) on Debian bookworm minbase plus
#                the same and e2fsprogs (in ubuntu's base, not in Debian's minbase), with the drivers
#                tier's hypertopolvm and its links; of the CSI sidecars (not served here) only a
#                stand-in for livenessprobe (test/drivers/csi-call/livenessprobe, ours)
# `build` takes image names (default: all); topolvm needs the drivers build (build-drivers.sh).
# Env: ZCLOUD_NODES_CACHE (default $HOME/.cache/zcloud-storage/nodes),
#      ZCLOUD_CEPH_CACHE (default $HOME/.cache/zcloud-storage/ceph),
#      ZCLOUD_DRIVER_CACHE (default $HOME/.cache/zcloud-storage/drivers),
#      ZCLOUD_DEBIAN_MIRROR (default http://deb.debian.org/debian)
set -eu

cache=${ZCLOUD_NODES_CACHE:-$HOME/.cache/zcloud-storage/nodes}/images
ceph_root=${ZCLOUD_CEPH_CACHE:-$HOME/.cache/zcloud-storage/ceph}/sid-20.2.4
CEPH_TAG=v20.2.4
CEPH_UID=167           # quay.io/ceph/ceph's ceph user and group
DEBIAN_CEPH_UID=64045  # Debian's
TOPOLVM_TAG=0.41.0
topolvm_build=${ZCLOUD_DRIVER_CACHE:-$HOME/.cache/zcloud-storage/drivers}/topolvm-v$TOPOLVM_TAG
MIRROR=${ZCLOUD_DEBIAN_MIRROR:-http://deb.debian.org/debian}

die() { echo "images: $*" >&2; exit 1; }

# A recipe's directory: <cache>/<image>-<sha12 of this script and the sources' markers>.
recipe_dir() { # <image> <source marker file>...
  local image=$1; shift
  sum=$(cat "$0" "$@" | sha256sum | cut -c1-12)
  echo "$cache/$image-$sum"
}

toolbox_dir() { recipe_dir toolbox /bin/busybox; }
ceph_dir() { recipe_dir ceph "$ceph_root/.done"; }
livenessprobe_source=$(cd "$(dirname "$0")/../drivers/csi-call" && pwd)
topolvm_dir() { recipe_dir topolvm "$topolvm_build/hypertopolvm" "$livenessprobe_source/livenessprobe/main.go" "$livenessprobe_source/go.sum"; }

build_toolbox() {
  out=$1
  [ -x /bin/busybox ] || die "/bin/busybox is missing (Debian package busybox-static, installed by test/setup)"
  root=$out/root
  mkdir -p "$root/bin" "$root/www"
  cp /bin/busybox "$root/bin/busybox"
  for applet in sh cat echo ls sleep httpd wget hostname mkdir rm cp sha256sum date grep nc mount df touch test timeout; do
    ln -s busybox "$root/bin/$applet"
  done
  tar -C "$root" --owner 0 --group 0 --numeric-owner -czf "$out/layer.tar.gz" .
  rm -rf "$root"
}

# The chroot as one layer (docs, manuals, locales, apt's cache and the tier's own files left out),
# files of Debian's ceph uid/gid mapped to <uid>; a second layer with /etc/passwd and /etc/group
# saying the same.
ceph_layers() { # <out dir> <uid>
  out=$1 uid=$2
  printf '+%s %s:%s\n' "$DEBIAN_CEPH_UID" ceph "$uid" >"$out/ids-$uid.map"
  tar -C "$ceph_root" --numeric-owner --owner-map "$out/ids-$uid.map" --group-map "$out/ids-$uid.map" \
    --exclude ./usr/share/doc --exclude ./usr/share/man --exclude ./usr/share/locale \
    --exclude ./var/cache/apt --exclude ./var/lib/apt/lists --exclude '*.pyc' --exclude ./.done \
    --exclude ./pools.json --exclude ./rules.json --exclude ./tree.json \
    --exclude ./etc/passwd --exclude ./etc/group \
    -czf "$out/layer-$uid.tar.gz" .
  etc=$out/etc-$uid/etc
  mkdir -p "$etc"
  sed "s/^ceph:x:$DEBIAN_CEPH_UID:$DEBIAN_CEPH_UID:/ceph:x:$uid:$uid:/" "$ceph_root/etc/passwd" >"$etc/passwd"
  sed "s/^ceph:x:$DEBIAN_CEPH_UID:/ceph:x:$uid:/" "$ceph_root/etc/group" >"$etc/group"
  grep -q "^ceph:x:$uid:$uid:" "$etc/passwd" || die "the chroot's ceph user is not $DEBIAN_CEPH_UID"
  tar -C "$out/etc-$uid" --owner 0 --group 0 --numeric-owner -czf "$out/etc-$uid.tar.gz" etc
  rm -rf "$out/etc-$uid" "$out/ids-$uid.map"
}

build_ceph() {
  [ -f "$ceph_root/.done" ] || die "no Ceph chroot at $ceph_root (bash test/ceph/build-chroot.sh sid 20.2.4)"
  [ -z "$(awk -F: -v u="$CEPH_UID" '$3 == u' "$ceph_root/etc/passwd" "$ceph_root/etc/group")" ] ||
    die "uid/gid $CEPH_UID is taken in the chroot already"
  ceph_layers "$1" "$CEPH_UID"
  ceph_layers "$1" "$DEBIAN_CEPH_UID"
}

build_topolvm() {
  out=$1 root=$1/root
  [ -x "$topolvm_build/hypertopolvm" ] || die "no TopoLVM build at $topolvm_build (sh test/drivers/build-drivers.sh)"
  debootstrap --variant=minbase --include=btrfs-progs,file,xfsprogs,e2fsprogs bookworm "$root" "$MIRROR" \
    >"$out/debootstrap.log" 2>&1 || die "debootstrap bookworm failed: $(tail -n 5 "$out/debootstrap.log")"
  rm -rf "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/locale" "$root/var/cache/apt"/*.bin \
    "$root/var/cache/apt/archives"/*.deb "$root/var/lib/apt/lists"/* "$root/debootstrap"
  cp "$topolvm_build/hypertopolvm" "$root/hypertopolvm"
  for program in lvmd topolvm-node topolvm-controller topolvm-scheduler; do
    ln -s hypertopolvm "$root/$program"
  done
  # the liveness probes' server: the plugins' /healthz (port 9808) is the sidecar's
  (cd "$livenessprobe_source" && CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "-s -w" -o "$root/livenessprobe" ./livenessprobe)
  tar -C "$root" --numeric-owner -czf "$out/layer.tar.gz" .
  rm -rf "$root"
}

# Builds one image's recipe unless its .done marker is there.
ensure() { # <image> <dir>
  image=$1 out=$2 start=$(date +%s)
  if [ -f "$out/.done" ]; then
    echo "$image: cached, $(du -sh "$out" | cut -f1)"
    return 0
  fi
  rm -rf "$out"
  mkdir -p "$out"
  "build_$image" "$out"
  touch "$out/.done"
  # the image's older recipes (this script or its sources changed since): a few hundred MB each
  for old in "$cache/$image"-*; do
    [ "$old" = "$out" ] || rm -rf "$old"
  done
  echo "$image: built in $(( $(date +%s) - start ))s, $(du -sh "$out" | cut -f1)"
}

IMAGES="toolbox ceph topolvm"

build() {
  # shellcheck disable=SC2086 # the list of names
  [ $# -gt 0 ] || set -- $IMAGES
  for image in "$@"; do
    case " $IMAGES " in
      *" $image "*) ensure "$image" "$("${image}_dir")" ;;
      *) die "unknown image $image ($IMAGES)" ;;
    esac
  done
}

# Appends layers to an empty base and sets the config; blobs the registry has are not sent again.
push_image() { # <reference> <mutate flags...> -- <layer...>
  ref=$1; shift
  flags=()
  while [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift
  layers=()
  for layer in "$@"; do layers+=(--new_layer "$layer"); done
  crane append --insecure --oci-empty-base "${layers[@]}" --new_tag "$ref" >/dev/null
  crane mutate --insecure "${flags[@]}" "$ref" >/dev/null
}

push() {
  registry=$1
  for dir in "$(toolbox_dir)" "$(ceph_dir)" "$(topolvm_dir)"; do
    [ -f "$dir/.done" ] || die "$dir is not built (bash test/nodes/images.sh build)"
  done
  toolbox=$(toolbox_dir) ceph=$(ceph_dir) topolvm=$(topolvm_dir)
  ref=$registry/zcloud/toolbox:$(basename "$toolbox" | sed 's/^toolbox-//')
  push_image "$ref" --cmd /bin/sh -- "$toolbox/layer.tar.gz"
  echo "toolbox $ref"
  # Loop devices as OSDs: the tier's only, said in its report (ceph-volume refuses them otherwise).
  env=(--env CEPH_VOLUME_ALLOW_LOOP_DEVICES=true --cmd /bin/bash)
  ref=$registry/ceph/ceph:$CEPH_TAG
  push_image "$ref" "${env[@]}" -- "$ceph/layer-$CEPH_UID.tar.gz" "$ceph/etc-$CEPH_UID.tar.gz"
  echo "ceph $ref"
  ref=$registry/debian-uid/ceph/ceph:$CEPH_TAG
  push_image "$ref" "${env[@]}" -- "$ceph/layer-$DEBIAN_CEPH_UID.tar.gz" "$ceph/etc-$DEBIAN_CEPH_UID.tar.gz"
  echo "ceph-debian $ref"
  ref=$registry/topolvm/topolvm-with-sidecar:$TOPOLVM_TAG
  push_image "$ref" --entrypoint /hypertopolvm -- "$topolvm/layer.tar.gz"
  echo "topolvm $ref"
}

main() {
  case "${1:-}" in
    build) shift; build "$@" ;;
    push) [ $# -eq 2 ] || die "usage: images.sh push <registry host:port>"; push "$2" ;;
    *) die "usage: images.sh build [image...] | push <registry host:port>" ;;
  esac
}

main "$@"
