/**
 * zcloud-storage:configFiles under the real CLI: the program finds the files beside its stack file
 * (the project's stackConfigDir), a value in both places stops the preview before anything
 * changes, and a fleet whose config would be over Linux's 128 KiB limit for the one environment
 * variable Pulumi passes it in previews, policy pack included, once its inventory is in a file.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { generatedLvmValues } from "../../../tools/benchStack";
import { EngineStack, Sandbox, exportedResources, ok, previewOperations, repoRoot, sandboxValues, splitInventory, startSandbox } from "./engine";

const policyPack = path.join(repoRoot, "policy");
let sandbox: Sandbox;

before(() => {
    sandbox = startSandbox({ nodes: 2, devices: 1 });
});

after(() => sandbox?.stop());

test("1. the inventory in a config file: pulumi up with the policy pack prepares and labels every node; the next preview is empty; a value set twice stops the preview", async () => {
    const stack = new EngineStack(sandbox, "inventory");
    const hosts = Object.fromEntries(Object.entries(sandbox.nodes).map(([n, s]) => [n, s.devices]));
    const split = splitInventory(sandboxValues(sandbox, { lvm: [{ name: "local-fast", default: true, hosts }] }), "inventory/nodes.yaml");
    await stack.init(split.stack);
    stack.writeConfigFile("inventory/nodes.yaml", split.inventory);

    ok(await stack.pulumi(["up", "--yes", "--skip-preview", "--policy-pack", policyPack]), "pulumi up");
    const exported = ok(await stack.pulumi(["stack", "export"]), "pulumi stack export").stdout;
    const disks = exportedResources(exported)
        .filter((r) => r.type === "command:remote:Command")
        .map((r) => r.urn.split("::").pop())
        .sort();
    assert.deepEqual(disks, ["local-fast-node1-disks", "local-fast-node2-disks"]);
    const labelled = execFileSync("kubectl", ["get", "nodes", "-l", "storage.zcloud.io/lvm=local-fast", "-o", "name"], { env: sandbox.env, encoding: "utf8" });
    assert.deepEqual(labelled.trim().split("\n").sort(), ["node/node1", "node/node2"]);
    ok(await stack.pulumi(["preview", "--expect-no-changes", "--policy-pack", policyPack]), "pulumi preview --expect-no-changes");

    // node1's address in the stack file too: refused before any step, naming both files.
    stack.write({ ...split.stack, nodes: { node1: { address: "127.0.0.1" } } });
    const twice = await stack.pulumi(["preview"]);
    assert.notEqual(twice.code, 0, twice.output.slice(-2000));
    assert.match(
        twice.output,
        /zcloud-storage:nodes\.node1\.address: is set in stacks\/Pulumi\.inventory\.yaml and again in inventory\/nodes\.yaml; a config file adds keys, it does not override them: keep the value in one place/,
    );
    stack.write(split.stack);
    ok(await stack.pulumi(["preview", "--expect-no-changes"]), "pulumi preview --expect-no-changes after the fix");
    ok(await stack.pulumi(["destroy", "--yes", "--skip-preview"]), "pulumi destroy");
});

test("2. 500 nodes x 4 devices: over the limit in the stack file (argument list too long); with the inventory in a file, pulumi preview with the policy pack plans all 500", async () => {
    const values = generatedLvmValues(500, 4);
    const inline = new EngineStack(sandbox, "fleet-inline");
    await inline.init(values);
    const refused = await inline.pulumi(["preview"]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.output, /argument list too long/);

    const stack = new EngineStack(sandbox, "fleet");
    const split = splitInventory(values, "fleet/inventory.yaml");
    await stack.init(split.stack);
    stack.writeConfigFile("fleet/inventory.yaml", split.inventory);
    const r = ok(await stack.pulumi(["preview", "--json", "--policy-pack", policyPack]), "pulumi preview of 500 nodes");
    const creates = [...previewOperations(r.stdout)].filter(([urn, op]) => op === "create" && /\$command:remote:Command::local-fast-node\d+-disks$/.test(urn));
    assert.equal(creates.length, 500);
    console.log(`# 500 nodes x 4 devices, inventory in a config file: pulumi preview --policy-pack ${r.seconds.toFixed(1)} s`);
});
