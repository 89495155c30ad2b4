/**
 * An existing stack made by the program before this release's node-script changes, planned by
 * both programs under the mock runtime with one config, then the offline diff:
 * - the partition guard (partition-guard.sh, shipped with the lvm and cephfs disk scripts only):
 *   those disk commands' bundles change, so each copy updates in place (a copy's update copies the
 *   new bundle to its new path, named by its sha256; `triggers` is its only replaceOnChanges path);
 * - the stub's checks of the staged path (run-bundle.sh, in every remote command's strings): every
 *   remote command updates in place, and its create re-runs the idempotent apply.
 * Nothing is replaced or deleted, no Ceph daemon rolls (the Ceph library is unchanged).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { cephDaemonMoves, cephGateMoves, isMonLeaveAddition, isScriptOnlyUpdate, mergedUpdates, shrinkScriptMoves, withoutLabelMove } from "../helpers/labelMove";
import { diffPlans } from "../../tools/plan/diff";
import { plansBeforeAndNow } from "../helpers/oldProgram";
import { baseConfig, nodesThrough } from "../helpers/plan";

/** The last commit before this release's node-script changes. */
const beforeReleaseCommit = "970d0ee9b5c7fceeab5a892ddcc2855d6126a470";

const config = {
    ...baseConfig,
    nodes: nodesThrough(7),
    lvm: [{ name: "fast", hosts: { node1: ["/dev/disk/by-id/wwn-0x1"], node3: ["/dev/disk/by-id/wwn-0x3"] }, thin: { overprovisionRatio: 2 } }],
    cephfs: [{ name: "shared-fs", hosts: { node4: ["/dev/disk/by-id/wwn-0x4"], node5: ["/dev/disk/by-id/wwn-0x5"], node6: ["/dev/disk/by-id/wwn-0x6", "/dev/disk/by-id/wwn-0x7"] } }],
    iscsi: [{ name: "san", portals: ["10.0.0.50:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1", lun: 0, chap: { username: "k8s", password: { secure: "v1:chap" } }, initiators: ["node2", "node7"] }],
};

const plans = plansBeforeAndNow(beforeReleaseCommit, config);

test("program before -> now: every remote command, and the lvm and cephfs disk copies, update in place; nothing else changes", () => {
    // Less the shrink change's (its leaves and their sets, its two moved sets: test/plan/ceph-shrink.test.ts)
    // the daemon changes after 35cf797 (test/plan/ceph-daemons-upgrade.test.ts) and the gate script's after 91b472e (test/plan/ceph-gate-upgrade.test.ts).
    const shrink = new Set(mergedUpdates([...shrinkScriptMoves(plans.before().resources), ...cephDaemonMoves(plans.before().resources), ...cephGateMoves(plans.before().resources)]));
    const changes = withoutLabelMove(diffPlans(plans.before().resources, plans.now().resources)).filter(
        (c) => !isMonLeaveAddition(c) && !shrink.has(`${c.kind} ${c.resource.type} ${c.resource.name}${c.fields.length ? " " + c.fields.join(",") : ""}`),
    );
    assert.deepEqual(changes.map((c) => `${c.kind} ${c.resource.type} ${c.resource.name} ${c.fields.join(",")}`).sort(), [
        "update command:remote:Command fast-node1-disks create,delete",
        "update command:remote:Command fast-node3-disks create,delete",
        "update command:remote:Command san-node2-login create,delete,update",
        "update command:remote:Command san-node7-login create,delete,update",
        "update command:remote:Command san-vg create,delete,update",
        "update command:remote:Command shared-fs-node4-disks create,delete",
        "update command:remote:Command shared-fs-node5-disks create,delete",
        "update command:remote:Command shared-fs-node6-disks create,delete",
        "update command:remote:CopyToRemote fast-node1-disks-scripts remotePath,source.path,source.sha256",
        "update command:remote:CopyToRemote fast-node3-disks-scripts remotePath,source.path,source.sha256",
        "update command:remote:CopyToRemote shared-fs-node4-disks-scripts remotePath,source.path,source.sha256",
        "update command:remote:CopyToRemote shared-fs-node5-disks-scripts remotePath,source.path,source.sha256",
        "update command:remote:CopyToRemote shared-fs-node6-disks-scripts remotePath,source.path,source.sha256",
    ]);
    // each runs another script set with the arguments it had: what other upgrade tests look past
    assert.deepEqual(changes.filter((c) => !isScriptOnlyUpdate(c)), []);
});
