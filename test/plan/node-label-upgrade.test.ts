/**
 * An existing LVM stack made by the program before the node labels left the NodePatch: both
 * programs planned with one config, then the offline diff's steps. Per node exactly one create
 * (the label command) and one delete (the NodePatch of the same name); nothing else changes, no
 * disk command or script copy is touched. (Against a real API server, the NodePatch's delete
 * leaving the label: test/engine/node-label.test.ts.)
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { diffPlans } from "../../tools/plan/diff";
import { isScriptOnlyUpdate } from "../helpers/labelMove";
import { LABEL_COMMAND, NODE_PATCH } from "../helpers/labelMove";
import { nodePatchLabelsCommit, plansBeforeAndNow } from "../helpers/oldProgram";
import { baseConfig } from "../helpers/plan";

const config = { ...baseConfig, lvm: [{ name: "fast", default: true, hosts: { node1: ["/dev/sdb"], node2: ["/dev/sdb", "/dev/sdc"] } }] };
const plans = plansBeforeAndNow(nodePatchLabelsCommit, config);

test("old program -> new: per node the label command created and the NodePatch deleted; nothing else changes", () => {
    // (script-only updates of the disk commands since: test/plan/node-scripts-upgrade.test.ts)
    const changes = diffPlans(plans.before().resources, plans.now().resources)
        .filter((c) => !isScriptOnlyUpdate(c))
        .map((c) => `${c.kind} ${c.resource.type} ${c.resource.name}`);
    assert.deepEqual(changes.sort(), [
        `create ${LABEL_COMMAND} fast-node1-label`,
        `create ${LABEL_COMMAND} fast-node2-label`,
        `delete ${NODE_PATCH} fast-node1-label`,
        `delete ${NODE_PATCH} fast-node2-label`,
    ]);
    const label = plans.now().resources.find((r) => r.name === "fast-node2-label")!;
    const patch = plans.before().resources.find((r) => r.name === "fast-node2-label")!;
    const old = (patch.inputs as any).metadata;
    const now = JSON.parse(String(label.inputs.stdin)).metadata;
    // The same label and annotation values, so the relinquish of the old manager leaves them.
    assert.deepEqual([now.name, now.labels, now.annotations["storage.zcloud.io/lvm-devices"]], [old.name, old.labels, old.annotations["storage.zcloud.io/lvm-devices"]]);
    assert.equal(old.annotations["pulumi.com/patchFieldManager"], "zcloud-fast");
    assert.match(String(label.inputs.create), /--field-manager=zcloud-storage\/fast /);
});
