/**
 * Node tier: the CephFS disk commands the program plans, run over a real SSH session against real
 * loop devices, for the wipe licence: `wipe: true` covers a node's first apply only (no OSD of the
 * storage's cluster on the node yet), a `wipe` map the devices it lists, nothing a PV of another VG.
 * An OSD of the cluster is a bluestore label carrying the cluster's fsid (what cephfs-disks.sh
 * reads; the Ceph tier makes real ones with ceph-bluestore-tool).
 * Run as root: node --import tsx --test test/node/cephfs-disks.test.ts
 */
import { after, before, beforeEach, test } from "node:test";
import * as assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { NodeHarness, RunResult, assertRefused, diskAndPartition, startNodeHarness, zcloudLines } from "./harness";
import { PlannedNodeCommand, performCopies, plannedNodeCommands, removeCopiesCommand } from "../helpers/planned";

let h: NodeHarness;
let a: string;
let b: string;
const suffix = randomBytes(3).toString("hex");
/** Storage with `wipe: true`. */
const wipeFs = `fsw${suffix}`;
/** A by-id link made to b by the disk-and-partition test. */
const diskName = `ata-ZCLOUD_CEPH_DISK_${suffix}`;
/** Storage whose `wipe` map names b on node m-ab. */
const mapFs = `fsm${suffix}`;
/** Node name -> planned disk command. */
let planned: Map<string, PlannedNodeCommand>;

before(async () => {
    h = await startNodeHarness({ loops: 2 });
    [a, b] = h.loops;
    const yaml = [
        "config:",
        "  zcloud-storage:ssh:",
        "    user: root",
        `    port: ${h.port}`,
        "    privateKey: { secure: v1:nodetest }",
        "  zcloud-storage:nodes:",
        "    c-b: { address: 127.0.0.1 }",
        "    c-ab: { address: 127.0.0.2 }",
        "    m-ab: { address: 127.0.0.3 }",
        "    c-part: { address: 127.0.0.4 }",
        "  zcloud-storage:cephfs:",
        // c-part: the disk b by a by-id link and its first partition by kernel name (names the plan cannot relate)
        `    - { name: ${wipeFs}, hosts: { c-b: [${b}], c-ab: [${a}, ${b}], c-part: [/dev/disk/by-id/${diskName}, ${b}p1] }, wipe: true }`,
        `    - { name: ${mapFs}, hosts: { m-ab: [${a}, ${b}] }, wipe: { m-ab: [${b}] } }`,
        "",
    ].join("\n");
    planned = new Map((await plannedNodeCommands(yaml)).map((cmd) => [cmd.node, cmd]));
    for (const node of ["c-b", "c-ab", "m-ab", "c-part"]) {
        assert.ok(planned.get(node), `no planned disk command for node ${node}`);
    }
    // What the engine does first: each command's script copy.
    await performCopies((command, stdin) => h.run(command, stdin), [...planned.values()].map((c) => c.copy));
});
after(async () => {
    if (h) {
        await h.run(removeCopiesCommand([...planned.values()].map((c) => c.copy)));
        h.close();
    }
});
beforeEach(() => h.reset());

function apply(node: string): Promise<RunResult> {
    return h.run(planned.get(node)!.create);
}

function ok(r: RunResult): void {
    assert.equal(r.code, 0, `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
    assert.equal(r.stderr, "");
}

/** The fsid the node's planned command passes (the storage's cluster). */
function fsidOf(node: string): string {
    const m = / --fsid ([0-9a-f-]+) /.exec(planned.get(node)!.create);
    assert.ok(m, "no --fsid in the planned command");
    return m[1];
}

/** A u32 little-endian length and the bytes: how the bluestore label stores a string. */
const lengthPrefixed = (text: string) => {
    const len = Buffer.alloc(4);
    len.writeUInt32LE(text.length);
    return Buffer.concat([len, Buffer.from(text)]);
};

/** Writes a bluestore label of cluster `fsid`, osd.`whoami`, at the start of `dev`. */
function writeOsdLabel(dev: string, fsid: string, whoami: string): void {
    const label = Buffer.concat([
        Buffer.from("bluestore block device\n"),
        lengthPrefixed("ceph_fsid"),
        lengthPrefixed(fsid),
        lengthPrefixed("whoami"),
        lengthPrefixed(whoami),
    ]);
    const file = path.join(os.tmpdir(), `zcloud-label-${suffix}`);
    fs.writeFileSync(file, label);
    try {
        h.local("dd", [`if=${file}`, `of=${dev}`, "conv=notrunc", "status=none"]);
    } finally {
        fs.rmSync(file, { force: true });
    }
}

function signatures(dev: string): string {
    return h.local("wipefs", ["--noheadings", "--output", "TYPE", dev]).split(/\s+/).filter(Boolean).join(",");
}

const noById = (dev: string) => [`zcloud: ${dev}: no /dev/disk/by-id name, using ${dev}`, `zcloud-device: ${dev} ${dev}`];

test("wipe: true wipes on the node's first apply (no OSD of the cluster on it yet), saying so first", async () => {
    h.local("mkfs.ext4", ["-q", "-F", b]);
    const r = await apply("c-b");
    ok(r);
    assert.deepEqual(zcloudLines(r.stdout), [
        `zcloud: ${b}: may be wiped (wipe: true, no OSD of this cluster on this node yet)`,
        `zcloud: ${b}: wiped signatures (ext4)`,
        `zcloud: ${b}: ready for a new OSD`,
        ...noById(b),
    ]);
    assert.equal(signatures(b), "");
});

test("a disk and its own partition under two names: the partition is refused, even with wipe: true, before anything changes", async () => {
    const { refusal } = diskAndPartition(h, b, diskName);
    assertRefused(await apply("c-part"), refusal);
    assert.equal(signatures(b), "gpt,gpt,PMBR");
});

test("wipe: true is no standing licence: once the node holds an OSD of the cluster, a device with a filesystem is refused", async () => {
    writeOsdLabel(a, fsidOf("c-ab"), "0");
    h.local("mkfs.ext4", ["-q", "-F", b]);
    const r = await apply("c-ab");
    assertRefused(
        r,
        `zcloud: ${b}: refused: carries signatures (ext4); this node already holds OSDs of this cluster, so only a device listed under wipe.c-ab may be wiped`,
    );
    assert.equal(signatures(b), "ext4");
    assert.equal(signatures(a), "ceph_bluestore");
});

test("a device listed under wipe.<node> is wiped next to an existing OSD; a PV of another VG with volumes never is", async () => {
    writeOsdLabel(a, fsidOf("m-ab"), "0");
    h.local("mkfs.ext4", ["-q", "-F", b]);
    const r = await apply("m-ab");
    ok(r);
    assert.deepEqual(zcloudLines(r.stdout), [
        `zcloud: ${a}: already osd.0 of this cluster; left as it is`,
        ...noById(a),
        `zcloud: ${b}: may be wiped (listed under wipe.m-ab)`,
        `zcloud: ${b}: wiped signatures (ext4)`,
        `zcloud: ${b}: ready for a new OSD`,
        ...noById(b),
    ]);
    assert.equal(signatures(b), "");

    const other = `other-${suffix}`;
    h.local("vgcreate", ["-q", other, b]);
    h.local("lvcreate", ["--driverloaded", "n", "-an", "-Zn", "-L", "8m", "-n", "data", other]);
    assertRefused(await apply("m-ab"), `zcloud: ${b}: refused: is a PV of another VG (${other})`);
    assert.equal(h.local("lvs", ["--noheadings", "-o", "lv_name", other]).trim(), "data");
});
