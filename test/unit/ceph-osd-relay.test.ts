/**
 * ceph-osd.sh relays a failed tool's log (ceph-volume prepare/activate) into the pod's log: every
 * key in it is masked, of either shape (AES-128 `AQ...==`, 40 characters; AES-256 `Ag...=`, 60,
 * what Ceph 20 generates for a new OSD). The function runs as shipped (its text from the script).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

const script = readFileSync(join(__dirname, "..", "..", "components", "node", "ceph", "ceph-osd.sh"), "utf8");
const relay = /^od_relay\(\) \{\n[\s\S]*?\n\}$/m.exec(script)![0];

test("od_relay masks AES-128 and AES-256 Ceph keys and keeps everything else", () => {
    const dir = mkdtempSync(join(tmpdir(), "zcloud-relay-"));
    try {
        const log = join(dir, "prepare.log");
        writeFileSync(log, [
            "Running command: /usr/bin/ceph-authtool /var/lib/ceph/osd/ceph-0/keyring --create-keyring --name osd.0 --add-key AgC3fwhrMR4uIiAAwhn2Uy8jHdqtB5HfahPNmiMb+Uv4rxvv4Uag6/2j6rI=",
            'stdout "osd_key": "AQC3fwhrU2YeIRAA63yWtrlsUFhXBrHSi9tCKg==",',
            "--> RuntimeError: Unable to create a new OSD id",
        ].join("\n") + "\n");
        const out = execFileSync("sh", ["-c", `${relay}\nod_relay "$1" 2>&1`, "relay", log], { encoding: "utf8" });
        assert.equal(out, [
            "  Running command: /usr/bin/ceph-authtool /var/lib/ceph/osd/ceph-0/keyring --create-keyring --name osd.0 --add-key [secret]",
            '  stdout "osd_key": "[secret]",',
            "  --> RuntimeError: Unable to create a new OSD id",
        ].join("\n") + "\n");
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
});
