/**
 * What the key-rotation change does to an existing CephFS stack (docs/cephfs.md "Key rotation"):
 * the stack planned by the program before it and by this one, one config, the offline diff.
 * Only ceph-mon-init.sh changed among the scripts the stack deploys (an AES-128 `mon.` key in an
 * existing store's keyring is replaced by the Secret's AES-256 one): its script set is a new
 * ConfigMap, the mons update in place (one restart each, behind their gates, which run again),
 * the old set is deleted. ceph-keys.sh is run by hand and belongs to no script set. No key,
 * Secret, disk command or other daemon changes; nothing is replaced.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { cephScriptSetName } from "../../components/cephfs/scripts";
import { diffPlans } from "../../tools/plan/diff";
import { oldProgram } from "../helpers/oldProgram";
import { PlanRun, baseConfig, planValues } from "../helpers/plan";

/** main before the rotation's scripts. */
const baseCommit = "31eb1db";

const config = {
    ...baseConfig,
    nodes: { ...baseConfig.nodes, node4: { address: "10.0.0.14" }, node5: { address: "10.0.0.15" }, node6: { address: "10.0.0.16" } },
    "kubernetes:context": "prod-admin",
    cephfs: [{ name: "shared-fs", hosts: { node4: ["/dev/disk/by-id/wwn-0x4"], node5: ["/dev/disk/by-id/wwn-0x5"], node6: ["/dev/disk/by-id/wwn-0x6"] } }],
};

let old: ReturnType<typeof oldProgram> | undefined;
let before_: PlanRun;
let after_: PlanRun;
before(async () => {
    old = oldProgram(baseCommit);
    [before_, after_] = await Promise.all([planValues(config, old.program), planValues(config)]);
    assert.equal(before_.error, undefined, before_.error?.message);
    assert.equal(after_.error, undefined, after_.error?.message);
});
after(() => old?.cleanup());

test(`${baseCommit} -> now: the mon-init script set replaced by a new ConfigMap, the mons and their gates updated in place; nothing else`, () => {
    const changes = diffPlans(before_.resources, after_.resources);
    const said = changes.map((c) => `${c.kind} ${c.resource.name}${c.fields?.length ? " " + c.fields.join(",") : ""}`).sort();
    const oldSet = before_.resources.find((r) => r.name.startsWith("ceph-shared-fs-scripts-mon-init-"))!.name;
    const newSet = cephScriptSetName("shared-fs", "ceph-mon-init.sh");
    assert.notEqual(oldSet, newSet);
    assert.deepEqual(said, [
        `create ${newSet}`,
        `delete ${oldSet}`,
        ...["a", "b", "c"].map((m) => `update ceph-shared-fs-mon-${m} spec.template.metadata,spec.template.spec`),
        ...["a", "b", "c"].map((m) => `update shared-fs-gate-mon-${m} create,environment.ZCLOUD_GATE_GUARDS,update`),
        // roll-start is new since 31eb1db, and every gate runs the new gate script set (test/plan/ceph-roll.test.ts)
        `create ${cephScriptSetName("shared-fs", "ceph-gate.sh")}`,
        `delete ${before_.resources.find((r) => r.name.startsWith("ceph-shared-fs-scripts-gate-"))!.name}`,
        "create shared-fs-gate-roll-start",
        ...after_.resources
            .filter((r) => r.type === "command:local:Command" && r.name.startsWith("shared-fs-gate-") && !/^shared-fs-gate-(mon-|roll-start$)/.test(r.name))
            .map((r) => `update ${r.name} create,update`),
        // the gates' and drains' local script sets, and the drains' delete now their stub (ceph-roll.test.ts)
        `create ${cephScriptSetName("shared-fs", "cephfs-gate.sh")}`,
        `create ${cephScriptSetName("shared-fs", "cephfs-osd-remove.sh")}`,
        ...after_.resources.filter((r) => r.type === "command:local:Command" && r.name.endsWith("-drain")).map((r) => `update ${r.name} delete`),
    ].sort());
});
