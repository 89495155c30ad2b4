/**
 * ceph-mon-remove.sh's decisions on given answers (a stand-in `ceph`; the Ceph tier runs it on
 * a real three-mon cluster, test/ceph/roll.test.ts): a mon leaves the monmap only while the mons
 * that stay hold a quorum without it; a mon already gone is nothing to do; bad arguments exit 2.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, test } from "node:test";
import { writeStandInCeph, writeStandInCephConf } from "../helpers/standInCephConf";

const script = path.join(__dirname, "../../components/node/ceph/ceph-mon-remove.sh");
const fsid = "0b6f2c4e-5d1a-4f3e-9c7b-2a8d1e6f4b90";

/**
 * A stand-in `ceph`: `fsid`; `quorum_status` from a list of answers (one per call, the last one
 * repeated), each `<monmap names>|<quorum names>` (comma-separated); `mon remove <id>` recorded.
 */
function standInCeph(states: string[]): { env: Record<string, string>; calls: () => string[]; cleanup: () => void } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-mon-remove-"));
    fs.writeFileSync(path.join(dir, "ceph.conf"), `[global]\nfsid = ${fsid}\n`);
    writeStandInCephConf(dir);
    const json = (state: string) => {
        const [mons, quorum] = state.split("|").map((x) => x.split(",").filter(Boolean));
        return JSON.stringify({ quorum_names: quorum, monmap: { mons: mons.map((name) => ({ name })) } });
    };
    fs.writeFileSync(path.join(dir, "states"), states.map(json).join("\n") + "\n");
    writeStandInCeph(
        dir,
        `    fsid) echo ${fsid} ;;
    "quorum_status --format json")
        n=$(grep -c '^quorum_status' "${dir}/calls")
        line=$(sed -n "\${n}p" "${dir}/states"); [ -n "$line" ] || line=$(tail -n 1 "${dir}/states")
        echo "$line" ;;
    "mon remove "*) ;;`,
    );
    return {
        env: { PATH: `${dir}:/usr/bin:/bin`, CEPH_CONF: path.join(dir, "ceph.conf"), ZCLOUD_CEPH_KEYS: dir, ZCLOUD_CEPH_POLL: "0", ZCLOUD_CEPH_TIMEOUT: "5" },
        calls: () => fs.readFileSync(path.join(dir, "calls"), "utf8").trim().split("\n"),
        cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
    };
}

function removeMon(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) => execFile("/bin/sh", [script, ...args], { env }, (err, stdout, stderr) => resolve({ code: err ? Number(err.code) : 0, stdout, stderr })));
}

describe("ceph-mon-remove.sh", () => {
    test("three mons in the quorum: c leaves, then the quorum of a and b answers without it", async () => {
        const c = standInCeph(["a,b,c|a,b,c", "a,b,c|a,b,c", "a,b|a,b", "a,b|a,b"]);
        const r = await removeMon(["--id", "c", "--fsid", fsid], c.env);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout, "zcloud: mon.c: removed from the monmap\nzcloud: mon.c: the quorum holds without it: [a,b]\n");
        assert.deepEqual(c.calls().filter((l) => l.startsWith("mon ")), ["mon remove c"]);
        c.cleanup();
    });

    test("a mon that stays is out of the quorum: waits (bounded), then refuses naming it; nothing removed", async () => {
        const c = standInCeph(["a,b,c|a,c"]);
        // a bound the first answer always comes within, also on a loaded machine
        const r = await removeMon(["--id", "c", "--fsid", fsid, "--timeout", "4"], c.env);
        assert.equal(r.code, 3);
        assert.equal(r.stdout, "zcloud: mon.c: waiting up to 4s for the mons that stay to hold a quorum without it\n");
        assert.equal(
            r.stderr,
            "zcloud: mon.c: refused: the mons that stay would have no quorum without it (in the quorum: [a], outside it: [b]) after 4s; not removed, nothing was changed - bring those mons back (or remove a dead one by hand: ceph mon remove <id>), then run pulumi up again\n",
        );
        assert.deepEqual(c.calls().filter((l) => l.startsWith("mon ")), []);
        c.cleanup();
    });

    test("a mon that stays rejoins within the bound (it just restarted): the removal goes on", async () => {
        const c = standInCeph(["a,b,c|a,c", "a,b,c|a,c", "a,b,c|a,b,c", "a,b|a,b"]);
        const r = await removeMon(["--id", "c", "--fsid", fsid, "--timeout", "30"], c.env);
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(c.calls().filter((l) => l.startsWith("mon ")), ["mon remove c"]);
        c.cleanup();
    });

    test("the mon to remove is itself down: the others hold the quorum, so it is removed", async () => {
        const c = standInCeph(["a,b,c|a,b", "a,b|a,b"]);
        const r = await removeMon(["--id", "c", "--fsid", fsid], c.env);
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(c.calls().filter((l) => l.startsWith("mon ")), ["mon remove c"]);
        c.cleanup();
    });

    test("not in the monmap (a second run, or removed by hand): nothing to do", async () => {
        const c = standInCeph(["a|a"]);
        const r = await removeMon(["--id", "b", "--fsid", fsid], c.env);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout, "zcloud: mon.b: not in the monmap; nothing to remove\n");
        assert.deepEqual(c.calls().filter((l) => l.startsWith("mon ")), []);
        c.cleanup();
    });

    test("another cluster's ceph.conf: refused before the monmap is read", async () => {
        const c = standInCeph(["a,b,c|a,b,c"]);
        const r = await removeMon(["--id", "c", "--fsid", "11111111-2222-3333-4444-555555555555"], c.env);
        assert.equal(r.code, 1);
        assert.match(r.stderr, /^zcloud: cluster 11111111-2222-3333-4444-555555555555: refused: the admin pod's ceph.conf is of cluster 0b6f2c4e-5d1a-4f3e-9c7b-2a8d1e6f4b90, not this storage's cluster/);
        assert.equal(fs.existsSync(path.join(path.dirname(c.env.CEPH_CONF), "calls")), false, "ceph was not asked");
        c.cleanup();
    });

    for (const [what, args] of [
        ["no --id", ["--fsid", fsid]],
        ["no --fsid", ["--id", "c"]],
        ["an id that is not a mon name", ["--id", "c;reboot", "--fsid", fsid]],
        ["a timeout that is not seconds", ["--id", "c", "--fsid", fsid, "--timeout", "1m"]],
    ] as const) {
        test(`bad arguments (${what}): exit 2, nothing asked`, async () => {
            const c = standInCeph(["a,b,c|a,b,c"]);
            const r = await removeMon([...args], c.env);
            assert.equal(r.code, 2, r.stderr);
            assert.equal(fs.existsSync(path.join(path.dirname(c.env.CEPH_CONF), "calls")), false);
            c.cleanup();
        });
    }
});
