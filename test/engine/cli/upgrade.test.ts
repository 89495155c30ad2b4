/**
 * An existing stack moves to this version by `pulumi up`: a stack applied by the program of the
 * last commit that carried node scripts inline (test/helpers/oldProgram.ts) is previewed and
 * applied with this one. Only creates (the script copies, the label commands), in-place updates
 * and the NodePatches' deletes (the labels' move), no replace, so no node releases anything: every VG keeps its UUID and its LVs; the next preview is
 * empty. Also measures the checkpoint before and after (bytes per node's disk command).
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { inlineScriptsCommit, oldProgram } from "../../helpers/oldProgram";
import { EngineStack, Sandbox, engineSteps, exportedResources, ok, previewOperations, repoRoot, sandboxValues, startSandbox } from "./engine";

const storage = "local-fast";
const vg = `zcloud-${storage}`;
let sandbox: Sandbox;
let stack: EngineStack;
let old: ReturnType<typeof oldProgram>;

before(() => {
    sandbox = startSandbox({ nodes: 2, devices: 2 });
    old = oldProgram(inlineScriptsCommit);
    stack = new EngineStack(sandbox, "upgrade");
});

after(() => {
    sandbox?.stop();
    old?.cleanup();
});

/** VG name, UUID and PV of every node's storage VG, and its LVs: what a release would change. */
function disks(): string {
    return Object.keys(sandbox.nodes)
        .map((n) => `${n}: ${sandbox.lvm(n, ["pvs", "--noheadings", "-o", "pv_name,vg_name,vg_uuid"]).trim().replace(/\s+/g, " ")} | lvs: ${sandbox.lvm(n, ["lvs", "--noheadings", "-o", "lv_name", vg]).trim()}`)
        .join("\n");
}

/** Bytes of the disk commands' state (inputs and outputs) per node, from `pulumi stack export`. */
async function diskCommandBytes(): Promise<number> {
    const exported = ok(await stack.pulumi(["stack", "export"]), "pulumi stack export").stdout;
    const commands = exportedResources(exported).filter((r) => r.type === "command:remote:Command" && r.urn.endsWith("-disks"));
    assert.equal(commands.length, Object.keys(sandbox.nodes).length, "one disk command per node");
    return commands.reduce((s, r) => s + JSON.stringify(r).length, 0) / commands.length;
}

test("a stack applied by the inline-scripts program moves to this one by creates and in-place updates only; nothing is released", async () => {
    stack.useProgram(old.dir);
    const hosts = Object.fromEntries(Object.entries(sandbox.nodes).map(([n, s]) => [n, s.devices]));
    await stack.init(sandboxValues(sandbox, { namespace: "zcloud-storage", lvm: [{ name: storage, default: true, hosts }] }));
    ok(await stack.pulumi(["up", "--yes", "--skip-preview"]), "pulumi up (older program)");
    // A volume's LV on node1: an upgrade that released the VG would fail on it or lose it.
    sandbox.lvm("node1", ["lvcreate", "--driverloaded", "n", "-an", "-Zn", "-L", "8m", "-n", "volume-1", vg]);
    const before = disks();
    const oldBytes = await diskCommandBytes();

    stack.useProgram(repoRoot);
    const preview = previewOperations(ok(await stack.pulumi(["preview", "--json"]), "pulumi preview (this program)").stdout);
    // "op type::name", the type without its parents' types (`a$b$command:remote:Command`).
    const kinds = [...preview].map(([urn, op]) => `${op} ${urn.split("::").slice(-2).map((part, i) => (i === 0 ? part.split("$").pop() : part)).join("::")}`).sort();
    // The one kind of delete: each node's NodePatch, whose label command (same name) is created
    // (the labels' move since, test/engine/cli/node-label.test.ts).
    const labelMove = Object.keys(sandbox.nodes).map((node) => `delete kubernetes:core/v1:NodePatch::${storage}-${node}-label`);
    assert.deepEqual(
        kinds.filter((k) => /^(delete|replace) /.test(k)),
        labelMove.sort(),
        `the upgrade deletes or replaces nothing else:\n${kinds.join("\n")}`,
    );
    for (const node of Object.keys(sandbox.nodes)) {
        assert.ok(kinds.includes(`update command:remote:Command::${storage}-${node}-disks`), `${node}'s disk command is updated in place:\n${kinds.join("\n")}`);
        assert.ok(kinds.includes(`create command:local:Command::${storage}-${node}-label`), `${node}'s label command is created:\n${kinds.join("\n")}`);
    }

    const log = path.join(sandbox.dir, "upgrade-events.jsonl");
    ok(await stack.pulumi(["up", "--yes", "--skip-preview", "--event-log", log]), "pulumi up (this program)");
    const ran = engineSteps(fs.readFileSync(log, "utf8")).filter((s) => s.phase === "start" && /^(delete|replace|create-replacement|delete-replaced)$/.test(s.op));
    assert.deepEqual(
        ran.map((s) => `${s.op} ${s.urn.split("::").pop()}`).sort(),
        Object.keys(sandbox.nodes).map((node) => `delete ${storage}-${node}-label`).sort(),
        "the engine ran no delete or replace but the NodePatches'",
    );
    assert.ok(ran.every((s) => s.urn.includes("kubernetes:core/v1:NodePatch::")), "the deletes are the NodePatches'");
    assert.equal(disks(), before, "every VG keeps its UUID, PVs and LVs");

    const newBytes = await diskCommandBytes();
    console.log(`engine upgrade: disk command state per node ${(oldBytes / 1024).toFixed(1)} KiB (older program) -> ${(newBytes / 1024).toFixed(1)} KiB`);
    assert.ok(newBytes < oldBytes / 4, `the disk command's state shrinks (${oldBytes} -> ${newBytes} bytes)`);

    ok(await stack.pulumi(["preview", "--expect-no-changes"]), "pulumi preview --expect-no-changes after the upgrade");
    sandbox.lvm("node1", ["lvremove", "-y", `${vg}/volume-1`]);
    ok(await stack.pulumi(["destroy", "--yes", "--skip-preview"]), "pulumi destroy");
});
