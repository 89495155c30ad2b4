import * as fs from "node:fs";
import * as path from "node:path";

/**
 * A stand-in `ceph-conf` (`-c FILE --lookup KEY`, the one call ceph-lib.sh makes) beside the
 * stand-in `ceph`: the Ceph image carries the real one (Debian's ceph-common), the host of the
 * fast tiers does not. It reads `key = value` from [global], with Ceph's equivalence of spaces
 * and underscores in keys, and exits 1 when the key is absent, as ceph-conf does; test/ceph/
 * checks it against the real one on the ceph.conf the program renders.
 */
export function writeStandInCephConf(dir: string): void {
    fs.writeFileSync(
        path.join(dir, "ceph-conf"),
        `#!/bin/sh
[ "$#" -eq 4 ] && [ "$1" = -c ] && [ "$3" = --lookup ] || { echo "stand-in ceph-conf: unexpected: $*" >&2; exit 2; }
awk -v key="$4" '
    function norm(s) { gsub(/[ _]+/, "_", s); return s }
    /^[ \\t]*\\[/ { in_global = ($0 ~ /^[ \\t]*\\[global\\][ \\t]*$/); next }
    in_global && index($0, "=") {
        k = substr($0, 1, index($0, "=") - 1); v = substr($0, index($0, "=") + 1)
        gsub(/^[ \\t]+|[ \\t]+$/, "", k); gsub(/^[ \\t]+|[ \\t]+$/, "", v)
        if (norm(k) == norm(key)) { print v; found = 1; exit }
    }
    END { exit !found }' "$2"
`,
        { mode: 0o755 },
    );
}

/**
 * A stand-in `ceph` in `dir` for the Ceph scripts' unit tests: drops the leading options
 * (`--conf`, `--name`, `--keyfile`, `--connect-timeout`, each with its value), records the rest
 * as one line in `dir/calls`, answers by `cases` (shell `case "$*" in` branches), and fails on any
 * other call.
 */
export function writeStandInCeph(dir: string, cases: string): void {
    fs.writeFileSync(
        path.join(dir, "ceph"),
        `#!/bin/sh
while [ "\${1#--}" != "$1" ]; do shift 2; done
echo "$*" >>"${dir}/calls"
case "$*" in
${cases}
    *) echo "unexpected: $*" >&2; exit 1 ;;
esac
`,
        { mode: 0o755 },
    );
}
