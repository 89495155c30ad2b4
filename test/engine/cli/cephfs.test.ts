/**
 * CephFS through the real engine on three sandbox nodes. kwok simulates the pods: no Ceph daemon
 * really runs, and no admin pod can run a command (see test/engine/README.md). So the daemon roll
 * (docs/cephfs.md "Rolling restarts behind health gates") stops at its first gate: the first `up`
 * creates the cluster identity (fsid, keys) and the node disk commands, then the roll's first
 * gate (roll-start, before mon `a`) refuses (the stack names no kubernetes:context or kubeconfig,
 * as the drain would) and no daemon Deployment is created; a second `up` stops at the same gate
 * and keeps the identity. The Ceph tier runs the gates on real daemons.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { EngineStack, Sandbox, exportedResources, ok, repoRoot, sandboxValues, startSandbox } from "./engine";

const storage = "shared-fs";
let sandbox: Sandbox;
let stack: EngineStack;

before(() => {
    sandbox = startSandbox({ nodes: 3, devices: 1 });
    stack = new EngineStack(sandbox, "engine-cephfs");
});

after(() => sandbox?.stop());

/**
 * URN -> a digest of the outputs of the identity resources (random fsid and keys). Secrets are
 * encrypted afresh by every export, so the digest is of their decrypted values: equal digests
 * mean equal keys, and no key reaches the test's output.
 */
async function identity(): Promise<Record<string, string>> {
    const state = exportedResources(ok(await stack.pulumi(["stack", "export", "--show-secrets"]), "pulumi stack export").stdout);
    const digest = (outputs: unknown) => createHash("sha256").update(JSON.stringify(outputs)).digest("hex");
    return Object.fromEntries(state.filter((r) => r.type.startsWith("random:")).map((r) => [r.urn, digest(r.outputs)]));
}

test("8. up creates identity, keys and disk commands once, then stops at the roll's first gate (no kubectl target); a second up stops there again", async () => {
    const hosts = Object.fromEntries(Object.entries(sandbox.nodes).map(([n, s]) => [n, [s.devices[0]]]));
    await stack.init(sandboxValues(sandbox, { namespace: "zcloud-storage", cephfs: [{ name: storage, default: true, hosts }] }));
    const policyPack = path.join(repoRoot, "policy");
    // the gate's stub refuses before it reads its script set (components/node/run-script-set.sh)
    const refusal = /shared-fs-gate-roll-start[\s\S]*zcloud: cephfs-gate: refused: cannot tell which Kubernetes cluster the stack's provider uses \(neither kubernetes:context nor kubernetes:kubeconfig is set\); nothing was run/;
    const first = await stack.pulumi(["up", "--yes", "--skip-preview", "--policy-pack", policyPack]);
    assert.notEqual(first.code, 0, "the roll must stop at a gate it cannot run");
    assert.match(first.output, refusal);

    const ids = await identity();
    assert.ok(Object.keys(ids).some((u) => u.endsWith(`::${storage}-fsid`)), "a random fsid");
    assert.ok(Object.keys(ids).filter((u) => u.includes(`::${storage}-key-`)).length >= 2, "random keys");
    const labelled = sandbox.kubectl(["get", "nodes", "-l", `storage.zcloud.io/cephfs=${storage}`, "-o", "jsonpath={.items[*].metadata.name}"]);
    assert.deepEqual(labelled.split(/\s+/).filter(Boolean).sort(), ["node1", "node2", "node3"], "disk commands and labels are not in the chain");
    const deployments = sandbox.kubectl(["get", "deployments", "-n", "zcloud-storage", "-o", "jsonpath={.items[*].metadata.name}"]).split(/\s+/);
    assert.deepEqual(deployments.filter((d) => d.startsWith(`ceph-${storage}-`)), [], "no daemon before the roll's first gate");

    const again = await stack.pulumi(["up", "--yes", "--skip-preview"]);
    assert.notEqual(again.code, 0);
    assert.match(again.output, refusal);
    assert.deepEqual(await identity(), ids, "the identity is made once");

    // No OSD was ever created, so no drain exists: destroy removes what the up made.
    ok(await stack.pulumi(["destroy", "--yes", "--skip-preview"]), "pulumi destroy");
});
