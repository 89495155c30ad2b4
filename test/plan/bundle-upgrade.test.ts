/**
 * An existing stack made by the program that inlined the node scripts, moved to script bundles:
 * both programs planned under the mock runtime with one config, then the offline diff's step
 * kinds. Every remote command must be an in-place update (its create re-runs the idempotent
 * apply), never a replace or a delete (either would run a release); the copies are new.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { withoutLabelMove } from "../helpers/labelMove";
import { diffPlans } from "../../tools/plan/diff";
import { inlineScriptsCommit, plansBeforeAndNow } from "../helpers/oldProgram";
import { baseConfig, nodesThrough } from "../helpers/plan";


const nodes = { ...nodesThrough(6), node7: { address: "10.0.0.17", user: "ops" } };
const config = {
    ...baseConfig,
    nodes,
    lvm: [{ name: "fast", hosts: { node1: ["/dev/disk/by-id/wwn-0x1"], node3: ["/dev/disk/by-id/wwn-0x3"] }, thin: { overprovisionRatio: 2 } }],
    cephfs: [{ name: "shared-fs", hosts: { node4: ["/dev/disk/by-id/wwn-0x4"], node5: ["/dev/disk/by-id/wwn-0x5"], node6: ["/dev/disk/by-id/wwn-0x6", "/dev/disk/by-id/wwn-0x7"] } }],
    iscsi: [{ name: "san", portals: ["10.0.0.50:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1", lun: 0, chap: { username: "k8s", password: { secure: "v1:chap" } }, initiators: ["node2", "node7"] }],
};

// The old program's own files, resolving the same node_modules (one Pulumi SDK instance).
const plans = plansBeforeAndNow(inlineScriptsCommit, config);

test("the old program inlined the scripts: its plan is the base this proof needs", () => {
    const lvm = plans.before().resources.find((r) => r.name === "fast-node1-disks")!;
    assert.ok(String(lvm.inputs.create).includes("zc_log()"), "the base plan's command carries lib.sh");
    assert.equal(plans.before().resources.filter((r) => r.type === "command:remote:CopyToRemote").length, 0);
});

test("old program -> new: every remote command updates in place (create/update/delete strings), copies are created, nothing is replaced or deleted", () => {
    const changes = withoutLabelMove(diffPlans(plans.before().resources, plans.now().resources));
    // The filesystem Job is replaced on any change of its scripts, as before (its script set now
    // comes from a ConfigMap: test/plan/cephfs-scripts.test.ts); it runs idempotently and holds no data.
    assert.deepEqual(changes.filter((c) => c.kind === "replace" || c.kind === "delete").map((c) => `${c.kind} ${c.resource.name}`), ["replace shared-fs-filesystem"]);
    const remote = changes.filter((c) => c.resource.type === "command:remote:Command").map((c) => `${c.kind} ${c.resource.name} ${c.fields.join(",")}`);
    assert.deepEqual(remote.sort(), [
        "update fast-node1-disks create,delete",
        "update fast-node3-disks create,delete",
        "update san-node2-login create,delete,update",
        "update san-node7-login create,delete,update",
        "update san-vg create,delete,update",
        "update shared-fs-node4-disks create,delete",
        "update shared-fs-node5-disks create,delete",
        "update shared-fs-node6-disks create,delete",
    ]);
    const copies = changes.filter((c) => c.resource.type === "command:remote:CopyToRemote").map((c) => `${c.kind} ${c.resource.name}`);
    assert.deepEqual(copies.sort(), [
        "create fast-node1-disks-scripts",
        "create fast-node3-disks-scripts",
        "create san-node2-login-scripts",
        "create san-node7-login-scripts",
        "create san-vg-scripts",
        "create shared-fs-node4-disks-scripts",
        "create shared-fs-node5-disks-scripts",
        "create shared-fs-node6-disks-scripts",
    ]);
    // A remote command keeps its replacement rules: no triggers, delete-before-replace as before.
    for (const r of plans.now().resources.filter((x) => x.type === "command:remote:Command")) {
        const old = plans.before().resources.find((x) => x.urn === r.urn)!;
        assert.equal(r.inputs.triggers, undefined, r.name);
        assert.deepEqual(r.replaceOnChanges, old.replaceOnChanges, r.name);
        assert.equal(r.deleteBeforeReplace, old.deleteBeforeReplace, r.name);
    }
});

test("a remote command's only new dependency is its own node's script copy", () => {
    for (const r of plans.now().resources.filter((x) => x.type === "command:remote:Command")) {
        const old = plans.before().resources.find((x) => x.urn === r.urn)!;
        const copy = plans.now().resources.find((x) => x.name === `${r.name}-scripts`)!;
        assert.deepEqual(r.dependencies.filter((d) => !old.dependencies.includes(d)), [copy.urn], r.name);
    }
});
