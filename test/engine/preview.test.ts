/**
 * The real preview as a gate: the policy pack stops a mandatory violation in `pulumi preview`
 * (a program that uses the components directly, past the config validation). The rendered
 * manifests' server-side validation is in controlplane.test.ts.
 */
import assert from "node:assert/strict";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { EngineStack, Sandbox, repoRoot, sandboxValues, startSandbox } from "./engine";

let sandbox: Sandbox;

before(() => {
    sandbox = startSandbox({ nodes: 1, devices: 1 });
});

after(() => sandbox?.stop());

test("1. a mandatory violation makes the real preview fail", async () => {
    const stack = new EngineStack(sandbox, "violation", "test/policy/programs/lvm-and-cephfs-on-node.ts");
    await stack.init(sandboxValues(sandbox, {}));
    const r = await stack.pulumi(["preview", "--policy-pack", path.join(repoRoot, "policy")]);
    assert.notEqual(r.code, 0, `preview must fail:\n${r.output.slice(-3000)}`);
    assert.match(r.output, /storage-node-exclusive/);
    assert.match(r.output, /mandatory/);
    assert.match(r.output, /node2/);
});

