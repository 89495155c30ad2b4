/**
 * The two daemon changes after 35cf797 on an existing CephFS stack:
 * - mon-init's owner hand-over: ceph-mon-init.sh gives a mon store written under another uid than
 *   the image's ceph user (an image built elsewhere: Debian's ceph is 64045, quay.io's 167) to
 *   that user before the mon starts (the Ceph tier checks the decision on a real store, the nodes
 *   tier the roll between the two uids);
 * - the managers and metadata servers pinned to the storage's hosts (its node label), where they
 *   could run on any node of the cluster (the nodes tier saw mgr a and mds a land on a node that was
 *   not a host).
 * The stack made by the program at 35cf797 planned again: the mon-init set's ConfigMap moves; each
 * mon's Deployment is updated in place with nothing changed but the set it names, each mgr's and
 * mds's with nothing but the nodeSelector (so they restart once, one at a time through their
 * gates); the gates guarding them take the new guard; the OSDs, their gates and everything else
 * stay; nothing is replaced.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { diffPlans } from "../../tools/plan/diff";
import { renderRollOrder } from "../../tools/plan/roll";
import { cephDaemonMoves, cephDaemonRollOrder, cephGateMoves, mergedUpdates } from "../helpers/labelMove";
import { plansBeforeAndNow } from "../helpers/oldProgram";
import { DEPLOYMENT, PlanRun, PlannedResource, sharedFsConfig } from "../helpers/plan";

/** main before both changes. */
const before = "35cf797511840e9fceafa69b2ed4d234bf27c6f9";

const plans = plansBeforeAndNow(before, sharedFsConfig);

const line = (c: ReturnType<typeof diffPlans>[number]) => `${c.kind} ${c.resource.type} ${c.resource.name}${c.fields.length ? " " + c.fields.join(",") : ""}`;

function deployment(run: PlanRun, name: string): PlannedResource {
    const d = run.resources.find((r) => r.type === DEPLOYMENT && r.name === name);
    assert.ok(d, name);
    return d;
}

/** The mon-init set a mon's pods name: its ConfigMap and its sha256. */
function monInitSet(run: PlanRun, mon: string): { configMap: string; sha256: string } {
    const text = JSON.stringify(deployment(run, `ceph-shared-fs-mon-${mon}`).inputs);
    const sha256 = /ceph-mon-init\.sh=([0-9a-f]{64})/.exec(text)?.[1];
    const configMap = /"(ceph-shared-fs-scripts-mon-init-[0-9a-f]{12})"/.exec(text)?.[1];
    assert.ok(sha256 && configMap, `mon ${mon}: ${text.slice(0, 300)}`);
    return { configMap, sha256 };
}

test("an existing stack: the mon-init set moves, mons, mgrs and mdss roll once through their gates (in place); OSDs and all else stay", () => {
    const changes = diffPlans(plans.before().resources, plans.now().resources);
    // (and the gate script's later change runs every gate once: test/plan/ceph-gate-upgrade.test.ts)
    assert.deepEqual(changes.map(line).sort(), mergedUpdates([...cephDaemonMoves(plans.before().resources), ...cephGateMoves(plans.before().resources)]).sort());
    assert.deepEqual(changes.filter((c) => c.kind === "replace"), []);
});

test("each mon's pod template changes in the mon-init set it names and nothing else", () => {
    for (const mon of ["a", "b", "c"]) {
        const old = monInitSet(plans.before(), mon);
        const set = monInitSet(plans.now(), mon);
        assert.notEqual(set.sha256, old.sha256);
        const moved = JSON.stringify(deployment(plans.before(), `ceph-shared-fs-mon-${mon}`).inputs).split(old.configMap).join(set.configMap).split(old.sha256).join(set.sha256);
        assert.deepEqual(JSON.parse(moved), deployment(plans.now(), `ceph-shared-fs-mon-${mon}`).inputs);
    }
});

test("each mgr's and mds's pod template gains the storage's node label as its nodeSelector, and nothing else", () => {
    for (const name of ["mgr-a", "mgr-b", "mds-a", "mds-b"]) {
        const was = structuredClone(deployment(plans.before(), `ceph-shared-fs-${name}`).inputs) as any;
        assert.equal(was.spec.template.spec.nodeSelector, undefined, name);
        was.spec.template.spec.nodeSelector = { "storage.zcloud.io/cephfs": "shared-fs" };
        assert.deepEqual(deployment(plans.now(), `ceph-shared-fs-${name}`).inputs, was, name);
    }
});

test("--diff tells the order: roll-start, each mon behind its quorum gate, each mgr, each mds between its handover and fs-active; no OSD (the OSD hosts' gates run for the gate script's change)", () => {
    const order = renderRollOrder(diffPlans(plans.before().resources, plans.now().resources), plans.now().resources).split("\n");
    assert.deepEqual(order.slice(1), ["  shared-fs:", ...cephDaemonRollOrder()]);
});
