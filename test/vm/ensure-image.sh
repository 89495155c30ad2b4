#!/bin/bash
# Make sure the VM test image exists (builds it once per checkout and script
# version) and print its directory. CI calls this before the VM tier.
#
#   test/vm/ensure-image.sh            # cache in <checkout>/.cache/vm
#   ZCLOUD_VM_CACHE=<dir> test/vm/ensure-image.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=${ZCLOUD_VM_CACHE:-$here/../../.cache/vm}
mkdir -p "$cache"
exec bash "$here/build-image.sh" "$(cd "$cache" && pwd)"
