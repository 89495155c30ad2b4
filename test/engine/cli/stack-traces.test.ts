/**
 * Registration stacks in the checkpoint: a stack applied by the program before
 * limitRegistrationStackTraces (every resource's `stackTrace` some 20 frames) previews with this
 * program with no change but the node labels' later move (NodePatch -> label command), and after
 * `pulumi up` every resource made by the program keeps 4 frames, its `sourcePosition` in the same
 * file as before; the checkpoint shrinks and the next preview is empty.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { LABEL_COMMAND, NODE_PATCH } from "../../helpers/labelMove";
import { oldProgram } from "../../helpers/oldProgram";
import { EngineStack, Sandbox, ok, previewOperations, repoRoot, sandboxValues, startSandbox } from "./engine";

/** The last commit whose program sent each resource's whole registration stack. */
const fullStacksCommit = "67000edf925f644889f087619a043b836a50a9bf";

let sandbox: Sandbox;
let stack: EngineStack;
let old: ReturnType<typeof oldProgram>;

before(() => {
    sandbox = startSandbox({ nodes: 2, devices: 2 });
    old = oldProgram(fullStacksCommit);
    stack = new EngineStack(sandbox, "stack-traces");
});

after(() => {
    sandbox?.stop();
    old?.cleanup();
});

interface Exported {
    urn: string;
    type: string;
    sourcePosition?: string;
    stackTrace?: Array<{ sourcePosition?: string }>;
}

async function exported(): Promise<{ bytes: number; resources: Exported[] }> {
    const text = ok(await stack.pulumi(["stack", "export"]), "pulumi stack export").stdout;
    const doc = JSON.parse(text) as { deployment: { resources: Exported[] } };
    // The program's resources: the stack's own and the providers' stacks start in the SDK.
    const resources = doc.deployment.resources.filter((r) => !/^pulumi:(pulumi|providers):/.test(r.type));
    return { bytes: text.length, resources };
}

test("a stack with whole registration stacks moves to 4 frames per resource with no change but the label move; sourcePosition stays", async () => {
    stack.useProgram(old.dir);
    const hosts = Object.fromEntries(Object.entries(sandbox.nodes).map(([n, s]) => [n, s.devices]));
    await stack.init(sandboxValues(sandbox, { namespace: "zcloud-storage", lvm: [{ name: "local-fast", default: true, hosts }] }));
    ok(await stack.pulumi(["up", "--yes", "--skip-preview"]), "pulumi up (older program)");
    const was = await exported();
    const disks = was.resources.filter((r) => r.urn.endsWith("-disks"));
    assert.equal(disks.length, 2, "one disk command per node");
    for (const r of disks) {
        assert.ok((r.stackTrace ?? []).length > 10, `${r.urn}: the older program sends the whole stack (${r.stackTrace?.length} frames)`);
    }

    stack.useProgram(repoRoot);
    // The only changes: the node labels' move of a later release (NodePatch -> label command, per node).
    const preview = previewOperations(ok(await stack.pulumi(["preview", "--json"]), "pulumi preview (this program)").stdout);
    const labelMove = (urn: string, op: string) => (urn.includes(`$${NODE_PATCH}::`) && op === "delete") || (urn.includes(`$${LABEL_COMMAND}::`) && op === "create");
    assert.deepEqual(
        [...preview].filter(([urn, op]) => labelMove(urn, op)).map(([urn, op]) => `${op} ${urn.split("::").pop()}`).sort(),
        ["create local-fast-node1-label", "create local-fast-node2-label", "delete local-fast-node1-label", "delete local-fast-node2-label"],
    );
    assert.deepEqual([...preview].filter(([urn, op]) => !labelMove(urn, op)), [], "no other resource changes");

    ok(await stack.pulumi(["up", "--yes", "--skip-preview"]), "pulumi up (this program)");
    const now = await exported();
    const position = new Map(was.resources.map((r) => [r.urn, r.sourcePosition]));
    for (const r of now.resources) {
        assert.equal((r.stackTrace ?? []).length, 4, `${r.urn}: ${JSON.stringify(r.stackTrace)}`);
        // The label commands are new (the move above); every resource that was there keeps its position.
        if (!r.urn.includes(`$${LABEL_COMMAND}::`)) {
            // The same file of the program (the two programs live in different directories, and
            // the lines of the older commit's files have moved since).
            const inProgram = (p: string | undefined) => p?.replace(/^.*\/components\//, "components/").replace(/#\d+,\d+$/, "");
            assert.equal(inProgram(r.sourcePosition), inProgram(position.get(r.urn)), `${r.urn}: sourcePosition`);
        }
        assert.match(r.sourcePosition ?? "", /\/components\/.+\.ts#\d+,\d+$/, `${r.urn}: sourcePosition in the program`);
    }
    console.log(`engine stack traces: checkpoint ${(was.bytes / 1024).toFixed(1)} KiB -> ${(now.bytes / 1024).toFixed(1)} KiB (${now.resources.length} resources, 2 nodes)`);
    assert.ok(now.bytes < was.bytes - now.resources.length * 500, `the checkpoint shrinks by over 500 bytes per resource (${was.bytes} -> ${now.bytes})`);

    ok(await stack.pulumi(["preview", "--expect-no-changes"]), "pulumi preview --expect-no-changes");
});
