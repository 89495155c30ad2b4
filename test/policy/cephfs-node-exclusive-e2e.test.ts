// The mandatory node-exclusive policy over what the real LvmStorage and CephFsStorage register
// when a program builds them directly (no config validation) with one node in both.
import assert from "node:assert/strict";
import * as path from "node:path";
import { describe, it } from "node:test";

import { evaluatePolicies, hasMandatoryViolations } from "../../policy/policies";
import { planValues } from "../helpers/plan";

describe("policy pack over planned lvm and cephfs components", () => {
    it("fails a program that puts node2 in an lvm and a cephfs storage", async () => {
        const run = await planValues({ namespace: "zcloud-storage" }, path.join(__dirname, "programs/lvm-and-cephfs-on-node.ts"));
        assert.equal(run.error, undefined, run.error?.message);
        const violations = evaluatePolicies(run.resources.map((r) => ({ type: r.type, name: r.name, urn: r.urn, props: r.policyInputs ?? r.inputs })));
        const exclusive = violations.filter((v) => v.policy === "storage-node-exclusive");
        assert.equal(exclusive.length, 1, JSON.stringify(violations, null, 2));
        assert.equal(exclusive[0].enforcementLevel, "mandatory");
        assert.match(exclusive[0].message, /^node2 serves (lvm 'local-fast' and cephfs 'shared-fs'|cephfs 'shared-fs' and lvm 'local-fast')/);
        assert.deepEqual(
            violations.filter((v) => v.policy !== "storage-node-exclusive"),
            [],
            "nothing else is wrong with the program",
        );
        assert.equal(hasMandatoryViolations(violations), true);
    });
});
