/**
 * `npm run status` after a real `pulumi up` in the sandbox (two kwok nodes with sshd and loop
 * devices): healthy first, then each hand-made fault is reported with its node and exit 1, and
 * gone again once undone: a node label removed, a PV added to the storage's VG outside the
 * config, a node daemon (lvmd) not Ready.
 */
import assert from "node:assert/strict";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { EngineStack, Sandbox, ok, repoRoot, sandboxValues, startSandbox } from "./engine";
import { ToolRun, runTool } from "../helpers/day2";

const storage = "local-fast";
const vg = `zcloud-${storage}`;
const namespace = "zcloud-storage";
let sandbox: Sandbox;
let stack: EngineStack;

interface StatusJson {
    storages: Array<{ name: string; type: string; healthy: boolean; problems: Array<{ kind: string; node: string | null; object: string; message: string }> }>;
}

before(async () => {
    sandbox = startSandbox({ nodes: 2, devices: 2 });
    stack = new EngineStack(sandbox, "status");
    const hosts = Object.fromEntries(Object.entries(sandbox.nodes).map(([n, s]) => [n, [s.devices[0]]]));
    await stack.init(
        sandboxValues(sandbox, {
            namespace,
            lvm: [{ name: storage, default: true, hosts }],
            nfs: [{ name: "shared-nfs", server: "127.0.0.1", path: "/exports/k8s", onDelete: "retain", mountOptions: ["nfsvers=4.1"] }],
        }),
    );
    ok(await stack.pulumi(["up", "--yes", "--skip-preview", "--policy-pack", path.join(repoRoot, "policy")]), "pulumi up");
});

after(() => sandbox?.stop());

function status(): Promise<ToolRun> {
    return runTool("status", [stack.stackFile, "--identity", sandbox.keyFile, "--json"], sandbox.env);
}

/** Problem lines as `kind: storage: node: object: message`. */
function problems(r: ToolRun): string[] {
    const out = JSON.parse(r.stdout) as StatusJson;
    return out.storages.flatMap((s) => s.problems.map((p) => `${p.kind}: ${s.name}: ${p.node ?? "-"}: ${p.object}: ${p.message}`));
}

/** Runs status until it is healthy again (kwok and the DaemonSet controller settle within seconds). */
async function healthyAgain(): Promise<ToolRun> {
    let r = await status();
    for (let i = 0; i < 20 && r.code !== 0; i++) {
        await new Promise((res) => setTimeout(res, 2000));
        r = await status();
    }
    assert.equal(r.code, 0, `not healthy again:\n${problems(r).join("\n")}\n${r.stderr}`);
    return r;
}

test("after pulumi up: every storage healthy, exit 0", async () => {
    const r = await status();
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout}`);
    const out = JSON.parse(r.stdout) as StatusJson;
    assert.deepEqual(out.storages.map((s) => [s.name, s.type, s.healthy]), [[storage, "lvm", true], ["shared-nfs", "nfs", true]]);
    const table = await runTool("status", [stack.stackFile, "--identity", sandbox.keyFile], sandbox.env);
    assert.equal(table.code, 0, table.stderr);
    assert.ok(table.stdout.includes(`${storage} (lvm): healthy; StorageClass ${storage} (default)`), table.stdout);
    assert.match(table.stdout, new RegExp(`node1 +yes +yes +yes +\\d+(\\.\\d)? MiB +\\d+(\\.\\d)? MiB +0 +- +${sandbox.nodes.node1.devices[0]}`));
});

test("a node label removed by hand: reported on its node, exit 1", async () => {
    sandbox.kubectl(["label", "node", "node1", "storage.zcloud.io/lvm-"]);
    try {
        const r = await status();
        assert.equal(r.code, 1, r.stderr);
        assert.ok(problems(r).includes(`drift: ${storage}: node1: label storage.zcloud.io/lvm: missing (expected ${storage})`), problems(r).join("\n"));
        assert.ok(problems(r).every((p) => p.includes(": node1: ")), `only node1 is affected:\n${problems(r).join("\n")}`);
    } finally {
        sandbox.kubectl(["label", "node", "node1", `storage.zcloud.io/lvm=${storage}`]);
    }
    await healthyAgain();
});

test("a PV added to the storage's VG outside the config: reported with its node and device, exit 1", async () => {
    const extra = sandbox.nodes.node2.devices[1];
    sandbox.lvm("node2", ["vgextend", "-q", vg, extra]);
    try {
        const r = await status();
        assert.equal(r.code, 1, r.stderr);
        assert.deepEqual(problems(r), [`drift: ${storage}: node2: ${extra}: in VG ${vg} but not declared`]);
    } finally {
        sandbox.lvm("node2", ["vgreduce", "-q", vg, extra]);
        sandbox.lvm("node2", ["pvremove", "-q", extra]);
    }
    await healthyAgain();
});

test("a node daemon not Ready: reported with its node and pod, exit 1", async () => {
    const pods = JSON.parse(sandbox.kubectl(["get", "pods", "-n", namespace, "-l", `app.kubernetes.io/component=lvmd`, "--field-selector", "spec.nodeName=node2", "-o", "json"])) as {
        items: Array<{ metadata: { name: string } }>;
    };
    assert.equal(pods.items.length, 1, "one lvmd pod on node2");
    const pod = pods.items[0].metadata.name;
    const setReady = (value: string) =>
        sandbox.kubectl(["patch", "pod", pod, "-n", namespace, "--subresource=status", "-p", JSON.stringify({ status: { conditions: [{ type: "Ready", status: value }] } })]);
    setReady("False");
    try {
        const r = await status();
        assert.equal(r.code, 1, r.stderr);
        assert.deepEqual(problems(r), [`degraded: ${storage}: node2: pod ${pod}: lvmd pod is not Ready (phase Running)`]);
    } finally {
        setReady("True");
    }
    await healthyAgain();
});
