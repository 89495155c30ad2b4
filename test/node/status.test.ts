/**
 * Node tier: `npm run status` end to end with real SSH nodes (sandbox sshd nodes on 127.0.0.1,
 * each with loop devices and its own LVM view, VGs made as the disk commands make them) and a
 * recorded cluster view served by a stand-in kubectl on PATH (the engine tier runs the same
 * faults against a real API server). Healthy, then a node label removed, a PV added to the VG
 * outside the config, a node daemon not Ready, a node that does not answer: each reported with
 * its node, exit 1 (2 for the unreachable node).
 */
import { after, before, test } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { SandboxNode, startNodes, stopNodes } from "../engine/nodes";
import { freePort } from "../helpers/net";
import { ToolRun, healthyView, readyStatus, runTool, stackForNodes, standInKubectl } from "../helpers/day2";
import { lvmQuiet, sh, sshdConfig, sshdPath, tryRun } from "../helpers/sshNode";

const storage = "fast";
const vg = `zcloud-${storage}`;
let dir: string;
let nodes: Record<string, SandboxNode>;
let stackFile: string;
let kube: ReturnType<typeof standInKubectl>;

const lvmEnvOf = (node: string): NodeJS.ProcessEnv => ({ ...process.env, ...lvmQuiet, LVM_SYSTEM_DIR: path.join(dir, "nodes", node, "lvm") });
const view = () => healthyView(storage, Object.keys(nodes), "share");

/** The stack's storages: an LVM storage on every node's first device, and an NFS storage. */
function storageLines(): string[] {
    const hosts = ["  zcloud-storage:lvm:", `    - name: ${storage}`, "      default: true", "      hosts:", ...Object.keys(nodes).map((n) => `        ${n}: [${nodes[n].devices[0]}]`)];
    return [...hosts, "  zcloud-storage:nfs:", "    - name: share", "      server: 127.0.0.1", "      path: /exports/k8s"];
}

before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-status-"));
    nodes = await startNodes(dir, 2, 2, 64);
    for (const n of Object.keys(nodes)) {
        sh("vgcreate", ["-q", vg, nodes[n].devices[0]], lvmEnvOf(n));
    }
    kube = standInKubectl(path.join(dir, "kube"));
    stackFile = path.join(dir, "Pulumi.status.yaml");
    fs.writeFileSync(stackFile, stackForNodes(nodes, storageLines()));
});

after(() => {
    if (dir) {
        stopNodes(dir);
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

function status(file = stackFile): Promise<ToolRun> {
    return runTool("status", [file, "--identity", path.join(dir, "id_ed25519"), "--json"], kube.env);
}

function problems(r: ToolRun): string[] {
    const out = JSON.parse(r.stdout) as { storages: Array<{ name: string; problems: Array<{ kind: string; node: string | null; object: string; message: string }> }> };
    return out.storages.flatMap((s) => s.problems.map((p) => `${p.kind}: ${s.name}: ${p.node ?? "-"}: ${p.object}: ${p.message}`));
}

test("healthy: exit 0, the VG's size, free space and devices per node", async () => {
    kube.serve(view());
    const r = await status();
    assert.equal(r.code, 0, `${r.stderr}\n${problems(r).join("\n")}`);
    const out = JSON.parse(r.stdout);
    const node2 = out.storages[0].nodes.node2;
    assert.deepEqual([node2.ready, node2.label, node2.daemonsReady, node2.vg.name, node2.vg.lvCount, node2.vg.devices], [true, true, true, vg, 0, [nodes.node2.devices[0]]]);
    assert.equal(node2.vg.size, 60 * 1024 * 1024, "a 64 MiB PV holds 15 extents of 4 MiB");
});

test("a node label removed: drift on that node, exit 1", async () => {
    const v = view();
    v.cluster[0].metadata.labels = {};
    kube.serve(v);
    const r = await status();
    assert.equal(r.code, 1, r.stderr);
    assert.deepEqual(problems(r), [`drift: ${storage}: node1: label storage.zcloud.io/lvm: missing (expected ${storage})`]);
});

test("a PV added to the VG outside the config: drift with node and device, exit 1", async () => {
    kube.serve(view());
    const extra = nodes.node2.devices[1];
    sh("vgextend", ["-q", vg, extra], lvmEnvOf("node2"));
    try {
        const r = await status();
        assert.equal(r.code, 1, r.stderr);
        assert.deepEqual(problems(r), [`drift: ${storage}: node2: ${extra}: in VG ${vg} but not declared`]);
    } finally {
        sh("vgreduce", ["-q", vg, extra], lvmEnvOf("node2"));
        sh("pvremove", ["-q", extra], lvmEnvOf("node2"));
    }
});

test("a node daemon not Ready: degraded with node and pod, exit 1", async () => {
    const v = view();
    const lvmd = v.pods.find((p) => p.metadata.name === `lvmd-${storage}-node2`)!;
    lvmd.status = { phase: "Running", ...readyStatus("False") };
    kube.serve(v);
    const r = await status();
    assert.equal(r.code, 1, r.stderr);
    assert.deepEqual(problems(r), [`degraded: ${storage}: node2: pod lvmd-${storage}-node2: lvmd pod is not Ready (phase Running)`]);
});

test("a node that does not answer: exit 2, the other node still checked", async () => {
    kube.serve(view());
    const file = path.join(dir, "Pulumi.status-dead.yaml");
    const deadPort = await freePort();
    fs.writeFileSync(file, fs.readFileSync(stackFile, "utf8").replace(`port: ${nodes.node2.port} }`, `port: ${deadPort} }`));
    const r = await status(file);
    assert.equal(r.code, 2, r.stderr);
    const lines = problems(r);
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.match(lines[0], new RegExp(`^unreachable: ${storage}: node2: ssh: unreachable: .*port ${deadPort}.*Connection refused`));
    const table = await runTool("status", [file, "--identity", path.join(dir, "id_ed25519")], kube.env);
    assert.equal(table.code, 2);
    assert.match(table.stdout, /node1 +yes +yes +yes +60 MiB +60 MiB +0 +- +\/dev\/loop\d+/);
    assert.ok(table.stdout.trimEnd().endsWith("unreachable (exit 2)"), table.stdout);
});

test("a node at an IPv6 link-local address with a zone id (fe80::...%lo): status and discover reach it", async () => {
    // A link-local address on the loopback interface, for this test only; nodad: usable at once.
    const address = "fe80::2019:19";
    sh("ip", ["-6", "addr", "add", `${address}/128`, "dev", "lo", "nodad"]);
    const zoneDir = path.join(dir, "zone");
    fs.mkdirSync(zoneDir);
    const pidFile = path.join(zoneDir, "sshd.pid");
    try {
        // node1's own sshd setup (host key, LVM view), listening on the zoned address instead.
        const port = await freePort();
        const config = path.join(zoneDir, "sshd_config");
        fs.writeFileSync(
            config,
            sshdConfig({ port, hostKey: path.join(dir, "nodes", "node1", "host_ed25519"), pidFile, authorizedKeys: path.join(dir, "authorized_keys"), sessionEnv: { ...lvmQuiet, LVM_SYSTEM_DIR: path.join(dir, "nodes", "node1", "lvm"), ZCLOUD_ALLOW_LOOP: "1" }, listenAddress: `${address}%lo` }),
        );
        sh(sshdPath(), ["-f", config, "-E", path.join(zoneDir, "sshd.log")]);
        const file = path.join(zoneDir, "Pulumi.zone.yaml");
        fs.writeFileSync(file, stackForNodes({ ...nodes, node1: { ...nodes.node1, address: `${address}%lo`, port } }, storageLines()));

        kube.serve(view());
        const r = await status(file);
        assert.equal(r.code, 0, `${r.stderr}\n${problems(r).join("\n")}`);
        assert.deepEqual(JSON.parse(r.stdout).storages[0].nodes.node1.vg.devices, [nodes.node1.devices[0]]);

        const d = await runTool("discover", [file, "--identity", path.join(dir, "id_ed25519"), "--node", "node1"]);
        assert.equal(d.code, 0, d.stderr);
        assert.ok(d.stdout.startsWith(`node1 (${address}%lo)\n`), d.stdout);
        assert.ok(d.stdout.split("\n").some((l) => l.trimStart().startsWith(`${nodes.node1.devices[0]} `)), d.stdout);
    } finally {
        if (fs.existsSync(pidFile)) {
            tryRun("kill", [fs.readFileSync(pidFile, "utf8").trim()]);
        }
        tryRun("ip", ["-6", "addr", "del", `${address}/128`, "dev", "lo"]);
    }
});
