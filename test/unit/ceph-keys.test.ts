/**
 * ceph-keys.sh (docs/cephfs.md "Key rotation") before it asks the cluster anything: bad arguments
 * are refused (exit 2), and `replace` refuses a key file that holds no AES-256 key (exit 1). What
 * it does on a cluster is proven on real Ceph by test/ceph/upgrade.test.ts.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, test } from "node:test";
import { cephKey } from "../../components/cephfs/cluster";

const script = path.join(__dirname, "../../components/node/ceph/ceph-keys.sh");
const usage = "usage: ceph-keys.sh daemons | replace <entity> <role> --key-file <file> [--fs <fs>] [--admin-key-file <file>] | finish\n";

/** The script standalone, with no `ceph` on PATH: anything that reached the cluster would fail otherwise. */
function keys(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) =>
        execFile("/bin/sh", [script, ...args], { env: { PATH: "/usr/bin:/bin", CEPH_CONF: "/nonexistent/ceph.conf", ZCLOUD_CEPH_KEYS: "/nonexistent" } }, (err, stdout, stderr) =>
            resolve({ code: err ? Number(err.code) : 0, stdout, stderr }),
        ),
    );
}

describe("ceph-keys.sh refuses before asking the cluster", () => {
    for (const [what, args, stderr] of [
        ["no action", [], usage],
        ["an unknown action", ["rotate"], usage],
        ["daemons with an argument", ["daemons", "osd.0"], usage],
        ["replace without --key-file", ["replace", "client.admin", "admin"], usage],
        ["replace of a daemon entity", ["replace", "osd.0", "admin", "--key-file", "/dev/null"], "usage: entity 'osd.0' must be client.<id> or mon.\n"],
        ["replace with an unknown role", ["replace", "client.x", "root", "--key-file", "/dev/null"], "usage: unknown role root (admin, mon, mgr, mds, bootstrap-osd, csi)\n"],
        ["csi without --fs", ["replace", "client.csi", "csi", "--key-file", "/dev/null"], "usage: role csi needs --fs\n"],
    ] as const) {
        test(what, async () => {
            const r = await keys([...args]);
            assert.deepEqual([r.code, r.stderr, r.stdout], [2, stderr, ""]);
        });
    }

    test("replace with an AES-128 key: refused, nothing asked", async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-keys-"));
        try {
            const file = path.join(dir, "admin");
            fs.writeFileSync(file, cephKey(randomBytes(16).toString("base64")) + "\n", { mode: 0o600 });
            const r = await keys(["replace", "client.admin", "admin", "--key-file", file]);
            assert.deepEqual([r.code, r.stderr, r.stdout], [1, `zcloud: client.admin: refused: ${file} holds no AES-256 key; nothing was changed\n`, ""]);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
