/**
 * An existing CephFS stack whose ceph-csi provisioner plugin ran without --setmetadata: the PVC and
 * PV names csi-provisioner sends (--extra-create-metadata) were dropped, so no subvolume told whose
 * it was (test/drivers/prebuilt/cephcsi-flow.test.ts). Both programs planned with one config, then
 * the offline diff's steps: the provisioner Deployment alone changes, in place (its pod template:
 * a rolling restart of the provisioner pod); nothing of the cluster, its daemons or the node
 * plugin (whose restart would end the FUSE mounts of its node) changes.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { diffPlans } from "../../tools/plan/diff";
import { plansBeforeAndNow } from "../helpers/oldProgram";
import { PlanRun, baseConfig, resourceNamed } from "../helpers/plan";

/** main before the provisioner plugin had --setmetadata. */
const beforeSetMetadata = "2a50df63c4e81032034c23983a6624000bdf5f86";

const config = { ...baseConfig, "kubernetes:context": "prod-admin", cephfs: [{ name: "shared-fs", hosts: { node1: ["/dev/disk/by-id/wwn-0x1"], node2: ["/dev/disk/by-id/wwn-0x2"], node3: ["/dev/disk/by-id/wwn-0x3"] } }] };
const plans = plansBeforeAndNow(beforeSetMetadata, config);

test("old program -> new: the ceph-csi provisioner Deployment updated in place (its plugin's --setmetadata=true); nothing else changes", () => {
    const changes = diffPlans(plans.before().resources, plans.now().resources).map((c) => `${c.kind} ${c.resource.name} ${c.fields.join(",")}`);
    // Since that commit the Ceph daemons' script sets also moved to a shared library and the OSDs
    // gained prepare Jobs (test/plan/ceph-library.test.ts, ceph-osd-prepare.test.ts): changes of the
    // storage's own resources. Of everything else, ceph-csi's included, only the provisioner changes.
    const own = /^(create|update|delete|replace) (ceph-)?shared-fs-/;
    assert.deepEqual(changes.filter((c) => !own.test(c)), ["update ceph-csi-cephfs-provisioner spec.template.spec"]);
    const args = (run: PlanRun) => ((resourceNamed(run, "ceph-csi-cephfs-provisioner", "kubernetes:apps/v1:Deployment").inputs as any).spec.template.spec.containers as any[]).find((c) => c.name === "csi-cephfsplugin").args;
    assert.deepEqual(args(plans.now()), [...args(plans.before()), "--setmetadata=true"]);
});
