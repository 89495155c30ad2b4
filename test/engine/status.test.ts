/**
 * `npm run status` against a real API server (the sandbox's control plane: etcd, kube-apiserver,
 * controller-manager, scheduler, kwok nodes) and real SSH nodes (sshd on 127.0.0.1 with loop
 * devices and their own LVM view), after the stack was applied the way `pulumi up` applies it
 * (applied.ts: planned disk commands over SSH, then the plan's manifests with kubectl; kwok runs
 * the pods). Healthy first, then each hand-made fault is reported with its node, exit 1, and gone
 * once undone: a node label removed, a PV added to the storage's VG outside the config, a node
 * daemon (lvmd) not Ready. The stack also holds an NFS storage (its controller and node plugin
 * Ready).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { AppliedStack, applyLvmStack } from "./applied";
import { ToolRun, runTool } from "../helpers/day2";

const storage = "local-fast";
const vg = `zcloud-${storage}`;
const namespace = "zcloud-storage";
let stack: AppliedStack;

before(async () => {
    stack = await applyLvmStack(storage, 2, 2, "shared-nfs");
});

after(() => stack?.stop());

function status(json = true): Promise<ToolRun> {
    return runTool("status", [stack.stackFile, "--identity", stack.keyFile, ...(json ? ["--json"] : [])], stack.env);
}

/** Problem lines as `kind: storage: node: object: message`. */
function problems(r: ToolRun): string[] {
    const out = JSON.parse(r.stdout) as { storages: Array<{ name: string; problems: Array<{ kind: string; node: string | null; object: string; message: string }> }> };
    return out.storages.flatMap((s) => s.problems.map((p) => `${p.kind}: ${s.name}: ${p.node ?? "-"}: ${p.object}: ${p.message}`));
}

/** Status until healthy: the scheduler, the DaemonSet controller and kwok take a few seconds. */
async function healthy(): Promise<ToolRun> {
    let r = await status();
    for (let i = 0; i < 30 && r.code !== 0; i++) {
        await new Promise((res) => setTimeout(res, 2000));
        r = await status();
    }
    assert.equal(r.code, 0, `not healthy:\n${r.code === 2 ? r.stdout : problems(r).join("\n")}\n${r.stderr}`);
    return r;
}

test("after the stack is applied: every storage healthy, exit 0, VG per node in the table", async () => {
    const r = await healthy();
    const out = JSON.parse(r.stdout) as { storages: Array<{ name: string; type: string; healthy: boolean }> };
    assert.deepEqual(out.storages.map((s) => [s.name, s.type, s.healthy]), [[storage, "lvm", true], ["shared-nfs", "nfs", true]]);
    const table = await status(false);
    assert.equal(table.code, 0, table.stderr);
    assert.ok(table.stdout.includes(`${storage} (lvm): healthy; StorageClass ${storage} (default)`), table.stdout);
    assert.match(table.stdout, new RegExp(`node1 +yes +yes +yes +60 MiB +60 MiB +0 +- +${stack.nodes.node1.devices[0]}`));
});

test("a node label removed by hand: reported on its node, exit 1", async () => {
    stack.kubectl(["label", "node", "node1", "storage.zcloud.io/lvm-"]);
    try {
        const r = await status();
        assert.equal(r.code, 1, r.stderr);
        const lines = problems(r);
        assert.ok(lines.includes(`drift: ${storage}: node1: label storage.zcloud.io/lvm: missing (expected ${storage})`), lines.join("\n"));
        // The DaemonSets select on the label: once their pods have left node1, status names that
        // too (how soon is the controller's business), always on node1.
        assert.ok(lines.every((l) => l.includes(": node1: ")), `only node1 is affected:\n${lines.join("\n")}`);
    } finally {
        stack.kubectl(["label", "node", "node1", `storage.zcloud.io/lvm=${storage}`]);
    }
    await healthy();
});

test("a PV added to the storage's VG outside the config: reported with its node and device, exit 1", async () => {
    const extra = stack.nodes.node2.devices[1];
    stack.lvmOn("node2", ["vgextend", "-q", vg, extra]);
    try {
        const r = await status();
        assert.equal(r.code, 1, r.stderr);
        assert.deepEqual(problems(r), [`drift: ${storage}: node2: ${extra}: in VG ${vg} but not declared`]);
    } finally {
        stack.lvmOn("node2", ["vgreduce", "-q", vg, extra]);
        stack.lvmOn("node2", ["pvremove", "-q", extra]);
    }
    await healthy();
});

test("a node daemon not Ready: reported with its node and pod, exit 1", async () => {
    const pods = JSON.parse(stack.kubectl(["get", "pods", "-n", namespace, "-l", "app.kubernetes.io/component=lvmd", "--field-selector", "spec.nodeName=node2", "-o", "json"])) as {
        items: Array<{ metadata: { name: string } }>;
    };
    assert.equal(pods.items.length, 1, "one lvmd pod on node2");
    const pod = pods.items[0].metadata.name;
    const setReady = (value: string) => stack.kubectl(["patch", "pod", pod, "-n", namespace, "--subresource=status", "-p", JSON.stringify({ status: { conditions: [{ type: "Ready", status: value }] } })]);
    setReady("False");
    try {
        const r = await status();
        assert.equal(r.code, 1, r.stderr);
        assert.deepEqual(problems(r), [`degraded: ${storage}: node2: pod ${pod}: lvmd pod is not Ready (phase Running)`]);
    } finally {
        setReady("True");
    }
    await healthy();
});
