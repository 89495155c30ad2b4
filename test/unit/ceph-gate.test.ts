import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as path from "node:path";
import { describe, test } from "node:test";
import { cephScriptBundle, cephScriptSetName } from "../../components/cephfs/scripts";

const script = path.join(__dirname, "../../components/node/ceph/ceph-gate.sh");
const usage =
    "usage: ceph-gate.sh mon-quorum|mgr-available --id <daemon> | osd-ok-to-stop|osd-up --host <host> | noout set|unset | mds-handover --name <mds> --fs <fs> | fs-active --fs <fs> (each with --fsid <fsid> [--timeout <s>])\n";
const fsid = ["--fsid", "0b6f2c4e-5d1a-4f3e-9c7b-2a8d1e6f4b90"];

/** The gate standalone (it sources lib.sh and ceph-lib.sh); a ceph.conf that does not exist. */
function gate(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) =>
        execFile("/bin/sh", [script, ...args], { env: { PATH: "/usr/bin:/bin", CEPH_CONF: "/nonexistent/ceph.conf" } }, (err, stdout, stderr) =>
            resolve({ code: err ? Number(err.code) : 0, stdout, stderr }),
        ),
    );
}

describe("ceph-gate.sh: bad arguments are refused (exit 2) before the cluster is asked anything", () => {
    for (const [what, args, stderr] of [
        ["no action", [], usage],
        ["an unknown action", ["restart", ...fsid], usage],
        ["noout without set|unset", ["noout", ...fsid], usage],
        ["a host gate without --host", ["osd-up", ...fsid], usage],
        ["a mon gate without --id", ["mon-quorum", ...fsid], usage],
        ["a handover without --fs", ["mds-handover", "--name", "a", ...fsid], usage],
        ["a gate without --fsid", ["mon-quorum", "--id", "a"], usage],
        ["a timeout that is not seconds", ["fs-active", "--fs", "fs", "--timeout", "10m", ...fsid], "usage: --timeout must be seconds\n"],
        ["an option without its value", ["osd-up", "--host"], "usage: --host needs a value\n"],
    ] as const) {
        test(what, async () => {
            const r = await gate([...args]);
            assert.equal(r.code, 2);
            assert.equal(r.stderr, stderr);
            assert.equal(r.stdout, "");
        });
    }

    test("valid arguments reach the cluster check: ceph.conf without an fsid is refused (exit 1), nothing asked", async () => {
        const r = await gate(["mon-quorum", "--id", "a", ...fsid]);
        assert.equal(r.code, 1);
        assert.equal(r.stderr, "zcloud: /nonexistent/ceph.conf: refused: has no fsid\n");
    });

    test("shipped as its own script set: lib.sh + ceph-lib.sh + ceph-gate.sh", () => {
        assert.deepEqual(cephScriptBundle("ceph-gate.sh").files, ["lib.sh", "ceph/ceph-lib.sh", "ceph/ceph-gate.sh"]);
        assert.equal(cephScriptSetName("fs", "ceph-gate.sh"), `ceph-fs-scripts-gate-${cephScriptBundle("ceph-gate.sh").id}`);
    });
});
