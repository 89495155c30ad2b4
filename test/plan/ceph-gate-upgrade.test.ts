/**
 * The gate script's change after 91b472e on an existing CephFS stack: ceph-gate.sh's
 * osd-ok-to-stop waits, bounded, while Ceph's only objection is placement groups inactive already
 * (a moment of peering after the previous host's OSDs came back; the nodes tier's roll once stopped
 * on one), where it refused at once. test/unit/ceph-gate.test.ts checks the decision on given
 * answers, test/ceph/roll.test.ts on a real cluster.
 * The stack made by the program at 91b472e planned again: the gate set's ConfigMap moves, every
 * gate is updated in place with nothing changed but the set its command names (so each runs once
 * on the next up, in the roll's order); no daemon restarts, nothing else changes, nothing is
 * replaced.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { cephScriptSetName } from "../../components/cephfs/scripts";
import { diffPlans } from "../../tools/plan/diff";
import { gateChangeNote, isRollGate, renderRollOrder } from "../../tools/plan/roll";
import { cephDaemonRollOrder, cephGateMoves } from "../helpers/labelMove";
import { plansBeforeAndNow } from "../helpers/oldProgram";
import { CONFIG_MAP, PlannedResource, sharedFsConfig } from "../helpers/plan";

/** main before the change. */
const before = "91b472effe8f75def0391d289964e20835188f98";

const plans = plansBeforeAndNow(before, sharedFsConfig);

const line = (c: ReturnType<typeof diffPlans>[number]) => `${c.kind} ${c.resource.type} ${c.resource.name}${c.fields.length ? " " + c.fields.join(",") : ""}`;
const gateSet = (rs: PlannedResource[]) => {
    const sets = rs.filter((r) => r.type === CONFIG_MAP && /^ceph-shared-fs-scripts-gate-[0-9a-f]{12}$/.test(r.name));
    assert.equal(sets.length, 1, sets.map((s) => s.name).join(", "));
    return sets[0];
};

test("an existing stack: the gate set moves and every gate (18) runs once, in place; no daemon, nothing else", () => {
    const changes = diffPlans(plans.before().resources, plans.now().resources);
    assert.deepEqual(changes.map(line).sort(), cephGateMoves(plans.before().resources).sort());
    assert.equal(changes.filter((c) => c.kind === "update").length, 18);
    for (const c of changes) assert.deepEqual(c.replaceBecause, [], c.resource.name);
});

test("each gate's command differs only in the gate set's ConfigMap it names; its environment (the guards) and dependencies stay", () => {
    const [was, now] = [gateSet(plans.before().resources), gateSet(plans.now().resources)];
    assert.equal(now.name, cephScriptSetName("shared-fs", "ceph-gate.sh"));
    for (const g of plans.now().resources.filter(isRollGate)) {
        const old = plans.before().resources.find((r) => r.urn === g.urn)!;
        const i = g.inputs as { create: string; environment: unknown };
        const o = old.inputs as { create: string; environment: unknown };
        assert.ok(o.create.includes(` --script-configmap ${was.name} `), g.name);
        assert.equal(i.create, o.create.replace(` --script-configmap ${was.name} `, ` --script-configmap ${now.name} `), g.name);
        assert.deepEqual(i.environment, o.environment, g.name);
        const rename = (d: string) => d.replace(was.name, now.name);
        assert.deepEqual(g.dependencies, old.dependencies.map(rename), g.name);
        // `--diff`'s note on it
        const change = diffPlans([old], [g])[0];
        assert.equal(gateChangeNote(change).note, "its script set or kubectl target changes; the gate runs again", g.name);
    }
});

test("the new set's ceph-gate.sh is the one that waits for placement groups inactive already; the old one refused", () => {
    const script = (r: PlannedResource) => (r.inputs as { data: Record<string, string> }).data["ceph-gate.sh"];
    assert.doesNotMatch(script(gateSet(plans.before().resources)), /gt_already_inactive/);
    assert.match(script(gateSet(plans.now().resources)), /gt_ok_pgs=\$\(gt_already_inactive "\$gt_ok_out"\)/);
});

test("--diff tells that the gates run, in their order, and what they do with no restart (noout, the mds handovers)", () => {
    const order = renderRollOrder(diffPlans(plans.before().resources, plans.now().resources), plans.now().resources).split("\n");
    assert.deepEqual(order, [
        "Ceph health gates run again, in this order, with no daemon restart (each acts as in a roll: noout set and unset set and clear the flag, an mds handover fails its MDS over to the standby when it holds a rank, a pause of a few seconds for clients):",
        "  shared-fs:",
        ...cephDaemonRollOrder("shared-fs", 600, false),
    ]);
});
