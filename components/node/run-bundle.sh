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
intact() { [ -f "$1" ] && [ "$(sha256sum <"$1" | cut -d' ' -f1)" = "$sum" ]; }
# The staged copy is writable by the SSH user: it is copied into the root-only store first and
# the copy is checked, so nothing can swap it between the check and the run.
if ! intact "$bundle"; then
	umask 077
	mkdir -p "$store"
	if ! cp "$staged" "$bundle.$$" 2>/dev/null || ! intact "$bundle.$$"; then
		rm -f "$bundle.$$"
		echo "zcloud: script bundle $sum: refused: missing or altered on this node (neither $bundle nor $staged holds it)" >&2
		exit 1
	fi
	mv -f "$bundle.$$" "$bundle"
fi
exec sh -c "$(cat "$bundle")" "$name" "$@"
