/**
 * An existing iSCSI stack whose StorageClass had allowedTopologies on the node label
 * storage.zcloud.io/iscsi: external-provisioner refused every CreateVolume of it (the selected
 * node's topology, csi-sanlock-lvm's own key, was not in the requisite terms it builds from
 * allowedTopologies; test/drivers/prebuilt/sanlock-flow.test.ts). Both programs planned with one
 * config, then the offline diff's steps: the StorageClass alone changes, in place (allowedTopologies
 * is mutable in Kubernetes); nothing on a node or in the driver changes.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { diffPlans } from "../../tools/plan/diff";
import { oldProgram } from "../helpers/oldProgram";
import { PlanRun, baseConfig, planValues, resourceNamed } from "../helpers/plan";

/** The program before the class named the driver's topology key. */
const beforeTopologyCommit = "3aac0da0e107c29ad9ccb29f0708f36666f8b8bb";

const config = {
    ...baseConfig,
    iscsi: [
        {
            name: "san",
            portals: ["10.0.0.50:3260"],
            iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1234",
            lun: 1,
            chap: { username: "k8s", password: { secure: "v1:chap-ciphertext" } },
            initiators: ["node1", "node2"],
        },
    ],
};

let old: ReturnType<typeof oldProgram> | undefined;
let before_: PlanRun;
let after_: PlanRun;
before(async () => {
    old = oldProgram(beforeTopologyCommit);
    [before_, after_] = await Promise.all([planValues(config, old.program), planValues(config)]);
    assert.equal(before_.error, undefined, before_.error?.message);
    assert.equal(after_.error, undefined, after_.error?.message);
});
after(() => old?.cleanup());

test("old program -> new: the StorageClass's allowedTopologies updated in place to the driver's key and the initiators' host ids; nothing else changes", () => {
    const changes = diffPlans(before_.resources, after_.resources).map((c) => `${c.kind} ${c.resource.name} ${c.fields.join(",")}`);
    assert.deepEqual(changes, ["update san-storageclass allowedTopologies"]);
    const topologies = (run: PlanRun) => (resourceNamed(run, "san-storageclass", "kubernetes:storage.k8s.io/v1:StorageClass").inputs as any).allowedTopologies;
    assert.deepEqual(topologies(before_), [{ matchLabelExpressions: [{ key: "storage.zcloud.io/iscsi", values: ["san"] }] }]);
    assert.deepEqual(topologies(after_), [{ matchLabelExpressions: [{ key: "csi-sanlock-lvm/topology", values: ["12", "13"] }] }]);
});
