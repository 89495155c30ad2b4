/**
 * Node tier: `npm run discover` over real SSH (a sandbox sshd node on 127.0.0.1 with its own LVM
 * view) against loop devices in every state the guards know, and proof that nothing on the node
 * changes: lsblk, blkid, wipefs, LVM reports, LVM's own files, mounts and the bytes at both ends
 * of every device are the same before and after.
 * Run as root: node --import tsx --test test/node/discover.test.ts
 */
import { after, before, test } from "node:test";
import * as assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as yaml from "js-yaml";
import { SandboxNode, startNodes, stopNodes } from "../engine/nodes";
import { freePort } from "../helpers/net";
import { ToolRun, runTool, stackForNodes } from "../helpers/day2";
import { lvmQuiet, partitionsOf, sh, tryRun } from "../helpers/sshNode";

const suffix = randomBytes(3).toString("hex");
const vg = `zcdisc${suffix}`;
const partVg = `zcdiscp${suffix}`;
const wwn = `wwn-0xzcloudday2${suffix}`;
const missing = `/dev/disk/by-id/zcloud-missing-${suffix}`;
let dir: string;
let node: SandboxNode;
let lvmEnv: NodeJS.ProcessEnv;
let mountDir: string;
let link: string;
const madeDirs: string[] = [];
/** Device roles -> loop device. */
const dev: Record<string, string> = {};
const roles = ["clean", "spare", "ext4", "inVg", "mounted", "gpt", "ceph", "pvPartition", "hostile"] as const;
/** A by-id link whose name holds a terminal escape and a bidi override, as a node can report one. */
const hostileName = `zcloud-esc-${suffix}\u001b[31m\u202e`;
const hostileLink = path.join("/dev/disk/by-id", hostileName);
let stackFile: string;
let json: ToolRun;
let table: ToolRun;
let before_: Snapshot;

interface DiscoveredJson {
    nodes: Record<string, { devices: Array<{ path: string; byId: string[]; size: number; verdict: string; reason: string | null; declaredBy: string[] }>; error?: string }>;
    proposal: string;
}

type Snapshot = Record<string, unknown>;

function tryOut(cmd: string, args: string[], env?: NodeJS.ProcessEnv): string {
    try {
        return sh(cmd, args, env);
    } catch (e) {
        const err = e as { status?: number; stdout?: string };
        return `exit ${err.status}: ${err.stdout ?? ""}`;
    }
}

/** sha256 of the first 8 MiB and the last 1 MiB of a device (labels, GPT copies, LVM metadata). */
function ends(device: string): string[] {
    const fd = fs.openSync(device, "r");
    try {
        const size = Number(sh("blockdev", ["--getsize64", device]).trim());
        const hash = (len: number, at: number) => {
            const buf = Buffer.alloc(len);
            fs.readSync(fd, buf, 0, len, at);
            return createHash("sha256").update(buf).digest("hex");
        };
        return [hash(8 << 20, 0), hash(1 << 20, size - (1 << 20))];
    } finally {
        fs.closeSync(fd);
    }
}

function listFiles(root: string): string[] {
    return fs.readdirSync(root, { recursive: true, withFileTypes: true }).map((e) => `${path.relative(root, path.join(e.parentPath, e.name))}${e.isFile() ? ` ${fs.statSync(path.join(e.parentPath, e.name)).mtimeMs}` : ""}`).sort();
}

/** Everything discover could have changed on the node. */
function snapshot(): Snapshot {
    const devices = [...node.devices, ...node.devices.flatMap(partitionsOf)];
    const lvmDir = lvmEnv.LVM_SYSTEM_DIR!;
    return {
        lsblk: sh("lsblk", ["-J", "-b", "-O", ...node.devices]),
        blkid: devices.map((d) => tryOut("blkid", ["-p", "-o", "export", d])),
        wipefs: devices.map((d) => sh("wipefs", ["--noheadings", "--output", "DEVICE,OFFSET,TYPE,UUID", d])),
        pvs: sh("pvs", ["--noheadings", "-o", "pv_name,vg_name,pv_uuid,pv_mda_count,dev_size"], lvmEnv),
        vgs: sh("vgs", ["--noheadings", "-o", "vg_name,vg_uuid,vg_seqno,vg_free"], lvmEnv),
        lvmFiles: listFiles(lvmDir),
        mounts: fs.readFileSync("/proc/self/mountinfo", "utf8").split("\n").filter((l) => l.includes(mountDir)),
        ends: node.devices.map(ends),
    };
}

before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-discover-"));
    const nodes = await startNodes(dir, 1, roles.length, 64);
    node = nodes.node1;
    lvmEnv = { ...process.env, ...lvmQuiet, LVM_SYSTEM_DIR: path.join(dir, "nodes", "node1", "lvm") };
    roles.forEach((r, i) => (dev[r] = node.devices[i]));

    for (const d of ["/dev/disk", "/dev/disk/by-id"]) {
        if (!fs.existsSync(d)) {
            fs.mkdirSync(d);
            madeDirs.push(d);
        }
    }
    link = path.join("/dev/disk/by-id", wwn);
    fs.symlinkSync(path.relative("/dev/disk/by-id", dev.clean), link);
    fs.symlinkSync(path.relative("/dev/disk/by-id", dev.hostile), hostileLink);

    sh("mkfs.ext4", ["-q", "-F", dev.ext4]);
    sh("pvcreate", ["-q", dev.inVg], lvmEnv);
    sh("vgcreate", ["-q", vg, dev.inVg], lvmEnv);
    sh("mkfs.ext4", ["-q", "-F", dev.mounted]);
    mountDir = path.join(dir, "mnt");
    fs.mkdirSync(mountDir);
    // Read-only: a mounted ext4 writes on its own (lazy inode table init), which is not ours to check.
    sh("mount", ["-o", "ro", dev.mounted, mountDir]);
    for (const d of [dev.gpt, dev.pvPartition]) {
        execFileSync("sfdisk", ["-q", d], { input: "label: gpt\n,24M\n,\n", stdio: ["pipe", "ignore", "pipe"] });
        sh("partx", ["-a", d]);
    }
    sh("pvcreate", ["-q", `${dev.pvPartition}p1`], lvmEnv);
    sh("vgcreate", ["-q", partVg, `${dev.pvPartition}p1`], lvmEnv);
    const fd = fs.openSync(dev.ceph, "r+");
    fs.writeSync(fd, Buffer.from(`bluestore block device\n${randomBytes(16).toString("hex")}\n`), 0, undefined, 0);
    fs.closeSync(fd);

    // A second node that does not answer (nothing listens on its port) and a third that is the
    // same sshd reached without a pinned key.
    const deadPort = await freePort();
    // node3 is node1's sshd again under its name "localhost" (the plan refuses two node names on
    // one address and port), with no pinned key.
    const nodesInStack = { node1: node, node2: { ...node, port: deadPort }, node3: { ...node, address: "localhost" } };
    const lvm = ["  zcloud-storage:lvm:", "    - name: fast", "      hosts:", `        node1: [${link}, ${missing}]`];
    stackFile = path.join(dir, "Pulumi.discover.yaml");
    fs.writeFileSync(stackFile, stackForNodes(nodesInStack, lvm, ["node3"]));

    const key = path.join(dir, "id_ed25519");
    before_ = snapshot();
    json = await runTool("discover", [stackFile, "--identity", key, "--json", "--min-size", "16MiB"]);
    table = await runTool("discover", [stackFile, "--identity", key, "--node", "node1"]);
});

after(() => {
    if (mountDir) {
        tryRun("umount", [mountDir]);
    }
    if (link) {
        fs.rmSync(link, { force: true });
        fs.rmSync(hostileLink, { force: true });
    }
    for (const d of madeDirs.reverse()) {
        tryRun("rmdir", [d]);
    }
    if (dir) {
        stopNodes(dir);
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

function parsed(): DiscoveredJson {
    return JSON.parse(json.stdout) as DiscoveredJson;
}

function device(role: (typeof roles)[number]) {
    const found = parsed().nodes.node1.devices.find((d) => d.path === dev[role]);
    assert.ok(found, `${role} (${dev[role]}) not listed:\n${json.stdout}`);
    return found;
}

test("exit 2 with the unreachable and the unpinned node reported, the reachable node listed", () => {
    assert.equal(json.code, 2, json.stderr);
    const out = parsed();
    assert.deepEqual(Object.keys(out.nodes), ["node1", "node2", "node3"]);
    assert.match(out.nodes.node2.error ?? "", /^unreachable: .*(Connection refused|connect to host)/);
    assert.equal(out.nodes.node3.error, "host key not pinned (ssh.hostKeys.node3); pin it, or pass --accept-unpinned to trust the key the host shows");
    assert.equal(out.nodes.node1.error, undefined);
});

test("every device with its facts and the guard's verdict", () => {
    const clean = device("clean");
    assert.deepEqual(clean.byId, [link]);
    assert.equal(clean.size, 64 * 1024 * 1024);
    assert.deepEqual([clean.verdict, clean.reason, clean.declaredBy], ["clean", null, ["lvm fast"]]);
    assert.deepEqual([device("spare").verdict, device("spare").reason], ["clean", null]);
    const notClean = (role: (typeof roles)[number], reason: string) => assert.deepEqual([device(role).verdict, device(role).reason], ["not clean", reason], role);
    notClean("ext4", "carries signatures (ext4); set wipe: true to allow wiping them");
    notClean("inVg", `is a PV of another VG (${vg})`);
    notClean("mounted", `${dev.mounted} is mounted at ${mountDir}`);
    notClean("gpt", "carries signatures (gpt,gpt,PMBR); set wipe: true to allow wiping them");
    notClean("ceph", "is a Ceph OSD (bluestore label)");
    notClean("pvPartition", `partition ${dev.pvPartition}p1 is an LVM PV of VG ${partVg}`);
    const root = parsed().nodes.node1.devices.find((d) => systemDisk(d.path));
    assert.ok(root, "the system disk is listed");
    assert.match(root.reason ?? "", /^system disk \(holds \/.*\)$/);
});

/** The device that holds / (the test machine's own disk). */
function systemDisk(p: string): boolean {
    return sh("lsblk", ["-n", "-r", "-o", "MOUNTPOINTS", p]).split("\n").includes("/");
}

test("the proposal lists the clean devices by stable name, the declared one marked", () => {
    const lines = parsed().proposal.split("\n");
    assert.equal(lines[0], "hosts:");
    assert.equal(lines[1], "  node1:");
    assert.ok(lines.includes(`    - ${link}  # already declared: lvm fast`), parsed().proposal);
    assert.ok(lines.includes(`    - ${dev.spare}`), parsed().proposal);
    for (const role of ["ext4", "inVg", "mounted", "gpt", "ceph", "pvPartition"] as const) {
        assert.ok(!lines.some((l) => l.endsWith(` ${dev[role]}`)), `${role} proposed`);
    }
});

test("table: default minimum size calls 64 MiB devices too small; declared-but-missing is named", () => {
    assert.equal(table.code, 0, table.stderr);
    const row = table.stdout.split("\n").find((l) => l.trimStart().startsWith(`${dev.spare} `));
    assert.ok(row, table.stdout);
    assert.match(row, /not clean: too small \(64 MiB < 1 GiB\)$/);
    assert.ok(table.stdout.includes(`  declared but missing on the node: ${missing} (lvm fast)`), table.stdout);
    assert.ok(!table.stdout.includes("node2"), "--node limits the nodes contacted");
});

test("a by-id name with terminal escapes: exact in --json, quoted in the proposal, escaped in the table", () => {
    assert.deepEqual(device("hostile").byId, [hostileLink]);
    const proposal = parsed().proposal;
    assert.ok(proposal.split("\n").includes(`    - "/dev/disk/by-id/zcloud-esc-${suffix}\\u001b[31m\\u202e"`), proposal);
    assert.ok((yaml.load(proposal) as { hosts: Record<string, string[]> }).hosts.node1.includes(hostileLink), "the proposal reads back exactly");
    const row = table.stdout.split("\n").find((l) => l.trimStart().startsWith(`${dev.hostile} `));
    assert.ok(row, table.stdout);
    assert.match(row, new RegExp(` zcloud-esc-${suffix}\\\\x1b\\[31m\\\\u202e +not clean: too small \\(64 MiB < 1 GiB\\)$`));
    for (const out of [json.stdout, table.stdout]) {
        assert.doesNotMatch(out, /[\u001b\u202e]/, "no raw escape or bidi override printed");
    }
});

test("--accept-unpinned connects and prints the key the host showed, to pin it", async () => {
    const r = await runTool("discover", [stackFile, "--identity", path.join(dir, "id_ed25519"), "--node", "node3", "--accept-unpinned", "--json", "--min-size", "16MiB"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr.trim(), `warning: node3: host key not pinned; it showed ${node.hostKey} (pin it as ssh.hostKeys.node3)`);
    const listed = (JSON.parse(r.stdout) as DiscoveredJson).nodes.node3.devices.map((d) => d.path);
    assert.deepEqual(roles.filter((role) => !listed.includes(dev[role])), [], "every test device listed through node3");
});

test("nothing on the node changed: devices, signatures, LVM, mounts, first and last MiBs", () => {
    assert.deepEqual(snapshot(), before_);
});

/** `npm run plan -- <file> --json`: exit code and the planned resources' names. */
function planOf(file: string): { code: number | null; names: string[]; out: string } {
    const r = spawnSync(process.execPath, ["--import", "tsx", path.join(__dirname, "..", "..", "tools", "plan.ts"), file, "--json"], { encoding: "utf8" });
    const names = r.status === 0 ? (JSON.parse(r.stdout) as { resources: Array<{ name: string }> }).resources.map((x) => x.name) : [];
    return { code: r.status, names, out: r.stdout + r.stderr };
}

test("--write-stack from a stack with nodes only: keys pinned, clean devices proposed, the file plans; never overwritten", async () => {
    const first = path.join(dir, "Pulumi.first.yaml");
    fs.writeFileSync(first, `config:\n  zcloud-storage:nodes:\n    node1: { address: ${node.address}, port: ${node.port} }\n`);
    const written = path.join(dir, "Pulumi.written.yaml");
    const key = path.join(dir, "id_ed25519");
    const r = await runTool("discover", [first, "--identity", key, "--accept-unpinned", "--min-size", "16MiB", "--write-stack", written]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stderr.includes(`wrote ${written}: review the proposed devices`), r.stderr);
    const text = fs.readFileSync(written, "utf8");
    const doc = yaml.load(text) as { config: { "zcloud-storage:ssh": { hostKeys: Record<string, string>; privateKey: unknown } } };
    assert.deepEqual(doc.config["zcloud-storage:ssh"].hostKeys, { node1: node.hostKey });
    assert.deepEqual(doc.config["zcloud-storage:ssh"].privateKey, { secure: "v1:REPLACE-ME-WITH-pulumi-config-set-secret" });
    assert.ok(text.includes("    #   pulumi config set -s written --secret --path ssh.privateKey < ~/.ssh/zcloud_ed25519\n"), text);
    // Loop devices of other tiers running beside this one (the nodes tier's OSD disks, clean) are
    // this host's devices too, and discover rightly proposes them: left out, by their backing file.
    const foreign = new Set(
        execFileSync("losetup", ["--list", "--noheadings", "--output", "NAME,BACK-FILE"], { encoding: "utf8" })
            .split("\n")
            .map((l) => l.trim().split(/\s+/))
            .filter(([name, file]) => name && !(file ?? "").startsWith(`${dir}/`))
            .map(([name]) => name),
    );
    const proposed = text
        .split("\n")
        .filter((l) => l.startsWith("  #         - "))
        .map((l) => l.slice("  #         - ".length))
        .filter((l) => !foreign.has(l.split(" ")[0]));
    const byKernelName = `${dev.hostile}  # its by-id name is not a valid device path in a stack; a kernel name can change at reboot, give it a stable link`;
    assert.deepEqual(proposed.sort(), [link, dev.spare, byKernelName].sort(), "the clean devices by stable name (the hostile by-id name refused by the config: by kernel name), nothing else");

    const plain = planOf(written);
    assert.equal(plain.code, 0, plain.out);
    assert.ok(!plain.names.some((n) => n.includes("disks")), "the proposal is a comment: nothing on a disk is planned");
    const live = path.join(dir, "Pulumi.live.yaml");
    fs.writeFileSync(live, text.replace(/^ {2}# (zcloud-storage:lvm:|  )/gm, "  $1"));
    const withLvm = planOf(live);
    assert.equal(withLvm.code, 0, withLvm.out);
    assert.ok(withLvm.names.includes("local-node1-disks"), withLvm.names.join(" "));

    const again = await runTool("discover", [first, "--identity", key, "--accept-unpinned", "--write-stack", written]);
    assert.equal(again.code, 3);
    assert.equal(again.stderr.trim(), `--write-stack ${written}: exists; discover never overwrites a stack file (remove it or name another file)`);
    assert.equal(fs.readFileSync(written, "utf8"), text);
});

test("--write-stack writes nothing when a node does not answer", async () => {
    const out = path.join(dir, "Pulumi.partial.yaml");
    const r = await runTool("discover", [stackFile, "--identity", path.join(dir, "id_ed25519"), "--min-size", "16MiB", "--write-stack", out]);
    assert.equal(r.code, 2);
    assert.ok(r.stderr.includes(`--write-stack ${out}: not written: node2, node3 did not answer (see above); a stack file needs every node's host key`), r.stderr);
    assert.equal(fs.existsSync(out), false);
});
