import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, test } from "node:test";
import { cephLibraryBundle, cephScriptBundle, cephScriptSetName } from "../../components/cephfs/scripts";
import { writeStandInCeph, writeStandInCephConf } from "../helpers/standInCephConf";

const script = path.join(__dirname, "../../components/node/ceph/ceph-gate.sh");
const usage =
    "usage: ceph-gate.sh roll-start | mon-quorum|mgr-available --id <daemon> | osd-ok-to-stop|osd-up --host <host> [--osds <n>] | noout set|unset | mds-handover --name <mds> --fs <fs> | fs-active --fs <fs> [--name <mds>] (each with --fsid <fsid> [--timeout <s>])\n";
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

    test("shipped as its own script set: ceph-gate.sh, run after the storage's library (lib.sh + ceph-lib.sh)", () => {
        assert.deepEqual(cephScriptBundle("ceph-gate.sh").files, ["ceph/ceph-gate.sh"]);
        assert.deepEqual(cephLibraryBundle().files, ["lib.sh", "ceph/ceph-lib.sh"]);
        assert.equal(cephScriptSetName("fs", "ceph-gate.sh"), `ceph-fs-scripts-gate-${cephScriptBundle("ceph-gate.sh").id}`);
    });
});

/**
 * A stand-in `ceph` on PATH (the gate's decisions on given answers; the Ceph tier runs it on real
 * daemons): `fsid`, an osd tree with host n1 holding osd.0 and osd.1, and `osd ok-to-stop`
 * answering from a list, one answer per call (`<exit>|<text>`), the last one repeated; `answers`:
 * more commands (`<args>` -> stdout), taking precedence.
 */
function standInCeph(okToStop: string[], fsDump: object = {}, quorum: object = {}, answers: Record<string, string> = {}): { env: Record<string, string>; calls: () => string[]; cleanup: () => void } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-gate-"));
    fs.writeFileSync(path.join(dir, "ceph.conf"), `[global]\nfsid = ${fsid[1]}\n`);
    writeStandInCephConf(dir);
    fs.writeFileSync(path.join(dir, "answers"), okToStop.join("\n") + "\n");
    const tree = JSON.stringify({ nodes: [{ id: -2, name: "n1", type: "host", children: [1, 0] }, { id: 0, name: "osd.0", type: "osd" }, { id: 1, name: "osd.1", type: "osd" }] });
    writeStandInCeph(
        dir,
        `${Object.entries(answers).map(([k, v]) => `    "${k}") echo '${v}' ;;`).join("\n")}
    fsid) echo ${fsid[1]} ;;
    "osd tree --format json") echo '${tree}' ;;
    "fs dump --format json") echo '${JSON.stringify(fsDump)}' ;;
    "quorum_status --format json") echo '${JSON.stringify(quorum)}' ;;
    "health detail") echo "HEALTH_WARN 1 filesystem has no standby" ;;
    "osd ok-to-stop 0 1")
        a=$(grep -c 'ok-to-stop' "${dir}/calls")
        line=$(sed -n "\${a}p" "${dir}/answers"); [ -n "$line" ] || line=$(tail -n 1 "${dir}/answers")
        printf '%b\\n' "\${line#*|}" >&2
        exit "\${line%%|*}" ;;`,
    );
    return {
        env: { PATH: `${dir}:/usr/bin:/bin`, CEPH_CONF: path.join(dir, "ceph.conf"), ZCLOUD_CEPH_KEYS: dir, ZCLOUD_CEPH_POLL: "0" },
        calls: () => fs.readFileSync(path.join(dir, "calls"), "utf8").trim().split("\n"),
        cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
    };
}

function gateWith(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) =>
        execFile("/bin/sh", [script, ...args], { env }, (err, stdout, stderr) => resolve({ code: err ? Number(err.code) : 0, stdout, stderr })),
    );
}

describe("ceph-gate.sh osd-ok-to-stop: EAGAIN is asked again within the bound, a refusal is final", () => {
    test("EAGAIN twice (no PG stats after a manager restart), then yes: passes", async () => {
        const c = standInCeph(["11|Error EAGAIN: 12 pgs have unknown state; cannot draw any conclusions", "11|Error EAGAIN: 12 pgs have unknown state; cannot draw any conclusions", "0|"]);
        const r = await gateWith(["osd-ok-to-stop", "--host", "n1", ...fsid], c.env);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout, "zcloud: host n1: waiting up to 600s for Ceph to answer ok-to-stop (EAGAIN)\nzcloud: host n1: osd 0,1 ok to stop\n");
        assert.equal(c.calls().filter((l) => l === "osd ok-to-stop 0 1").length, 3);
        c.cleanup();
    });

    test("EBUSY: refused at once with Ceph's reason, asked once", async () => {
        const c = standInCeph(["16|Error EBUSY: unsafe to stop osd(s) at this time (12 PGs are or would become offline)"]);
        const r = await gateWith(["osd-ok-to-stop", "--host", "n1", ...fsid], c.env);
        assert.equal(r.code, 1);
        assert.match(r.stderr, /host n1: refused: stopping osd 0,1 would make placement groups inactive: Error EBUSY: unsafe to stop osd\(s\) at this time \(12 PGs are or would become offline\) - not restarted\n$/);
        assert.equal(c.calls().filter((l) => l === "osd ok-to-stop 0 1").length, 1);
        c.cleanup();
    });

    // Ceph's answer when a placement group is inactive (peering) as the gate asks: the report on
    // stdout, one line of JSON, then the error (Ceph 20.2.4, the nodes tier's roll)
    const busy = (report: object) => `16|${JSON.stringify({ ok_to_stop: false, ok_to_upgrade: false, osds: [0, 1], num_ok_pgs: 42, ...report })}\\nError EBUSY: unsafe to stop osd(s) at this time (1 PGs are or would become offline)`;
    const alreadyInactive = busy({ num_not_ok_pgs: 1, bad_already_inactive: ["3.1f"] });

    test("EBUSY only for placement groups inactive already (peering), none that stopping makes inactive: asked again, passes once Ceph says yes", async () => {
        const c = standInCeph([alreadyInactive, alreadyInactive, "0|"]);
        const r = await gateWith(["osd-ok-to-stop", "--host", "n1", ...fsid], c.env);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(
            r.stdout,
            "zcloud: host n1: waiting up to 600s for placement groups 3.1f, inactive already (peering?), to be active; stopping this host's OSDs would make no other inactive\nzcloud: host n1: osd 0,1 ok to stop\n",
        );
        assert.equal(c.calls().filter((l) => l === "osd ok-to-stop 0 1").length, 3);
        c.cleanup();
    });

    test("EBUSY for a placement group stopping would make inactive, besides one inactive already: refused at once, asked once", async () => {
        const c = standInCeph([busy({ num_not_ok_pgs: 2, bad_already_inactive: ["3.1f"], bad_become_inactive: ["2.7"] })]);
        const r = await gateWith(["osd-ok-to-stop", "--host", "n1", ...fsid], c.env);
        assert.equal(r.code, 1);
        assert.match(r.stderr, /host n1: refused: stopping osd 0,1 would make placement groups inactive: \{.*"bad_become_inactive":\["2\.7"\]\} Error EBUSY: .* - not restarted\n$/);
        assert.equal(c.calls().filter((l) => l === "osd ok-to-stop 0 1").length, 1);
        c.cleanup();
    });

    test("a report Ceph could not draw a conclusion from (ambiguous placement groups) or one the gate cannot read: refused at once", async () => {
        for (const answer of [busy({ num_not_ok_pgs: 1, bad_already_inactive: ["3.1f"], ambiguous_pgs: ["3.2"] }), "16|{not json\\nError EBUSY: unsafe to stop osd(s) at this time (1 PGs are or would become offline)"]) {
            const c = standInCeph([answer]);
            const r = await gateWith(["osd-ok-to-stop", "--host", "n1", ...fsid], c.env);
            assert.equal(r.code, 1, answer);
            assert.match(r.stderr, /host n1: refused: stopping osd 0,1 would make placement groups inactive: /, answer);
            assert.equal(c.calls().filter((l) => l === "osd ok-to-stop 0 1").length, 1, answer);
            c.cleanup();
        }
    });

    test("placement groups inactive already until the bound runs out: refused, naming them, with Ceph's answer", async () => {
        const c = standInCeph([alreadyInactive]);
        const r = await gateWith(["osd-ok-to-stop", "--host", "n1", ...fsid, "--timeout", "0"], c.env);
        assert.equal(r.code, 1);
        assert.match(r.stderr, /host n1: refused: placement groups 3\.1f still inactive after 0s \(see ceph health detail\): \{.*"bad_already_inactive":\["3\.1f"\]\} Error EBUSY: unsafe to stop osd\(s\) at this time \(1 PGs are or would become offline\) - not restarted\n$/);
        c.cleanup();
    });

    test("EAGAIN until the bound runs out: refused with Ceph's last answer", async () => {
        const c = standInCeph(["11|Error EAGAIN: 12 pgs have unknown state; cannot draw any conclusions"]);
        const r = await gateWith(["osd-ok-to-stop", "--host", "n1", ...fsid, "--timeout", "0"], c.env);
        assert.equal(r.code, 1);
        assert.match(r.stderr, /host n1: refused: stopping osd 0,1 would make placement groups inactive: Error EAGAIN: 12 pgs have unknown state; cannot draw any conclusions - not restarted\n$/);
        c.cleanup();
    });
});

describe("ceph-gate.sh fs-active --name: the restarted mds must be back before the next handover", () => {
    const fsMap = (standbys: string[]) => ({ standbys: standbys.map((name) => ({ name })), filesystems: [{ mdsmap: { fs_name: "fs", info: { gid_1: { name: "b", state: "up:active" } } } }] });

    test("back as a standby: passes", async () => {
        const c = standInCeph(["0|"], fsMap(["a"]));
        const r = await gateWith(["fs-active", "--fs", "fs", "--name", "a", ...fsid], c.env);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout, "zcloud: fs fs: active\nzcloud: mds.a: in the fs map\n");
        c.cleanup();
    });

    test("not back when the bound runs out: exit 3 naming the mds, with the health detail", async () => {
        const c = standInCeph(["0|"], fsMap([]));
        const r = await gateWith(["fs-active", "--fs", "fs", "--name", "a", ...fsid, "--timeout", "0"], c.env);
        assert.equal(r.code, 3);
        assert.match(r.stderr, /mds\.a: refused: not back in the fs map after 0s: mds\.a is not in the fs map \(daemons: \[b\]\) - health: HEALTH_WARN 1 filesystem has no standby/);
        c.cleanup();
    });
});

describe("ceph-gate.sh mon-quorum: the mon and every other mon of the monmap in the quorum", () => {
    const status = (quorum: string[], monmap: string[]) => ({ quorum_names: quorum, monmap: { mons: monmap.map((name) => ({ name })) } });

    test("a new cluster: mon a alone in its monmap and quorum passes (b and c join later)", async () => {
        const c = standInCeph(["0|"], {}, status(["a"], ["a"]));
        const r = await gateWith(["mon-quorum", "--id", "a", ...fsid], c.env);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout, "zcloud: mon.a: in the quorum\n");
        c.cleanup();
    });

    test("mon b back but mon c out of the quorum: waits (restarting c's neighbour would lose it), then times out naming both", async () => {
        const c = standInCeph(["0|"], {}, status(["a", "b"], ["a", "b", "c"]));
        const r = await gateWith(["mon-quorum", "--id", "b", ...fsid, "--timeout", "0"], c.env);
        assert.equal(r.code, 3);
        assert.match(r.stderr, /mon\.b: refused: not in the quorum after 0s: quorum is \[a b\], not in it: \[c\] - health: /);
        c.cleanup();
    });
});

describe("ceph-gate.sh roll-start: before the roll's first restart, every mon in the quorum, no OSD down but in, every PG active", () => {
    const quorum = (q: string[], monmap: string[]) => ({ quorum_names: q, monmap: { mons: monmap.map((name) => ({ name })) } });
    const tree = (down: number[] = [], out: number[] = []) =>
        JSON.stringify({
            nodes: [
                { id: -2, name: "n1", type: "host", children: [1, 0] },
                { id: -3, name: "n2", type: "host", children: [2] },
                ...[0, 1, 2].map((id) => ({ id, name: `osd.${id}`, type: "osd", status: down.includes(id) ? "down" : "up", reweight: out.includes(id) ? 0 : 1 })),
            ],
        });
    const pgs = (active: number, inactive = 0) =>
        JSON.stringify({ pg_summary: { num_pgs: active + inactive, num_pg_by_state: [{ name: "active+clean", num: active }, ...(inactive ? [{ name: "peering", num: inactive }] : [])] } });
    const dump = (flags: string) => `epoch 40\nfsid ${fsid[1]}\nflags ${flags}\n`;
    const run = (answers: Record<string, string>, q = quorum(["a", "b", "c"], ["a", "b", "c"]), extra: string[] = []) => {
        const c = standInCeph(["0|"], {}, q, { "osd dump": dump("sortbitwise,recovery_deletes"), "osd tree --format json": tree(), "pg stat --format json": pgs(97), ...answers });
        return { c, result: gateWith(["roll-start", ...fsid, ...extra], c.env) };
    };
    const noout = " - noout stays set (a stopped OSD is not marked out, its data not copied elsewhere) until a pulumi up gets past this storage's noout-unset gate; by hand, once every OSD is up: ceph osd unset noout (in an admin pod)";

    test("healthy: passes, saying what it checked", async () => {
        const { c, result } = run({});
        const r = await result;
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout, `zcloud: cluster ${fsid[1]}: every mon in the quorum [a b c], no OSD down but in, every placement group active: the roll may start\n`);
        c.cleanup();
    });

    test("a mon out of the quorum: refused at once naming it (restarting another would lose the quorum); nothing else asked", async () => {
        const { c, result } = run({}, quorum(["a", "c"], ["a", "b", "c"]));
        const r = await result;
        assert.equal(r.code, 1);
        assert.equal(
            r.stderr,
            `zcloud: cluster ${fsid[1]}: refused: mon b not in the quorum [a c]: restarting another mon now could lose the quorum - bring it back first (its pod's log, ceph health detail), then run pulumi up again; no daemon was restarted\n`,
        );
        assert.ok(!c.calls().some((l) => l.startsWith("pg stat") || l.startsWith("osd tree")), c.calls().join("; "));
        c.cleanup();
    });

    test("an OSD down but in: refused at once naming it and its host; one down and out is no refusal", async () => {
        const { c, result } = run({ "osd tree --format json": tree([1]) });
        const r = await result;
        assert.equal(r.code, 1);
        assert.match(r.stderr, new RegExp(`^zcloud: cluster ${fsid[1]}: refused: osd\\.1 \\(host n1\\) down but in: its placement groups miss a copy, so the OSD roll would stop at the next host's ok-to-stop - bring it back \\(or mark it out, ceph osd out <id>, and let the data recover\\) first, then run pulumi up again; no daemon was restarted\n$`));
        c.cleanup();
        const out = run({ "osd tree --format json": tree([2], [2]) });
        assert.equal((await out.result).code, 0);
        out.c.cleanup();
    });

    test("placement groups not active when the bound runs out: exit 3 with the count and the health detail", async () => {
        const { c, result } = run({ "pg stat --format json": pgs(90, 7) }, undefined, ["--timeout", "0"]);
        const r = await result;
        assert.equal(r.code, 3);
        assert.match(r.stderr, new RegExp(`^zcloud: cluster ${fsid[1]}: refused: placement groups not active after 0s: 7 placement groups are not active - health: HEALTH_WARN`));
        c.cleanup();
    });

    test("noout set (a roll that stopped midway): it passes saying so; a refusal says noout stays set and how to clear it", async () => {
        const set = { "osd dump": dump("noout,sortbitwise,recovery_deletes") };
        const passed = run(set);
        const r = await passed.result;
        assert.equal(r.code, 0, r.stderr);
        assert.equal(
            r.stdout.split("\n")[1],
            `zcloud: cluster ${fsid[1]}: noout is set (a roll that stopped before its noout-unset gate?): this roll's noout-unset gate clears it when the OSDs roll; else, once every OSD is up: ceph osd unset noout`,
        );
        passed.c.cleanup();
        const refused = run(set, quorum(["a", "c"], ["a", "b", "c"]));
        const f = await refused.result;
        assert.equal(f.code, 1);
        assert.ok(f.stderr.endsWith(`no daemon was restarted${noout}\n`), f.stderr);
        refused.c.cleanup();
        // the OSD gates between noout set and unset say it as well
        const host = standInCeph(["16|Error EBUSY: unsafe to stop osd(s) at this time (12 PGs are or would become offline)"], {}, {}, set);
        const h = await gateWith(["osd-ok-to-stop", "--host", "n1", ...fsid], host.env);
        assert.equal(h.code, 1);
        assert.ok(h.stderr.endsWith(`- not restarted${noout}\n`), h.stderr);
        host.cleanup();
    });
});

describe("ceph-gate.sh osd-up --osds: a host's new OSDs count only once they are in the CRUSH map", () => {
    test("host n1 holds 2 OSDs, 3 declared: waits, then exit 3 saying how many are there; never passes on the ones it has", async () => {
        const c = standInCeph(["0|"], {}, {}, { "osd dump": "epoch 3\nflags sortbitwise\nosd.0 up   in  weight 1\nosd.1 up   in  weight 1", "pg stat --format json": JSON.stringify({ pg_summary: { num_pgs: 1, num_pg_by_state: [{ name: "active+clean", num: 1 }] } }) });
        const r = await gateWith(["osd-up", "--host", "n1", "--osds", "3", ...fsid, "--timeout", "0"], c.env);
        assert.equal(r.code, 3);
        assert.match(r.stderr, /^zcloud: host n1 \(osd 0,1\): refused: not up with all placement groups active after 0s: host n1 holds 2 of its 3 OSDs in the CRUSH map - health: /);
        const two = await gateWith(["osd-up", "--host", "n1", "--osds", "2", ...fsid, "--timeout", "0"], c.env);
        assert.equal(two.code, 0, two.stderr);
        assert.equal(two.stdout, "zcloud: host n1: osd 0,1 up and in, all placement groups active\n");
        c.cleanup();
    });

    test("--osds that is not a count: usage, exit 2", async () => {
        const r = await gate(["osd-up", "--host", "n1", "--osds", "two", ...fsid]);
        assert.equal(r.code, 2);
        assert.equal(r.stderr, "usage: --osds must be a count\n");
    });
});

describe("ceph-gate.sh: no answer from the cluster (mons electing after a restart or join)", () => {
    test("waits within the bound, then exit 3 saying so; nothing else asked", async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-gate-"));
        fs.writeFileSync(path.join(dir, "ceph.conf"), `[global]\nfsid = ${fsid[1]}\n`);
        writeStandInCephConf(dir);
        fs.writeFileSync(path.join(dir, "ceph"), `#!/bin/sh\nwhile [ "\${1#--}" != "$1" ]; do shift 2; done\necho "$*" >>"${dir}/calls"\nexit 1\n`, { mode: 0o755 });
        const r = await gateWith(["mon-quorum", "--id", "b", ...fsid, "--timeout", "0"], { PATH: `${dir}:/usr/bin:/bin`, CEPH_CONF: path.join(dir, "ceph.conf"), ZCLOUD_CEPH_KEYS: dir, ZCLOUD_CEPH_POLL: "0" });
        assert.equal(r.code, 3);
        assert.equal(r.stderr, `zcloud: cluster ${fsid[1]}: refused: no answer from the cluster after 0s (no mon quorum?); nothing was changed\n`);
        assert.deepEqual(fs.readFileSync(path.join(dir, "calls"), "utf8").trim().split("\n"), ["fsid"]);
        fs.rmSync(dir, { recursive: true, force: true });
    });
});
