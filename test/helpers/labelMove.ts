/**
 * The node labels' move of this release: an older program's plan labels nodes by NodePatches, the
 * program now by label commands of the same names. Old plan -> new, each NodePatch is deleted and
 * the command of its name created, nothing else of them changes.
 */
import assert from "node:assert/strict";
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

/** diffPlans of an older program's plan and today's, without the node labels' move (asserted). */
export function upgradeDiff(before: PlannedResource[], after: PlannedResource[]): Change[] {
    return withoutLabelMove(diffPlans(before, after));
}
