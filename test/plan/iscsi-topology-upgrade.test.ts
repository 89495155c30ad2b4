/**
 * An existing iSCSI stack whose StorageClass had allowedTopologies on the node label
 * storage.zcloud.io/iscsi: external-provisioner refused every CreateVolume of it (the selected
 * node's topology, csi-sanlock-lvm's own key, was not in the requisite terms it builds from
 * allowedTopologies; test/drivers/prebuilt/sanlock-flow.test.ts). Both programs planned with one
 * config, then the offline diff's steps: the StorageClass alone changes, in place (allowedTopologies
 * is mutable in Kubernetes); nothing on a node or in the driver changes.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { upgradeDiff } from "../helpers/labelMove";
import { plansBeforeAndNow } from "../helpers/oldProgram";
import { PlanRun, resourceNamed, sanIscsiConfig } from "../helpers/plan";

/** The program before the class named the driver's topology key. */
const beforeTopologyCommit = "3aac0da0e107c29ad9ccb29f0708f36666f8b8bb";

const plans = plansBeforeAndNow(beforeTopologyCommit, sanIscsiConfig);

test("old program -> new: the StorageClass's allowedTopologies updated in place to the driver's key and the initiators' host ids; nothing else changes", () => {
    const changes = upgradeDiff(plans.before().resources, plans.now().resources).map((c) => `${c.kind} ${c.resource.name} ${c.fields.join(",")}`);
    assert.deepEqual(changes, ["update san-storageclass allowedTopologies"]);
    const topologies = (run: PlanRun) => (resourceNamed(run, "san-storageclass", "kubernetes:storage.k8s.io/v1:StorageClass").inputs as any).allowedTopologies;
    assert.deepEqual(topologies(plans.before()), [{ matchLabelExpressions: [{ key: "storage.zcloud.io/iscsi", values: ["san"] }] }]);
    assert.deepEqual(topologies(plans.now()), [{ matchLabelExpressions: [{ key: "csi-sanlock-lvm/topology", values: ["12", "13"] }] }]);
});
