// The mandatory node and device policies over what the real LvmStorage and CephFsStorage register
// when a program builds them directly (no config validation) with one machine under two node
// names: they group claims by the SSH endpoint the remote commands reach, not by node name.
import assert from "node:assert/strict";
import * as path from "node:path";
import { describe, it } from "node:test";

import { evaluatePolicies, hasMandatoryViolations } from "../../policy/policies";
import { planValues } from "../helpers/plan";

describe("policy pack over components on one machine under two node names", () => {
    it("fails lvm on node2 and cephfs on node9 when both reach 10.0.0.12:22, naming both names and the endpoint", async () => {
        const run = await planValues({ namespace: "zcloud-storage" }, path.join(__dirname, "programs/one-machine-two-names.ts"));
        assert.equal(run.error, undefined, run.error?.message);
        const violations = evaluatePolicies(run.resources.map((r) => ({ type: r.type, name: r.name, urn: r.urn, props: r.policyInputs ?? r.inputs })));
        const cephLabel = run.resources.find((r) => r.name === "shared-fs-node9-label")!;
        assert.deepEqual(
            violations.filter((v) => v.policy === "storage-node-exclusive" || v.policy === "storage-device-single-claim"),
            [
                {
                    policy: "storage-node-exclusive",
                    enforcementLevel: "mandatory",
                    urn: cephLabel.urn,
                    message:
                        "node2 and node9 are one machine (all reach 10.0.0.12:22) and it serves lvm 'local-fast' on node2 and cephfs 'shared-fs' on node9: " +
                        "a machine's disks must belong to one of them (a Ceph OSD and an LVM VG would compete for the machine). " +
                        "Give each of node2 and node9 the address of its own machine in zcloud-storage:nodes, or keep the machine in one storage, in the stack config.",
                },
                {
                    policy: "storage-device-single-claim",
                    enforcementLevel: "mandatory",
                    urn: cephLabel.urn,
                    message:
                        "/dev/sdb of one machine reached as node2 and node9 (all at 10.0.0.12:22) is claimed by lvm 'local-fast' on node2 and cephfs 'shared-fs' on node9: " +
                        "a disk holds one LVM physical volume or one Ceph OSD, so the second storage's disk prep would either refuse it or, with wipe, destroy the first one's data. " +
                        "Give each of node2 and node9 the address of its own machine in zcloud-storage:nodes, or list /dev/sdb under one storage only, in the stack config.",
                },
            ],
        );
        assert.deepEqual(violations.filter((v) => !v.policy.startsWith("storage-node-exclusive") && v.policy !== "storage-device-single-claim"), [], "nothing else is wrong");
        assert.equal(hasMandatoryViolations(violations), true);
        assert.doesNotMatch(JSON.stringify(violations), /test-key/, "no credential in a message");
    });
});
