/**
 * The real engine, one LVM + NFS stack through its life, steps in order on one sandbox (three
 * nodes with three loop devices each): preview with the policy pack, up, config edits each
 * previewed (and compared with the offline plan's --diff) then applied, the node script's
 * refusal through `pulumi up`, no perpetual diffs, destroy; secrets checked along the way.
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, test } from "node:test";
import {
    EngineStack,
    RunResult,
    Sandbox,
    engineSteps,
    StackValues,
    exportedResources,
    ok,
    operationLines,
    planOperations,
    previewOperations,
    privateKeyBody,
    repoRoot,
    sandboxValues,
    startSandbox,
} from "./engine";

const storage = "local-fast";
const vg = `zcloud-${storage}`;
const policyPack = path.join(repoRoot, "policy");
const timings: string[] = [];

let sandbox: Sandbox;
let stack: EngineStack;
/** Every CLI output of the run, checked for the clear SSH key at the end. */
const outputs: string[] = [];

/** The stack's config: LVM on `hosts` (node -> device indexes into the node's loops) and NFS. */
function values(hosts: Record<string, number[]>, nfsPath = "/exports/k8s"): StackValues {
    const lvmHosts = Object.fromEntries(Object.entries(hosts).map(([n, idx]) => [n, idx.map((i) => sandbox.nodes[n].devices[i])]));
    return sandboxValues(sandbox, {
        namespace: "zcloud-storage",
        lvm: [{ name: storage, default: true, hosts: lvmHosts }],
        nfs: [{ name: "shared-nfs", server: "127.0.0.1", path: nfsPath, onDelete: "retain", mountOptions: ["nfsvers=4.1"] }],
    });
}

async function pulumi(args: string[], input?: string): Promise<RunResult> {
    const r = await stack.pulumi(args, input);
    outputs.push(r.output);
    timings.push(`${args[0]} ${r.seconds.toFixed(1)} s`);
    return r;
}

/** Physical volumes of the storage's VG as node `name` sees them. */
function vgDevices(name: string): string[] {
    const out = sandbox.lvm(name, ["pvs", "--noheadings", "-o", "pv_name,vg_name"]);
    return out
        .split("\n")
        .map((l) => l.trim().split(/\s+/))
        .filter(([, v]) => v === vg)
        .map(([pv]) => pv)
        .sort();
}

function labelledNodes(): string[] {
    return sandbox.kubectl(["get", "nodes", "-l", `storage.zcloud.io/lvm=${storage}`, "-o", "jsonpath={.items[*].metadata.name}"]).split(/\s+/).filter(Boolean).sort();
}

/** Nodes where the named DaemonSet's pods are Running. */
function runningPodNodes(daemonSet: string): string[] {
    const pods = JSON.parse(sandbox.kubectl(["get", "pods", "-n", "zcloud-storage", "-o", "json"])) as {
        items: Array<{ metadata: { ownerReferences?: Array<{ kind: string; name: string }> }; spec: { nodeName?: string }; status: { phase?: string } }>;
    };
    return pods.items
        .filter((p) => p.metadata.ownerReferences?.some((o) => o.kind === "DaemonSet" && o.name === daemonSet) && p.status.phase === "Running")
        .map((p) => p.spec.nodeName ?? "")
        .sort();
}

/** Preview (JSON) and offline plan of the current stack file against `previous`; both must agree. */
async function previewMatchesPlan(previous: string): Promise<Map<string, string>> {
    const preview = ok(await pulumi(["preview", "--json", "--policy-pack", policyPack]), "pulumi preview --json");
    const engine = previewOperations(preview.stdout);
    const offline = await planOperations(stack.stackFile, previous);
    assert.deepEqual(operationLines(offline), operationLines(engine), "npm run plan --diff must list the operations pulumi preview lists");
    return engine;
}

/** Applies the current stack file and checks the VGs and labels that should now exist. */
async function upAndCheck(hosts: Record<string, number[]>, extra: string[] = []): Promise<RunResult> {
    const r = ok(await pulumi(["up", "--yes", "--skip-preview", "--policy-pack", policyPack, ...extra]), "pulumi up");
    assert.deepEqual(labelledNodes(), Object.keys(hosts).sort());
    for (const n of Object.keys(sandbox.nodes)) {
        const expected = (hosts[n] ?? []).map((i) => sandbox.nodes[n].devices[i]).sort();
        assert.deepEqual(vgDevices(n), expected, `${n}: PVs of ${vg}`);
    }
    return r;
}

/** Edits the config, previews it (matching the offline plan), applies it. */
async function edit(label: string, hosts: Record<string, number[]>, nfsPath?: string): Promise<Map<string, string>> {
    const previous = stack.snapshot(label);
    stack.write(values(hosts, nfsPath));
    const ops = await previewMatchesPlan(previous);
    await upAndCheck(hosts);
    return ops;
}

/** Samples every process command line until stopped; returns each distinct one seen. */
function sampleCommandLines(): { stop: () => Promise<string> } {
    const seen = new Set<string>();
    let running = true;
    const loop = (async () => {
        while (running) {
            for (const pid of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
                try {
                    seen.add(fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " "));
                } catch {
                    // the process ended meanwhile
                }
            }
            await new Promise((r) => setTimeout(r, 200));
        }
    })();
    return {
        stop: async () => {
            running = false;
            await loop;
            return [...seen].join("\n");
        },
    };
}

function assertNoClearKey(text: string, where: string): void {
    for (const line of privateKeyBody(sandbox.keyFile)) {
        assert.ok(!text.includes(line), `${where} holds the clear SSH private key`);
    }
}

before(() => {
    const start = performance.now();
    sandbox = startSandbox({ nodes: 3, devices: 3 });
    timings.push(`sandbox start ${((performance.now() - start) / 1000).toFixed(1)} s`);
    stack = new EngineStack(sandbox, "engine");
});

after(() => {
    sandbox?.stop();
    console.log(`engine lvm timings: ${timings.join(", ")}`);
});

test("1. preview with the policy pack passes and shows the storages", async () => {
    await stack.init(values({ node1: [0, 1], node2: [0] }));
    assert.match(fs.readFileSync(stack.stackFile, "utf8"), /privateKey:\s*\n\s*secure: v1:/);
    const r = ok(await pulumi(["preview", "--json", "--policy-pack", policyPack]), "pulumi preview --policy-pack");
    const ops = previewOperations(r.stdout);
    for (const name of [`${storage}-node1-disks`, `${storage}-node2-disks`, `${storage}-node1-label`, `${storage}-storageclass`, "shared-nfs-storageclass"]) {
        assert.ok([...ops].some(([urn, op]) => urn.endsWith(`::${name}`) && op === "create"), `preview creates ${name}`);
    }
    const policies = JSON.parse(r.stdout) as { diagnostics?: Array<{ severity: string; message: string }> };
    assert.ok(!(policies.diagnostics ?? []).some((d) => d.severity === "error"), "no mandatory policy violation");
});

test("2. up: StorageClasses, labels, lvmd and TopoLVM pods only on the storage's nodes, VGs on the loops", async () => {
    const sampler = sampleCommandLines();
    const hosts = { node1: [0, 1], node2: [0] };
    await upAndCheck(hosts);
    assertNoClearKey(await sampler.stop(), "a process command line during pulumi up");

    const classes = sandbox.kubectl(["get", "storageclass", "-o", "jsonpath={.items[*].metadata.name}"]).split(/\s+/).sort();
    assert.deepEqual(classes, [storage, "shared-nfs"].sort());
    assert.deepEqual(runningPodNodes(`lvmd-${storage}`), ["node1", "node2"]);
    assert.deepEqual(runningPodNodes("topolvm-node"), ["node1", "node2"]);

    const out = JSON.parse(ok(await pulumi(["stack", "output", "lvm", "--json"]), "pulumi stack output").stdout) as Record<string, { devices: Record<string, unknown> }>;
    const devices = JSON.stringify(out[storage].devices);
    for (const d of [sandbox.nodes.node1.devices[0], sandbox.nodes.node1.devices[1], sandbox.nodes.node2.devices[0]]) {
        assert.ok(devices.includes(d), `output devices hold ${d}: ${devices}`);
    }
});

test("3a. add a node", async () => {
    const ops = await edit("add-node", { node1: [0, 1], node2: [0], node3: [0] });
    assert.ok([...ops].some(([urn, op]) => urn.endsWith(`::${storage}-node3-disks`) && op === "create"));
});

test("3b. add a device", async () => {
    const ops = await edit("add-device", { node1: [0, 1], node2: [0, 1], node3: [0] });
    assert.ok([...ops].some(([urn, op]) => urn.endsWith(`::${storage}-node2-disks`) && op === "update"));
});

test("3c. remove a device", async () => {
    const ops = await edit("remove-device", { node1: [0], node2: [0, 1], node3: [0] });
    assert.ok([...ops].some(([urn, op]) => urn.endsWith(`::${storage}-node1-disks`) && op === "update"));
});

test("3d. remove a node: its label goes before its VG is released", async () => {
    const previous = stack.snapshot("remove-node");
    stack.write(values({ node1: [0], node3: [0] }));
    await previewMatchesPlan(previous);
    const log = path.join(sandbox.dir, "remove-node-events.jsonl");
    await upAndCheck({ node1: [0], node3: [0] }, ["--event-log", log]);
    // The engine's own event log: the label's delete has finished before the disks' delete starts.
    const steps = engineSteps(fs.readFileSync(log, "utf8"));
    const labelDone = steps.findIndex((s) => s.phase === "done" && s.op === "delete" && s.urn.endsWith(`::${storage}-node2-label`));
    const disksStart = steps.findIndex((s) => s.phase === "start" && s.op === "delete" && s.urn.endsWith(`::${storage}-node2-disks`));
    assert.ok(labelDone >= 0 && disksStart >= 0, `both deletes are in the event log: ${JSON.stringify(steps)}`);
    assert.ok(labelDone < disksStart, "node2's label is deleted before its disks are released");
});

test("3e. change the NFS path", async () => {
    const ops = await edit("nfs-path", { node1: [0], node3: [0] }, "/exports/k8s-v2");
    assert.equal([...ops].find(([urn]) => urn.endsWith("::shared-nfs-storageclass"))?.[1], "replace");
});

test("4. an LV on a node makes its removal fail with the script's reason; the state keeps the node", async () => {
    sandbox.lvm("node3", ["lvcreate", "--driverloaded", "n", "-an", "-Zn", "-L", "8m", "-n", "keepme", vg]);
    stack.snapshot("lv-guard");
    stack.write(values({ node1: [0] }));
    const failed = await pulumi(["up", "--yes", "--skip-preview"]);
    assert.notEqual(failed.code, 0, "pulumi up must fail while node3 holds an LV");
    assert.match(failed.output, /zcloud: .*refused: .*keepme/);
    assert.match(sandbox.lvm("node3", ["lvs", "--noheadings", "-o", "lv_name,vg_name"]), new RegExp(`keepme\\s+${vg}`));
    assert.deepEqual(vgDevices("node3"), [sandbox.nodes.node3.devices[0]]);
    const state = exportedResources(ok(await pulumi(["stack", "export", "--show-secrets=false"]), "pulumi stack export").stdout);
    assert.ok(state.some((r) => r.urn.endsWith(`::${storage}-node3-disks`)), "the state still holds node3's disk command");

    sandbox.lvm("node3", ["lvremove", "-y", `${vg}/keepme`]);
    await upAndCheck({ node1: [0] });
});

test("5. no perpetual diffs: preview --expect-no-changes, refresh finds no drift", async () => {
    ok(await pulumi(["preview", "--expect-no-changes", "--policy-pack", policyPack]), "pulumi preview --expect-no-changes");
    ok(await pulumi(["refresh", "--yes", "--skip-preview", "--expect-no-changes"]), "pulumi refresh --expect-no-changes");
    ok(await pulumi(["preview", "--expect-no-changes"]), "pulumi preview --expect-no-changes after refresh");
});

test("7. secrets: stack export and every CLI output hold no clear SSH key", async () => {
    const exported = ok(await pulumi(["stack", "export"]), "pulumi stack export").stdout;
    assertNoClearKey(exported, "pulumi stack export");
    assert.match(exported, /"ciphertext"/);
    assertNoClearKey(outputs.join("\n"), "the CLI output");
});

test("6. destroy removes everything and releases every VG but keeps the LogicalVolume CRD; a later up adopts it", async () => {
    ok(await pulumi(["destroy", "--yes", "--skip-preview"]), "pulumi destroy");
    for (const n of Object.keys(sandbox.nodes)) {
        assert.equal(sandbox.lvm(n, ["vgs", "--noheadings", "-o", "vg_name"]).trim(), "", `${n}: no VG left`);
    }
    assert.deepEqual(labelledNodes(), []);
    assert.equal(sandbox.kubectl(["get", "storageclass", "-o", "name"]).trim(), "");
    assert.equal(sandbox.kubectl(["get", "namespace", "zcloud-storage", "--ignore-not-found", "-o", "name"]).trim(), "");
    const state = exportedResources(ok(await pulumi(["stack", "export"]), "pulumi stack export").stdout);
    assert.deepEqual(state.map((r) => r.type).filter((t) => t !== "pulumi:pulumi:Stack" && !t.startsWith("pulumi:providers:")), []);
    // The LogicalVolume CRD is kept (deleting it would delete every volume's LV) ...
    const crd = ["get", "crd", "logicalvolumes.topolvm.io", "-o", "name"];
    assert.equal(sandbox.kubectl(crd).trim(), "customresourcedefinition.apiextensions.k8s.io/logicalvolumes.topolvm.io");
    // ... and a later `up` adopts it instead of failing with "already exists".
    ok(await pulumi(["up", "--yes", "--skip-preview"]), "pulumi up after destroy");
    const again = exportedResources(ok(await pulumi(["stack", "export"]), "pulumi stack export").stdout);
    assert.ok(again.some((r) => r.type === "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinitionPatch"), "the CRD is in the state again");
    ok(await pulumi(["destroy", "--yes", "--skip-preview"]), "pulumi destroy");
    assert.equal(sandbox.kubectl(crd).trim(), "customresourcedefinition.apiextensions.k8s.io/logicalvolumes.topolvm.io");
    ok(await pulumi(["stack", "rm", "--yes"]), "pulumi stack rm");
});
