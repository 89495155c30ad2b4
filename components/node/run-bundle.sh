# shellcheck shell=sh
# Runs a content-addressed script bundle as root: sh -c "$stub" NAME STAGED SHA256 [ARGS...].
# Every node command is this stub; the bundle it names was copied by the SSH user to STAGED.
# It installs the bundle into a root-only store, checks its sha256 and runs it as NAME ARGS.
# A bundle found in neither place (or altered) is a refusal: a delete never skips a release.
# ZCLOUD_SCRIPT_STORE moves the store (test harnesses only; sudo's env_reset drops it).
set -eu
name=$0 staged=$1 sum=$2
shift 2
store=${ZCLOUD_SCRIPT_STORE:-/var/lib/zcloud-storage/scripts}
bundle=$store/$sum.sh
me=${SUDO_UID:-$(id -u)}
intact() { [ -f "$1" ] && [ "$(sha256sum <"$1" | cut -d' ' -f1)" = "$sum" ]; }
no() { echo "zcloud: script bundle $sum: refused: $1" >&2; exit 1; }
# The staged copy is writable by the SSH user: it is copied into the root-only store first and
# the copy is checked, so nothing can swap it between the check and the run. In a home others
# can write, a planted link would feed root /dev/zero or block it on a FIFO: each part of the
# staged path must be the SSH user's (sudo's caller) and of its own type (stat follows no link),
# and the copy stops at 1 MiB (a bundle is tens of KiB; a longer copy fails the hash check).
if ! intact "$bundle"; then
	if [ -e "$staged" ] || [ -L "$staged" ]; then
		t=$(stat -c "%F %u" "${staged%%/*}" "${staged%/*}" "$staged" | tr '\n' /)
		[ "$t" = "directory $me/directory $me/regular file $me/" ] || no "$staged: not the SSH user's (uid $me) directories and file: $t"
	fi
	umask 077
	mkdir -p "$store"
	if ! head -c 1048576 2>/dev/null <"$staged" >"$bundle.$$" || ! intact "$bundle.$$"; then
		rm -f "$bundle.$$"
		no "missing or altered on this node (neither $bundle nor $staged holds it)"
	fi
	mv -f "$bundle.$$" "$bundle"
fi
exec sh -c "$(cat "$bundle")" "$name" "$@"
