#!/bin/bash
# Make sure the VM test image exists (builds it once per version of build-image.sh, in a
# cache outside the clone like the other tiers' tools) and print its directory. test/setup
# calls it; the harness calls it again (then instant).
#
#   test/vm/ensure-image.sh            # cache in $HOME/.cache/zcloud-storage/vm
#   ZCLOUD_VM_CACHE=<dir> test/vm/ensure-image.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=${ZCLOUD_VM_CACHE:-$HOME/.cache/zcloud-storage/vm}
mkdir -p "$cache"
exec bash "$here/build-image.sh" "$(cd "$cache" && pwd)"
