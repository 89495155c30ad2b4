#!/bin/sh
# Checks that the host has the programs the given test tiers run (the list: host-tools.txt beside
# this script). Prints one line per missing program, naming its tier and Debian package, and
# exits 1; prints nothing and exits 0 when all are there.
#   sh test/host-tools.sh <tier>...
set -eu
list=$(dirname "$0")/host-tools.txt
# Daemons and LVM live in sbin, which a non-login shell's PATH may lack; the tests call them by
# their full path or with sbin on PATH.
PATH=$PATH:/usr/sbin:/sbin

# wanted TIER...: "tier program package" lines of the list for these tiers.
wanted() {
  sed 's/#.*//' "$list" | while read -r tier program package; do
    [ -n "$tier" ] || continue
    for t in "$@"; do
      [ "$t" = "$tier" ] && echo "$tier $program $package"
    done
  done
}

wanted "$@" | {
  missing=0
  while read -r tier program package; do
    if ! command -v "$program" >/dev/null 2>&1; then
      echo "test: tier $tier needs $program (Debian package $package), which is not installed: run 'bash test/setup' (as root) first" >&2
      missing=1
    fi
  done
  exit "$missing"
}
