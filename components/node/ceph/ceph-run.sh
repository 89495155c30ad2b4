# shellcheck shell=sh
# Runs a Ceph script set in a CephFS pod: sh -c "$runner" DIR/NAME.sh LIBRARY_SHA256 SET_SHA256
# [ARGS...]. DIR (the pod's scripts volume) holds the storage's shared library, ceph-library.sh
# (lib.sh + ceph-lib.sh, from its immutable ConfigMap), and the set, NAME.sh (from its own); the
# container command carries only this runner (comments and indentation dropped). It checks both
# files' sha256 against the hashes the pod template carries and runs library + set as NAME ARGS.
# A missing or altered library or set: a refusal before anything runs.
set -eu
dir=${0%/*} file=${0##*/}
name=${file%.sh}
die() {
	echo "zcloud: $name: refused: $1; nothing was run" >&2
	exit 1
}
check() {
	[ -s "$dir/$1" ] || die "$dir/$1 is missing or empty (its script-set ConfigMap is not mounted)"
	got=$(sha256sum <"$dir/$1")
	[ "${got%% *}" = "$2" ] || die "$dir/$1 is not the script set $2 the pod was made with (altered)"
}
check ceph-library.sh "$1"
check "$file" "$2"
shift 2
exec sh -c "$(cat "$dir/ceph-library.sh" "$dir/$file")" "$name" "$@"
