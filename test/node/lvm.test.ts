/**
 * Node tier: the LVM disk commands the program plans, run over a real SSH session against real
 * loop devices; every step asserts the real LVM and signature state afterwards.
 * Run as root: node --import tsx --test test/node/lvm.test.ts
 */
import { after, before, beforeEach, test } from "node:test";
import * as assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { NodeHarness, RunResult, assertRefused, diskAndPartition, localLvmStack, startNodeHarness, zcloudLines } from "./harness";
import { PlannedNodeCommand, performCopies, plannedNodeCommands, removeCopiesCommand } from "../helpers/planned";

let h: NodeHarness;
let a: string;
let b: string;
let c: string;
const suffix = randomBytes(3).toString("hex");
/** Storage without wipe; its VG is what most tests reconcile. */
const storage = `nodetest-${suffix}`;
const vg = `zcloud-${storage}`;
/** Storage with `wipe: true`, for the refusals that wipe must not lift. */
const wipeStorage = `nodetestwipe-${suffix}`;
const wipeVg = `zcloud-${wipeStorage}`;
/** Storage whose `wipe` names one device of one node. */
const mapStorage = `nodetestmap-${suffix}`;
const mapVg = `zcloud-${mapStorage}`;
/** This machine's identity: the stamp the script puts on the VGs it makes. */
const machine = readFileSync("/etc/machine-id", "utf8").trim();
/** Another machine's identity, for a VG made elsewhere (a shared LUN, a disk moved over). */
const otherMachine = "0123456789abcdef0123456789abcdef";
const missing = `/dev/zcloud-nodetest-missing-${suffix}`;
const wwnName = `wwn-0xzcloudtest${suffix}`;
const ataName = `ata-ZCLOUD_TEST_${suffix}`;
const scsiName = `scsi-ZCLOUD_TEST_${suffix}`;
const diskName = `ata-ZCLOUD_DISK_${suffix}`;
/** Node name -> planned disk command. */
let planned: Map<string, PlannedNodeCommand>;

/**
 * One stack file plans every device list the tests need: each list is its own "node" (all of
 * them this host, over the test sshd), and all nodes of a storage share its VG, so running node
 * X's command reconciles the VG to X's device list. One plan run for the whole file.
 */
function stackYaml(hosts: Record<string, string[]>, wipeHosts: Record<string, string[]>, mapHosts: Record<string, string[]>): string {
    return localLvmStack(h.port, [
        { name: storage, hosts, wipe: false },
        { name: wipeStorage, hosts: wipeHosts, wipe: true },
        { name: mapStorage, hosts: mapHosts, wipe: { "m-bc": [c] } },
    ]);
}

before(async () => {
    h = await startNodeHarness({ loops: 3 });
    [a, b, c] = h.loops;
    const byId = (n: string) => `/dev/disk/by-id/${n}`;
    const hosts = {
        "n-a": [a],
        "n-ab": [a, b],
        "n-b": [b],
        "n-c": [c],
        "n-abc": [a, b, c],
        "n-dup": [a, byId(wwnName)],
        "n-byid": [byId(ataName), b, c],
        "n-missing": [missing],
    };
    // the disk by a by-id link and its first partition by kernel name: names the plan cannot relate
    const wipeHosts = { "w-b": [b], "w-bc": [b, c], "w-bpart": [byId(diskName), `${b}p1`] };
    const mapHosts = { "m-b": [b], "m-bc": [b, c] };
    const cmds = await plannedNodeCommands(stackYaml(hosts, wipeHosts, mapHosts));
    planned = new Map(cmds.map((cmd) => [cmd.node, cmd]));
    for (const [node, st] of [
        ...Object.keys(hosts).map((n) => [n, storage]),
        ...Object.keys(wipeHosts).map((n) => [n, wipeStorage]),
        ...Object.keys(mapHosts).map((n) => [n, mapStorage]),
    ]) {
        const cmd = planned.get(node);
        assert.ok(cmd, `no planned disk command for node ${node}`);
        assert.equal(cmd.name, `${st}-${node}-disks`);
        assert.equal(cmd.storage, st);
    }
    // What the engine does first: each command's script copy (one bundle for all of them here).
    await performCopies((command, stdin) => h.run(command, stdin), cmds.map((c) => c.copy));
});
after(async () => {
    if (h) {
        await h.run(removeCopiesCommand([...planned.values()].map((c) => c.copy)));
        h.close();
    }
});
beforeEach(() => h.reset());

/** Runs the planned create (also what an update runs): reconciles that storage's VG to the node's device list. */
async function apply(node: string): Promise<RunResult> {
    return h.run(planned.get(node)!.create);
}

/** Runs the planned delete of the no-wipe storage. */
async function release(): Promise<RunResult> {
    return h.run(planned.get("n-a")!.delete);
}

function ok(r: RunResult): void {
    assert.equal(r.code, 0, `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
    assert.equal(r.stderr, "");
}

const refused = assertRefused;

/** PV -> VG name ("" for a PV in no VG), as the test's LVM view sees it. */
function pvs(): Record<string, string> {
    const out = h.local("pvs", ["--noheadings", "--separator", "|", "-o", "pv_name,vg_name"]);
    const map: Record<string, string> = {};
    for (const line of out.split("\n").map((l) => l.trim()).filter(Boolean)) {
        const [pv, owner] = line.split("|");
        map[pv] = owner ?? "";
    }
    return map;
}

/** vg_seqno: grows with every metadata change of the VG. */
function seqno(): number {
    return Number(h.local("vgs", ["--noheadings", "-o", "vg_seqno", vg]).trim());
}

function vgExists(name: string): boolean {
    return h.local("vgs", ["--noheadings", "-o", "vg_name"]).split(/\s+/).includes(name);
}

function lvs(): string[] {
    return h.local("lvs", ["--noheadings", "-o", "lv_name", vg]).split(/\s+/).filter(Boolean);
}

/** The VG's LVM tags, sorted. */
function tags(name: string): string[] {
    return h.local("vgs", ["--noheadings", "-o", "vg_tags", name]).trim().split(",").filter(Boolean).sort();
}

const stamp = (node: string, by = machine) => [`zcloud.machine=${by}`, `zcloud.node=${node}`];

/** Signature types wipefs finds on dev, comma separated ("" when clean). */
function signatures(dev: string): string {
    return h.local("wipefs", ["--noheadings", "--output", "TYPE", dev]).split(/\s+/).filter(Boolean).join(",");
}

function noById(dev: string): string[] {
    return [`zcloud: ${dev}: no /dev/disk/by-id name, using ${dev}`, `zcloud-device: ${dev} ${dev}`];
}

/** An LV record without device-mapper (no activation, no zeroing), optionally on one PV. */
function makeLv(name: string, pv?: string): void {
    h.local("lvcreate", ["--driverloaded", "n", "-an", "-Zn", "-L", "8m", "-n", name, vg, ...(pv ? [pv] : [])]);
}

test("harness: root over the test sshd, stdin reaches the remote command, one string is one command", async () => {
    const r = await h.run(`id -u; cat; printf '%s\\n' "$LVM_SYSTEM_DIR" | grep -c zcloud-node-`, "from stdin\n");
    ok(r);
    assert.equal(r.stdout, "0\nfrom stdin\n1\n");
});

test("apply on a clean device creates the PV and the VG, stamped with this machine and the node", async () => {
    const r = await apply("n-a");
    ok(r);
    assert.deepEqual(zcloudLines(r.stdout), [...noById(a), `zcloud: VG ${vg}: created with ${a}`]);
    assert.deepEqual(pvs(), { [a]: vg });
    assert.equal(signatures(a), "LVM2_member");
    assert.deepEqual(tags(vg), stamp("n-a"));
});

test("a VG stamped by another machine is neither adopted, extended nor released", async () => {
    h.local("vgcreate", ["-q", "--addtag", `zcloud.machine=${otherMachine}`, "--addtag", "zcloud.node=node1", vg, a]);
    h.local("lvcreate", ["--driverloaded", "n", "-an", "-Zn", "-L", "8m", "-n", "data", vg]);
    const seq = seqno();
    const line = `zcloud: VG ${vg}: refused: is stamped by another machine (zcloud.machine=${otherMachine}, zcloud.node=node1; this machine is ${machine}); a node never adopts or releases another node's VG`;
    refused(await apply("n-a"), line);
    refused(await apply("n-ab"), line);
    refused(await release(), line);
    assert.equal(seqno(), seq);
    assert.deepEqual(pvs(), { [a]: vg });
    assert.equal(signatures(b), "");
    assert.deepEqual(lvs(), ["data"]);
});

test("a VG without a stamp (made by the previous program) is stamped in place on the next apply, data untouched", async () => {
    h.local("vgcreate", ["-q", vg, a]);
    makeLv("data");
    const seq = seqno();
    const r = await apply("n-a");
    ok(r);
    assert.deepEqual(zcloudLines(r.stdout), [
        ...noById(a),
        `zcloud: ${a}: in VG ${vg}, no change`,
        `zcloud: VG ${vg}: had no machine stamp (made before stamping); stamped zcloud.machine=${machine} zcloud.node=n-a, metadata only`,
    ]);
    assert.deepEqual(tags(vg), stamp("n-a"));
    assert.equal(seqno(), seq + 1);
    assert.deepEqual(lvs(), ["data"]);
    assert.deepEqual(pvs(), { [a]: vg });
    // Stamped once: the next run is a no-change run.
    assert.deepEqual(zcloudLines((await apply("n-a")).stdout).slice(-1), [`zcloud: VG ${vg}: no change`]);
    assert.equal(seqno(), seq + 1);
});

test("re-running apply prints no-change decisions and changes nothing", async () => {
    ok(await apply("n-a"));
    const before = { pvs: pvs(), seq: seqno() };
    for (let i = 0; i < 2; i++) {
        const r = await apply("n-a");
        ok(r);
        assert.deepEqual(zcloudLines(r.stdout), [...noById(a), `zcloud: ${a}: in VG ${vg}, no change`, `zcloud: VG ${vg}: no change`]);
    }
    assert.deepEqual(pvs(), before.pvs);
    assert.equal(seqno(), before.seq);
});

test("adding a device extends the VG", async () => {
    ok(await apply("n-a"));
    const seq = seqno();
    const r = await apply("n-ab");
    ok(r);
    assert.deepEqual(zcloudLines(r.stdout), [
        ...noById(a),
        ...noById(b),
        `zcloud: ${a}: in VG ${vg}, no change`,
        `zcloud: VG ${vg}: extended with ${b}`,
    ]);
    assert.deepEqual(pvs(), { [a]: vg, [b]: vg });
    assert.ok(seqno() > seq);
});

test("removing a device reduces the VG and wipes the device", async () => {
    ok(await apply("n-ab"));
    const r = await apply("n-b");
    ok(r);
    assert.deepEqual(zcloudLines(r.stdout), [
        ...noById(b),
        `zcloud: ${b}: in VG ${vg}, no change`,
        `zcloud: ${a}: no longer listed: removed from VG ${vg}, PV removed, wiped`,
    ]);
    assert.deepEqual(pvs(), { [b]: vg });
    assert.equal(signatures(a), "");
});

test("removing a device that holds extents is refused and changes nothing", async () => {
    ok(await apply("n-ab"));
    makeLv("lv1", a);
    const seq = seqno();
    const r = await apply("n-b");
    refused(r, `zcloud: ${a}: refused: is no longer listed but holds allocated extents of VG ${vg} (8388608 bytes); move or remove its LVs first`);
    assert.deepEqual(pvs(), { [a]: vg, [b]: vg });
    assert.equal(seqno(), seq);
    assert.deepEqual(lvs(), ["lv1"]);
});

test("a device with a filesystem signature is refused and left untouched unless wipe", async () => {
    h.local("mkfs.ext4", ["-q", "-F", b]);
    const r = await apply("n-b");
    refused(r, `zcloud: ${b}: refused: carries signatures (ext4); set wipe: true or list the device under wipe.n-b to allow wiping it`);
    assert.equal(signatures(b), "ext4");
    assert.deepEqual(pvs(), {});

    const w = await apply("w-b");
    ok(w);
    assert.deepEqual(zcloudLines(w.stdout), [
        ...noById(b),
        `zcloud: ${b}: may be wiped (wipe: true, VG ${wipeVg} is created by this run)`,
        `zcloud: ${b}: wiped signatures (ext4)`,
        `zcloud: VG ${wipeVg}: created with ${b}`,
    ]);
    assert.deepEqual(pvs(), { [b]: wipeVg });
    assert.equal(signatures(b), "LVM2_member");
});

test("wipe: true is no standing licence: a device with a filesystem added to an existing VG is refused, its data kept", async () => {
    ok(await apply("w-b"));
    h.local("mkfs.ext4", ["-q", "-F", c]);
    h.local("debugfs", ["-w", "-R", "mkdir keep-me", c]);
    const seq = Number(h.local("vgs", ["--noheadings", "-o", "vg_seqno", wipeVg]).trim());
    const r = await apply("w-bc");
    refused(r, `zcloud: ${c}: refused: carries signatures (ext4); VG ${wipeVg} exists on this node, so only a device listed under wipe.w-bc may be wiped`);
    assert.equal(signatures(c), "ext4");
    assert.match(h.local("debugfs", ["-R", "ls -l /", c]), /keep-me/);
    assert.deepEqual(pvs(), { [b]: wipeVg });
    assert.equal(Number(h.local("vgs", ["--noheadings", "-o", "vg_seqno", wipeVg]).trim()), seq);
});

test("a device listed under wipe.<node> is wiped when it joins an existing VG; a device not listed is not", async () => {
    h.local("mkfs.ext4", ["-q", "-F", b]);
    refused(await apply("m-b"), `zcloud: ${b}: refused: carries signatures (ext4); set wipe: true or list the device under wipe.m-b to allow wiping it`);
    h.local("wipefs", ["-q", "-a", b]);
    ok(await apply("m-b"));
    h.local("mkfs.ext4", ["-q", "-F", c]);
    const r = await apply("m-bc");
    ok(r);
    assert.deepEqual(zcloudLines(r.stdout), [
        ...noById(b),
        ...noById(c),
        `zcloud: ${b}: in VG ${mapVg}, no change`,
        `zcloud: ${c}: may be wiped (listed under wipe.m-bc)`,
        `zcloud: ${c}: wiped signatures (ext4)`,
        `zcloud: VG ${mapVg}: extended with ${c}`,
    ]);
    assert.deepEqual(pvs(), { [b]: mapVg, [c]: mapVg });
});

test("a mounted device is refused even with wipe", async () => {
    const at = h.mountExt4(b);
    const r = await apply("w-b");
    refused(r, `zcloud: ${b}: refused: ${b} is mounted at ${at}`);
    assert.equal(signatures(b), "ext4");
    assert.deepEqual(pvs(), {});
    assert.ok(h.local("findmnt", ["-n", "-o", "SOURCE", at]).includes(b));
});

test("a device with a mounted partition is refused even with wipe", async () => {
    const [p1] = h.partition(b);
    const at = h.mountExt4(p1);
    const r = await apply("w-b");
    refused(r, `zcloud: ${b}: refused: ${p1} is mounted at ${at}`);
    assert.equal(signatures(b), "gpt,gpt,PMBR");
    assert.equal(signatures(p1), "ext4");
    assert.deepEqual(pvs(), {});
});

test("a disk and its own partition under two names: the partition is refused, even with wipe, before anything changes", async () => {
    const { refusal } = diskAndPartition(h, b, diskName);
    refused(await apply("w-bpart"), refusal);
    assert.equal(signatures(b), "gpt,gpt,PMBR");
    assert.deepEqual(pvs(), {});
});

test("a device with a partition that is an LVM PV is refused even with wipe", async () => {
    const [, p2] = h.partition(b);
    h.local("pvcreate", ["-q", p2]);
    const r = await apply("w-b");
    refused(r, `zcloud: ${b}: refused: partition ${p2} is an LVM PV`);
    assert.deepEqual(pvs(), { [p2]: "" });
    assert.equal(signatures(b), "gpt,gpt,PMBR");
});

test("a partition table alone is a signature: refused unless wipe", async () => {
    h.partition(b);
    refused(await apply("n-b"), `zcloud: ${b}: refused: carries signatures (gpt,gpt,PMBR); set wipe: true or list the device under wipe.n-b to allow wiping it`);
    assert.deepEqual(pvs(), {});
});

test("a PV of another VG, with or without volumes, is refused even with wipe", async () => {
    const other = `other-${suffix}`;
    h.local("vgcreate", ["-q", other, b]);
    refused(await apply("w-b"), `zcloud: ${b}: refused: is a PV of another VG (${other})`);
    h.local("lvcreate", ["--driverloaded", "n", "-an", "-Zn", "-L", "8m", "-n", "data", other]);
    refused(await apply("w-b"), `zcloud: ${b}: refused: is a PV of another VG (${other})`);
    refused(await apply("m-bc"), `zcloud: ${b}: refused: is a PV of another VG (${other})`);
    assert.deepEqual(pvs(), { [b]: other });
    assert.equal(h.local("lvs", ["--noheadings", "-o", "lv_name", other]).trim(), "data");
});

test("a Ceph OSD (bluestore label) is refused even with wipe", async () => {
    h.local("sh", ["-c", `printf 'bluestore block device\\n' | dd of=${b} conv=notrunc status=none`]);
    assert.equal(signatures(b), "ceph_bluestore");
    const r = await apply("w-b");
    refused(r, `zcloud: ${b}: refused: is a Ceph OSD (bluestore label)`);
    assert.equal(signatures(b), "ceph_bluestore");
    assert.deepEqual(pvs(), {});
});

test("a missing path is refused", async () => {
    const r = await apply("n-missing");
    refused(r, `zcloud: ${missing}: refused: does not exist`);
    assert.ok(!vgExists(vg));
});

test("a run whose second device fails changes nothing", async () => {
    h.local("vgcreate", ["-q", `other-${suffix}`, b]);
    const r = await apply("n-abc");
    refused(r, `zcloud: ${b}: refused: is a PV of another VG (other-${suffix})`);
    assert.equal(signatures(a), "");
    assert.equal(signatures(c), "");
    assert.ok(!vgExists(vg));

    // the same with the VG in place: the first (new) device is not added either
    ok(await apply("n-c"));
    const seq = seqno();
    refused(await apply("n-abc"), `zcloud: ${b}: refused: is a PV of another VG (other-${suffix})`);
    assert.equal(seqno(), seq);
    assert.equal(signatures(a), "");
    assert.deepEqual(pvs(), { [b]: `other-${suffix}`, [c]: vg });
});

test("the same device listed twice (path and by-id link) is refused", async () => {
    const link = h.byIdLink(wwnName, a);
    const r = await apply("n-dup");
    refused(r, `zcloud: ${link}: refused: listed twice (as ${a})`);
    assert.deepEqual(pvs(), {});
});

test("devices are reported by stable /dev/disk/by-id names, wwn- first", async () => {
    const ata = h.byIdLink(ataName, a);
    const wwn = h.byIdLink(wwnName, a);
    h.byIdLink(`lvm-pv-uuid-zcloudtest${suffix}`, b);
    const scsi = h.byIdLink(scsiName, c);
    const r = await apply("n-byid");
    ok(r);
    assert.deepEqual(zcloudLines(r.stdout), [
        `zcloud-device: ${ata} ${wwn}`,
        ...noById(b),
        `zcloud-device: ${c} ${scsi}`,
        `zcloud: VG ${vg}: created with ${a} ${b} ${c}`,
    ]);
    assert.deepEqual(pvs(), { [a]: vg, [b]: vg, [c]: vg });
});

test("a link to /dev/zero planted as the staged bundle (not yet installed): the stub refuses at once over SSH, nothing runs; the real copy then runs", async () => {
    const copy = planned.get("n-a")!.copy;
    // As on a node whose store lacks the bundle (first run, or emptied) and whose home others can write.
    await h.run(`rm -rf "$ZCLOUD_SCRIPT_STORE" && rm -f '${copy.remotePath}' && ln -s /dev/zero '${copy.remotePath}'`);
    const started = Date.now();
    const r = await apply("n-a");
    refused(r, `zcloud: script bundle ${copy.sha256}: refused: ${copy.remotePath}: not the SSH user's (uid 0) directories and file: directory 0/directory 0/symbolic link 0/`);
    assert.ok(Date.now() - started < 10_000, "refused without reading /dev/zero");
    assert.deepEqual(pvs(), {});
    await h.run(`rm -f '${copy.remotePath}'`);
    await performCopies((command, stdin) => h.run(command, stdin), [copy]);
    ok(await apply("n-a"));
    assert.deepEqual(pvs(), { [a]: vg });
});

test("release refuses while an LV exists and leaves the VG intact", async () => {
    ok(await apply("n-ab"));
    makeLv("lv1");
    const seq = seqno();
    const r = await release();
    refused(r, `zcloud: VG ${vg}: refused: holds logical volumes (lv1); remove them first`);
    assert.equal(seqno(), seq);
    assert.deepEqual(lvs(), ["lv1"]);
    assert.deepEqual(pvs(), { [a]: vg, [b]: vg });
});

test("release after the LV is gone removes the VG and wipes its PVs; releasing again is a no-op", async () => {
    ok(await apply("n-ab"));
    makeLv("lv1");
    h.local("lvremove", ["-q", "-y", `${vg}/lv1`]);
    const r = await release();
    ok(r);
    // The VG goes first, then each of its PVs in the order LVM lists them (by name: /dev/loop10
    // before /dev/loop9), which need not be the config's order.
    const [vgLine, ...pvLines] = zcloudLines(r.stdout);
    assert.equal(vgLine, `zcloud: VG ${vg}: removed`);
    assert.deepEqual(pvLines.sort(), [`zcloud: ${a}: PV removed, wiped`, `zcloud: ${b}: PV removed, wiped`].sort());
    assert.ok(!vgExists(vg));
    assert.deepEqual(pvs(), {});
    assert.equal(signatures(a), "");
    assert.equal(signatures(b), "");

    const again = await release();
    ok(again);
    assert.deepEqual(zcloudLines(again.stdout), [`zcloud: VG ${vg}: does not exist, nothing to release`]);
});
