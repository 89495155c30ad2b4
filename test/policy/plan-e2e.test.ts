// The pack over what the real components register, planned under Pulumi's mock runtime like
// `npm run plan` does (tools/plan), with the inputs a CrossGuard policy would see.
import assert from "node:assert/strict";
import * as path from "node:path";
import { describe, it } from "node:test";

import { evaluatePolicies, formatViolations, hasMandatoryViolations } from "../../policy/policies";
import { baseConfig, planValues, planYaml, PlanRun } from "../helpers/plan";

function policyInput(run: PlanRun) {
    assert.equal(run.error, undefined, run.error?.message);
    return run.resources.map((r) => ({ type: r.type, name: r.name, urn: r.urn, props: r.policyInputs ?? r.inputs }));
}

describe("policy pack over planned components", () => {
    it("fails a program that puts one node in two lvm storages on the same disk, with two defaults", async () => {
        const run = await planYaml("config:\n  zcloud-storage:namespace: zcloud-storage\n", path.join(__dirname, "programs/lvm-twice-on-node.ts"));
        const violations = evaluatePolicies(policyInput(run));
        const urnOf = (name: string) => run.resources.find((r) => r.name === name)!.urn;
        assert.deepEqual(
            violations.map((v) => ({ policy: v.policy, level: v.enforcementLevel, urn: v.urn, message: v.message.split(":")[0] })),
            [
                { policy: "storage-node-exclusive", level: "mandatory", urn: urnOf("bulk-node2-label"), message: "node2 serves lvm 'local-fast' and lvm 'bulk'" },
                { policy: "storage-device-single-claim", level: "mandatory", urn: urnOf("bulk-node2-label"), message: "node2 /dev/sdb is claimed by lvm 'local-fast' and lvm 'bulk'" },
                { policy: "storage-single-default-class", level: "mandatory", urn: urnOf("bulk-storageclass"), message: "StorageClasses 'local-fast' and 'bulk' are both marked default" },
            ],
        );
        assert.equal(hasMandatoryViolations(violations), true);
        assert.match(formatViolations(violations), /❌ zcloud-storage-policy@v0\.1\.0/);
    });

    it("passes what the real program plans for a valid config (images pinned, agents in the storage namespace, no secrets in clear)", async () => {
        const run = await planValues({
            ...baseConfig,
            lvm: [{ name: "local-fast", default: true, hosts: { node1: ["/dev/sdb"], node2: ["/dev/sdb", "/dev/sdc"] } }],
        });
        const violations = evaluatePolicies(policyInput(run));
        // baseConfig pins node1's host key only: node2 gets the advisory, nothing else is reported.
        assert.deepEqual(
            violations.map((v) => `${v.enforcementLevel} ${v.policy} ${v.urn?.split("::").pop()}`),
            ["advisory storage-ssh-host-key-pinned local-fast-node2-disks"],
        );
        assert.equal(hasMandatoryViolations(violations), false);
    });
});
