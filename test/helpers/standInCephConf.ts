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
