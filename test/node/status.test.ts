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
import { lvmQuiet, sh } from "../helpers/sshNode";

const storage = "fast";
const vg = `zcloud-${storage}`;
let dir: string;
let nodes: Record<string, SandboxNode>;
let stackFile: string;
let kube: ReturnType<typeof standInKubectl>;

const lvmEnvOf = (node: string): NodeJS.ProcessEnv => ({ ...process.env, ...lvmQuiet, LVM_SYSTEM_DIR: path.join(dir, "nodes", node, "lvm") });
const view = () => healthyView(storage, Object.keys(nodes), "share");

before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-status-"));
    nodes = await startNodes(dir, 2, 2, 64);
    for (const n of Object.keys(nodes)) {
        sh("vgcreate", ["-q", vg, nodes[n].devices[0]], lvmEnvOf(n));
    }
    kube = standInKubectl(path.join(dir, "kube"));
    const hosts = ["  zcloud-storage:lvm:", `    - name: ${storage}`, "      default: true", "      hosts:", ...Object.keys(nodes).map((n) => `        ${n}: [${nodes[n].devices[0]}]`)];
    const nfs = ["  zcloud-storage:nfs:", "    - name: share", "      server: 127.0.0.1", "      path: /exports/k8s"];
    stackFile = path.join(dir, "Pulumi.status.yaml");
    fs.writeFileSync(stackFile, stackForNodes(nodes, [...hosts, ...nfs]));
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
