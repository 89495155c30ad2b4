/**
 * An existing CephFS stack made by the program at b7ed797 (Ceph Squid, quay.io/ceph/ceph:v19.2.4)
 * planned again by this program, which still ships Squid 19.2.4 but carries the script fixes
 * the Ceph tier needed at Tentacle 20.2.4 (the release to move to): both programs planned under
 * the mock runtime with one config, then the offline diff. The image stays; ceph-osd.sh (Ceph
 * 20's label marks a finished mkfs with `ready` only; keys of both shapes masked) and
 * ceph-mon-init.sh changed, so the mon-init and OSD script sets are new ConfigMaps
 * (content-addressed names; the old ones go last) and the mons and OSDs update in place; every
 * daemon's pod also gains the ceph.conf and key hashes, and the roll's gates are created in the
 * same up, so the pods restart one at a time behind them (test/plan/ceph-roll.test.ts); the
 * drains update in place (their delete carries the shared kubectl library); ceph.conf, the admin
 * pods and the filesystem Job stay as they are.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { diffPlans } from "../../tools/plan/diff";
import { oldProgram } from "../helpers/oldProgram";
import { PlanRun, baseConfig, planValues } from "../helpers/plan";

/** The merged program before the Tentacle script fixes (it ships quay.io/ceph/ceph:v19.2.4, as this one does). */
const baseCommit = "b7ed797";

const config = {
    ...baseConfig,
    nodes: { ...baseConfig.nodes, node4: { address: "10.0.0.14" }, node5: { address: "10.0.0.15" }, node6: { address: "10.0.0.16" } },
    cephfs: [{ name: "shared-fs", hosts: { node4: ["/dev/disk/by-id/wwn-0x4"], node5: ["/dev/disk/by-id/wwn-0x5"], node6: ["/dev/disk/by-id/wwn-0x6", "/dev/disk/by-id/wwn-0x7"] } }],
};

let old: ReturnType<typeof oldProgram> | undefined;
let before_: PlanRun;
let after_: PlanRun;
before(async () => {
    old = oldProgram(baseCommit);
    [before_, after_] = await Promise.all([planValues(config, old.program), planValues(config)]);
    assert.equal(before_.error, undefined, before_.error?.message);
    assert.equal(after_.error, undefined, after_.error?.message);
});
after(() => old?.cleanup());

/** Every container image of a planned resource (pod templates and Jobs). */
function imagesOf(r: PlanRun["resources"][number]): string[] {
    return JSON.stringify(r.inputs).match(/"image":"[^"]+"/g)?.map((m) => m.slice(9, -1)) ?? [];
}

test("the base plan ships Squid v19.2.4 in every Ceph container", () => {
    const ceph = before_.resources.flatMap(imagesOf).filter((i) => i.startsWith("quay.io/ceph/ceph:"));
    assert.ok(ceph.length > 0);
    assert.deepEqual([...new Set(ceph)], ["quay.io/ceph/ceph:v19.2.4"]);
});

test("b7ed797 -> now: the image stays v19.2.4; the daemons update in place (script sets, conf and key hashes) behind new gates; nothing replaced", () => {
    const changes = diffPlans(before_.resources, after_.resources);
    // The mon-init and OSD script sets changed (ceph-mon-init.sh, ceph-osd.sh): new ConfigMaps
    // (content-addressed names), the old ones deleted last.
    const setName = (plan: PlanRun, set: string) => plan.resources.find((r) => r.type === "kubernetes:core/v1:ConfigMap" && r.name.startsWith(`ceph-shared-fs-scripts-${set}-`))!.name;
    const sets = ["mon-init", "osd"].map((set) => [setName(before_, set), setName(after_, set)]);
    for (const [was, now] of sets) assert.notEqual(was, now);
    const gates = after_.resources.filter((r) => r.type === "command:local:Command" && r.name.startsWith("shared-fs-gate-")).map((r) => r.name);
    assert.equal(gates.length, 1 + 3 + 2 + 2 + 3 * 2 + 2 * 2);
    const drains = ["node4-osd-wwn-0x4", "node5-osd-wwn-0x5", "node6-osd-wwn-0x6", "node6-osd-wwn-0x7"].map((d) => `shared-fs-${d}-drain`);
    assert.deepEqual(changes.map((c) => `${c.kind} ${c.resource.type} ${c.resource.name} ${c.fields.join(",")}`).sort(), [
        ...sets.map(([, now]) => `create kubernetes:core/v1:ConfigMap ${now} `),
        `create kubernetes:core/v1:ConfigMap ${setName(after_, "gate")} `,
        // the gates' and drains' local script sets (their stubs read them: test/plan/ceph-roll.test.ts)
        ...["cephfs-gate", "cephfs-osd-remove"].map((set) => `create kubernetes:core/v1:ConfigMap ${setName(after_, set)} `),
        ...gates.map((g) => `create command:local:Command ${g} `),
        ...["mon-a", "mon-b", "mon-c"].map((d) => `update kubernetes:apps/v1:Deployment ceph-shared-fs-${d} spec.template.metadata,spec.template.spec`),
        ...["mgr-a", "mgr-b", "mds-a", "mds-b"].map((d) => `update kubernetes:apps/v1:Deployment ceph-shared-fs-${d} spec.template.metadata`),
        ...["node4-wwn-0x4", "node5-wwn-0x5", "node6-wwn-0x6", "node6-wwn-0x7"].map((d) => `update kubernetes:apps/v1:Deployment ceph-shared-fs-osd-${d} spec.template.metadata,spec.template.spec`),
        ...drains.map((d) => `update command:local:Command ${d} delete`),
        ...sets.map(([was]) => `delete kubernetes:core/v1:ConfigMap ${was} `),
    ].sort());
    for (const c of changes.filter((x) => x.kind === "update" && x.resource.type !== "command:local:Command")) {
        const was = before_.resources.find((r) => r.urn === c.resource.urn)!;
        // The new inputs are the old ones with the script set's name (and its hash annotation)
        // moved, nothing else: the image is the same.
        const hashes = (inputs: any): string => inputs.spec?.template?.metadata?.annotations?.["storage.zcloud.io/script-sets"] ?? "";
        const moved = JSON.stringify(was.inputs)
            .replaceAll(sets[0][0], sets[0][1])
            .replaceAll(sets[1][0], sets[1][1])
            .replaceAll(hashes(was.inputs) || "\0", hashes(c.resource.inputs));
        // ... and the ceph.conf and key hashes added (test/plan/ceph-roll.test.ts).
        const now = JSON.parse(JSON.stringify(c.resource.inputs));
        delete now.spec.template.metadata.annotations["storage.zcloud.io/ceph-conf"];
        delete now.spec.template.metadata.annotations["storage.zcloud.io/ceph-keys"];
        if (Object.keys(now.spec.template.metadata.annotations).length === 0) delete now.spec.template.metadata.annotations;
        assert.equal(JSON.stringify(now), moved, c.resource.name);
        assert.deepEqual(c.resource.replaceOnChanges, was.replaceOnChanges, c.resource.name);
        assert.equal(c.resource.deleteBeforeReplace, was.deleteBeforeReplace, c.resource.name);
    }
    assert.deepEqual([...new Set(after_.resources.flatMap(imagesOf).filter((i) => i.startsWith("quay.io/ceph/ceph:")))], ["quay.io/ceph/ceph:v19.2.4"]);
});
