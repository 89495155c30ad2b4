/**
 * The real preview as a gate: the policy pack stops a mandatory violation in `pulumi preview`
 * (a program that uses the components directly, past the config validation), and every manifest
 * the offline plan renders passes the real API server's validation (`kubectl apply --dry-run=server`).
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { EngineStack, Sandbox, ok, repoRoot, run, sandboxValues, serverDryRun, startSandbox } from "./engine";

let sandbox: Sandbox;

before(() => {
    sandbox = startSandbox({ nodes: 2, devices: 1 });
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

for (const stackName of ["dev", "prod"]) {
    test(`9. every manifest of \`npm run plan -- ${stackName} --out\` passes kubectl apply --dry-run=server`, async () => {
        const out = path.join(sandbox.dir, `rendered-${stackName}`);
        ok(await run("node", ["--import", "tsx", path.join(repoRoot, "tools", "plan.ts"), stackName, "--out", out], { cwd: repoRoot }), `npm run plan -- ${stackName} --out`);
        const manifests = path.join(out, "manifests");
        assert.ok(fs.readdirSync(manifests).length > 10, "the plan rendered the manifests");
        await serverDryRun(sandbox, manifests);
    });
}
