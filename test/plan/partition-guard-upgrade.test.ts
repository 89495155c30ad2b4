/**
 * An existing stack made by the program before the partition guard (partition-guard.sh, shipped
 * with the lvm and cephfs disk scripts only): both programs planned under the mock runtime with one
 * config, then the offline diff. Only the disk commands' bundles change: each disk command and
 * its script copy update in place (the create re-runs the idempotent reconcile); nothing else
 * changes, so no Ceph daemon rolls and no iSCSI command runs. A copy's update copies the new bundle
 * to its new path (named by its sha256); `triggers` is its only replaceOnChanges path.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { upgradeDiff } from "../helpers/labelMove";
import { plansBeforeAndNow } from "../helpers/oldProgram";
import { baseConfig, nodesThrough } from "../helpers/plan";

/** The last commit before the partition guard. */
const beforeGuardCommit = "970d0ee9b5c7fceeab5a892ddcc2855d6126a470";

const config = {
    ...baseConfig,
    nodes: nodesThrough(7),
    lvm: [{ name: "fast", hosts: { node1: ["/dev/disk/by-id/wwn-0x1"], node3: ["/dev/disk/by-id/wwn-0x3"] }, thin: { overprovisionRatio: 2 } }],
    cephfs: [{ name: "shared-fs", hosts: { node4: ["/dev/disk/by-id/wwn-0x4"], node5: ["/dev/disk/by-id/wwn-0x5"], node6: ["/dev/disk/by-id/wwn-0x6", "/dev/disk/by-id/wwn-0x7"] } }],
    iscsi: [{ name: "san", portals: ["10.0.0.50:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1", lun: 0, chap: { username: "k8s", password: { secure: "v1:chap" } }, initiators: ["node2", "node7"] }],
};

const plans = plansBeforeAndNow(beforeGuardCommit, config);

test("program before the partition guard -> now: the lvm and cephfs disk commands and their copies update in place, nothing else changes", () => {
    const changes = upgradeDiff(plans.before().resources, plans.now().resources);
    assert.deepEqual(changes.map((c) => `${c.kind} ${c.resource.type} ${c.resource.name} ${c.fields.join(",")}`).sort(), [
        "update command:remote:Command fast-node1-disks create,delete",
        "update command:remote:Command fast-node3-disks create,delete",
        "update command:remote:Command shared-fs-node4-disks create,delete",
        "update command:remote:Command shared-fs-node5-disks create,delete",
        "update command:remote:Command shared-fs-node6-disks create,delete",
        "update command:remote:CopyToRemote fast-node1-disks-scripts remotePath,source.path,source.sha256",
        "update command:remote:CopyToRemote fast-node3-disks-scripts remotePath,source.path,source.sha256",
        "update command:remote:CopyToRemote shared-fs-node4-disks-scripts remotePath,source.path,source.sha256",
        "update command:remote:CopyToRemote shared-fs-node5-disks-scripts remotePath,source.path,source.sha256",
        "update command:remote:CopyToRemote shared-fs-node6-disks-scripts remotePath,source.path,source.sha256",
    ]);
});
