/**
 * A new mon joins by itself (ceph-mon-init.sh no longer runs `ceph mon add`; docs/cephfs.md,
 * "Mons"): what the change does to a stack made by main before it (58181c8), planned again by
 * this program under the mock runtime, then the offline diff. Only the mon-init script set
 * changes: the three mon Deployments roll, one at a time behind their gates; nothing else moves.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { gateGuardsEnv } from "../../components/cephfs/gates";
import { cephScriptBundle, cephScriptSetName } from "../../components/cephfs/scripts";
import { diffPlans } from "../../tools/plan/diff";
import { PlannedResource } from "../../tools/plan/model";
import { gateArgs, isRollGate, renderRollOrder, rollChains } from "../../tools/plan/roll";
import { plansBeforeAndNow } from "../helpers/oldProgram";
import { cephDaemonMoves, cephDaemonRollOrder, cephGateMoves, mergedUpdates, shrinkScriptMoves, upgradeDiff } from "../helpers/labelMove";
import { baseConfig } from "../helpers/plan";

/** main before this change: mon-init ran `ceph mon add` before the daemon started. */
const beforeSelfJoin = "58181c8";

const DEPLOYMENT = "kubernetes:apps/v1:Deployment";
const CONFIG_MAP = "kubernetes:core/v1:ConfigMap";
const LOCAL = "command:local:Command";
const SETS = "storage.zcloud.io/script-sets";

const config = {
    ...baseConfig,
    nodes: { ...baseConfig.nodes, node4: { address: "10.0.0.14" }, node5: { address: "10.0.0.15" }, node6: { address: "10.0.0.16" } },
    "kubernetes:context": "prod-admin",
    cephfs: [{ name: "shared-fs", hosts: { node4: ["/dev/disk/by-id/wwn-0x4"], node5: ["/dev/disk/by-id/wwn-0x5"], node6: ["/dev/disk/by-id/wwn-0x6", "/dev/disk/by-id/wwn-0x7"] } }],
};
const mons = ["a", "b", "c"].map((id) => `ceph-shared-fs-mon-${id}`);
const isMonInitSet = (r: PlannedResource) => r.type === CONFIG_MAP && /^ceph-shared-fs-scripts-mon-init-[0-9a-f]{12}$/.test(r.name);
/** The mon-init set's sha256 in a pod template's script-sets annotation. */
const monInitSha = (r: PlannedResource) => /(?:^|,)ceph-mon-init\.sh=([0-9a-f]{64})(?:,|$)/.exec((r.inputs as any).spec.template.metadata.annotations[SETS])![1];

describe(`a stack made by ${beforeSelfJoin} (mon-init ran \`ceph mon add\`)`, () => {
    const plans = plansBeforeAndNow(beforeSelfJoin, config);

    test("pulumi up: the new mon-init set created, the old one deleted, the three mons updated in place, the gates around them run again; nothing else", () => {
        const was = plans.before();
        const now = plans.now();
        const changes = upgradeDiff(was.resources, now.resources);
        const said = changes.map((c) => `${c.kind} ${c.resource.type} ${c.resource.name}${c.fields?.length ? " " + c.fields.join(",") : ""}`).sort();
        const oldSet = was.resources.filter(isMonInitSet).map((r) => r.name);
        assert.equal(oldSet.length, 1);
        const expected = new Set(mergedUpdates([
            `create ${CONFIG_MAP} ${cephScriptSetName("shared-fs", "ceph-mon-init.sh")}`,
            `delete ${CONFIG_MAP} ${oldSet[0]}`,
            ...mons.map((d) => `update ${DEPLOYMENT} ${d} spec.template.metadata,spec.template.spec`),
            ...["roll-start", "mon-a", "mon-b", "mon-c"].map((g) => `update ${LOCAL} shared-fs-gate-${g} environment.${gateGuardsEnv}`),
            ...shrinkScriptMoves(was.resources),
            // later changes': the same mon lines, and the mgrs and mdss pinned to the storage's hosts
            ...cephDaemonMoves(was.resources),
            // and the gate script's (each gate runs once)
            ...cephGateMoves(was.resources),
        ]));
        assert.deepEqual(said, [...expected].sort());
        assert.deepEqual(changes.filter((c) => c.kind === "replace").map((c) => c.resource.name), ["shared-fs-filesystem"], "only the later shrink change's Job replace");
        for (const c of changes.filter((x) => x.kind === "update")) assert.deepEqual(c.replaceBecause, [], c.resource.name);
    });

    test("each mon's pod template: only the mon-init set it names (volume, runner hash, annotation) differs", () => {
        const was = plans.before();
        const now = plans.now();
        const [oldSet] = was.resources.filter(isMonInitSet);
        const [newSet] = now.resources.filter(isMonInitSet);
        assert.equal(newSet.name, cephScriptSetName("shared-fs", "ceph-mon-init.sh"));
        for (const name of mons) {
            const before = was.resources.find((r) => r.name === name)!;
            const after = now.resources.find((r) => r.name === name)!;
            const oldSha = monInitSha(before);
            assert.equal(monInitSha(after), cephScriptBundle("ceph-mon-init.sh").sha256, name);
            assert.notEqual(oldSha, monInitSha(after), name);
            const moved = JSON.stringify(before.inputs).split(oldSha).join(monInitSha(after)).split(oldSet.name).join(newSet.name);
            assert.deepEqual(JSON.parse(JSON.stringify(after.inputs)), JSON.parse(moved), name);
        }
        // the script the new set carries no longer adds the mon; the old one did
        const script = (r: PlannedResource) => (r.inputs as any).data["ceph-mon-init.sh"] as string;
        assert.match(script(oldSet), /zcc_ceph -m "\$mi_peers" mon add /);
        assert.doesNotMatch(script(newSet), /\bmon add\b[^`]/);
        assert.match(script(newSet), /the daemon asks the quorum to add it at \$mi_jn_addr"/);
    });

    test("one gated roll: the chain the gates had, each mon restarts once behind its gate (then the mgrs and mdss, a later change's)", () => {
        const was = plans.before();
        const now = plans.now();
        const names = (rs: PlannedResource[]) => rs.map((r) => r.name);
        assert.deepEqual(names(rollChains(now.resources).get("shared-fs")!), names(rollChains(was.resources).get("shared-fs")!));
        const gates = (rs: PlannedResource[]) => rs.filter(isRollGate).map((g) => `${g.name}: ${gateArgs(g)}`);
        assert.deepEqual(gates(now.resources), gates(was.resources));
        const order = renderRollOrder(diffPlans(was.resources, now.resources), now.resources).split("\n");
        // the mons' part is this change's; the managers and mdss follow for a later one's pinning to
        // the storage's hosts (test/plan/ceph-daemons-upgrade.test.ts), the OSD hosts' gates for the
        // gate script's (test/plan/ceph-gate-upgrade.test.ts)
        assert.deepEqual(order.slice(2), cephDaemonRollOrder());
    });
});
