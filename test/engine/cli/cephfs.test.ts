/**
 * CephFS through the real engine on three sandbox nodes: the first `up` creates the cluster
 * identity (fsid, keys), the node disk commands and the daemons' workloads once; a second `up`
 * changes nothing. kwok simulates the pods: no Ceph daemon really runs (see test/engine/README.md).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { EngineStack, Sandbox, exportedResources, ok, previewOperations, repoRoot, sandboxValues, startSandbox } from "./engine";

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

test("8. up creates identity, keys and daemons once; a second up changes nothing", async () => {
    const hosts = Object.fromEntries(Object.entries(sandbox.nodes).map(([n, s]) => [n, [s.devices[0]]]));
    await stack.init(sandboxValues(sandbox, { namespace: "zcloud-storage", cephfs: [{ name: storage, default: true, hosts }] }));
    const policyPack = path.join(repoRoot, "policy");
    ok(await stack.pulumi(["up", "--yes", "--skip-preview", "--policy-pack", policyPack]), "pulumi up");

    const ids = await identity();
    assert.ok(Object.keys(ids).some((u) => u.endsWith(`::${storage}-fsid`)), "a random fsid");
    assert.ok(Object.keys(ids).filter((u) => u.includes(`::${storage}-key-`)).length >= 2, "random keys");
    const labelled = sandbox.kubectl(["get", "nodes", "-l", `storage.zcloud.io/cephfs=${storage}`, "-o", "jsonpath={.items[*].metadata.name}"]);
    assert.deepEqual(labelled.split(/\s+/).filter(Boolean).sort(), ["node1", "node2", "node3"]);
    const workloads = sandbox.kubectl(["get", "deployments,daemonsets,secrets", "-n", "zcloud-storage", "-o", "name"]);
    assert.match(workloads, /deployment\.apps\/.*mon/);
    assert.match(workloads, /secret\//);

    const again = ok(await stack.pulumi(["preview", "--json", "--expect-no-changes"]), "pulumi preview --expect-no-changes");
    assert.deepEqual([...previewOperations(again.stdout)], []);
    ok(await stack.pulumi(["up", "--yes", "--skip-preview", "--expect-no-changes"]), "second pulumi up");
    assert.deepEqual(await identity(), ids, "the identity is made once");

    // Releasing an OSD drains it first (kubectl exec into the storage's admin pod). The stack names
    // no kubernetes:context or kubeconfig, so the drain refuses rather than guess the cluster, and
    // under kwok no admin pod could run it anyway: destroy must stop there, nothing deleted on disk.
    const destroyed = await stack.pulumi(["destroy", "--yes", "--skip-preview"]);
    assert.notEqual(destroyed.code, 0, "destroy must refuse to release undrained OSDs");
    assert.match(destroyed.output, /refused: cannot tell which Kubernetes cluster .*nothing was drained or deleted/);
});
