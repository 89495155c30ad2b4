/**
 * What an older program's plan becomes under today's, less the changes every upgrade test would
 * otherwise repeat, each asserted by a test of its own:
 * - the node labels' move: an older program's plan labels nodes by NodePatches, the program now by
 *   label commands of the same names (each NodePatch deleted, the command of its name created);
 * - script-only updates: a node command whose every changed phase runs another script set with the
 *   same arguments (a node script or the stub changed), and its script copy's new bundle. Each
 *   re-runs its idempotent apply in place; test/plan/node-scripts-upgrade.test.ts and
 *   bundle-upgrade.test.ts assert them.
 */
import assert from "node:assert/strict";
import { nodeCommandArgs } from "../../tools/plan/describe";
import { Change, diffPlans } from "../../tools/plan/diff";
import { PlannedResource } from "../../tools/plan/model";

export const NODE_PATCH = "kubernetes:core/v1:NodePatch";
export const LABEL_COMMAND = "command:local:Command";

/** Asserts the move's shape (per NodePatch: its delete and one create of the command named alike) and returns the other changes. */
export function withoutLabelMove(changes: Change[]): Change[] {
    const patches = changes.filter((c) => c.resource.type === NODE_PATCH);
    for (const p of patches) {
        assert.equal(p.kind, "delete", `${p.resource.name}: the NodePatch is deleted`);
        const created = changes.filter((c) => c.resource.name === p.resource.name && c.resource.type === LABEL_COMMAND);
        assert.deepEqual(created.map((c) => c.kind), ["create"], `${p.resource.name}: its label command is created`);
    }
    const moved = new Set(patches.map((p) => p.resource.name));
    return changes.filter((c) => !moved.has(c.resource.name) || (c.resource.type !== NODE_PATCH && c.resource.type !== LABEL_COMMAND));
}

const phases = new Set(["create", "update", "delete"]);
const copyFields = new Set(["remotePath", "source.path", "source.sha256"]);
const sameRun = (a: unknown, b: unknown) =>
    typeof a === "string" && typeof b === "string" && nodeCommandArgs(a) !== "" && nodeCommandArgs(a) === nodeCommandArgs(b) && a.startsWith("sudo -n ") === b.startsWith("sudo -n ");

/** An update that only moves a node command, or its copy, to another script set. */
export function isScriptOnlyUpdate(c: Change): boolean {
    if (c.kind !== "update" || !c.before) return false;
    if (c.resource.type === "command:remote:Command") {
        return c.fields.length > 0 && c.fields.every((f) => phases.has(f) && sameRun(c.before!.inputs[f], c.resource.inputs[f]));
    }
    if (c.resource.type === "command:remote:CopyToRemote") {
        return c.fields.length > 0 && c.fields.every((f) => copyFields.has(f));
    }
    return false;
}

/** diffPlans of an older program's plan and today's, without the node labels' move (asserted) and script-only updates. */
export function upgradeDiff(before: PlannedResource[], after: PlannedResource[]): Change[] {
    return withoutLabelMove(diffPlans(before, after)).filter((c) => !isScriptOnlyUpdate(c));
}
