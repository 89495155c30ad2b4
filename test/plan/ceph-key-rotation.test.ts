/**
 * What `cephfs[].keys: aes256` does to an existing CephFS stack (docs/cephfs.md "Key rotation",
 * step 4 and 6): one config planned without and with it, then the offline diff; and the stack made
 * by the program at 31eb1db (Squid, no flag) planned by this one with the flag. The three new
 * 32-byte key resources (mon., client.admin, client.bootstrap-osd; the CSI user's key follows
 * `csiKey`) are created beside the old ones (kept, unchanged: no replace, no delete), the key
 * Secrets take the new keys and every daemon's pod its new key hash (in place: the gated roll
 * restarts them one at a time). `csiKey: aes256` alone: the CSI user's 32-byte key resource
 * created, the CSI Secrets take it, the mons' init step drops `--allow-aes-keys`.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { upgradeDiff } from "../helpers/labelMove";
import { oldProgram } from "../helpers/oldProgram";
import { PlanRun, baseConfig, nodesThrough, planValues } from "../helpers/plan";

/** main before the flag (ships quay.io/ceph/ceph:v19.2.4). */
const baseCommit = "31eb1db";

const config = (keys?: "aes256", csiKey?: "aes256") => ({
    ...baseConfig,
    nodes: nodesThrough(6),
    "kubernetes:context": "prod-admin",
    cephfs: [{ name: "shared-fs", hosts: { node4: ["/dev/disk/by-id/wwn-0x4"], node5: ["/dev/disk/by-id/wwn-0x5"], node6: ["/dev/disk/by-id/wwn-0x6"] }, ...(keys ? { keys } : {}), ...(csiKey ? { csiKey } : {}) }],
});
const entities = ["admin", "bootstrap-osd", "mon"];

let old: ReturnType<typeof oldProgram> | undefined;
let plain: PlanRun;
let flagged: PlanRun;
let oldPlain: PlanRun;
let csiFlagged: PlanRun;
before(async () => {
    old = oldProgram(baseCommit);
    [plain, flagged, oldPlain, csiFlagged] = await Promise.all([planValues(config()), planValues(config("aes256")), planValues(config(), old.program), planValues(config(undefined, "aes256"))]);
    for (const r of [plain, flagged, oldPlain, csiFlagged]) assert.equal(r.error, undefined, r.error?.message);
});
after(() => old?.cleanup());

test("keys: aes256 on: three 32-byte key resources created (not the CSI user's), every daemon (its key hash) and gate updated in place; nothing replaced or deleted", () => {
    const changes = upgradeDiff(plain.resources, flagged.resources);
    const said = changes.map((c) => `${c.kind} ${c.resource.type} ${c.resource.name}${c.fields?.length ? " " + c.fields.join(",") : ""}`).sort();
    const daemons = ["mon-a", "mon-b", "mon-c", "mgr-a", "mgr-b", "mds-a", "mds-b", "osd-node4-wwn-0x4", "osd-node5-wwn-0x5", "osd-node6-wwn-0x6"];
    // The key Secrets get the new keys too, but a plan shows secret values only as [secret]: the
    // daemons' key hash (a sha256 of the keys each pod mounts) is where the plan sees the change.
    const gates = flagged.resources.filter((r) => r.type === "command:local:Command" && r.name.startsWith("shared-fs-gate-")).map((r) => r.name);
    assert.deepEqual(said, [
        ...entities.map((e) => `create random:index/randomBytes:RandomBytes shared-fs-key-${e}-aes256`),
        ...daemons.map((d) => `update kubernetes:apps/v1:Deployment ceph-shared-fs-${d} spec.template.metadata`),
        ...gates.map((g) => `update command:local:Command ${g} environment.ZCLOUD_GATE_GUARDS`),
    ].sort());
    for (const e of entities) {
        const fresh = flagged.resources.find((r) => r.name === `shared-fs-key-${e}-aes256`)!;
        assert.equal(fresh.inputs.length, 32, e);
        // the old key resource stays as it is
        const kept = flagged.resources.find((r) => r.name === `shared-fs-key-${e}`)!;
        assert.deepEqual(kept.inputs, plain.resources.find((r) => r.name === `shared-fs-key-${e}`)!.inputs);
    }
    // the daemons' only change: the key hash annotation
    for (const c of changes.filter((x) => x.resource.type === "kubernetes:apps/v1:Deployment")) {
        const strip = (i: any) => {
            const copy = JSON.parse(JSON.stringify(i));
            delete copy.spec.template.metadata.annotations["storage.zcloud.io/ceph-keys"];
            return copy;
        };
        assert.deepEqual(strip(c.resource.inputs), strip(c.before!.inputs), c.resource.name);
    }
});

test(`${baseCommit} (Squid, no flag) -> now with keys: aes256: creates and in-place updates; the one replace is the filesystem Job (a new image), the deletes the old Ceph script sets (each set new since the library moved out of them: test/plan/ceph-library.test.ts)`, () => {
    const changes = upgradeDiff(oldPlain.resources, flagged.resources);
    assert.deepEqual(changes.filter((c) => c.kind === "replace").map((c) => c.resource.name), ["shared-fs-filesystem"]);
    const oldSet = (set: string) => oldPlain.resources.find((r) => new RegExp(`^ceph-shared-fs-scripts-${set}-[0-9a-f]{12}$`).test(r.name))!.name;
    assert.deepEqual(changes.filter((c) => c.kind === "delete").map((c) => c.resource.name).sort(), ["fs", "gate", "keyring", "mon-init", "osd", "osd-drain"].map(oldSet).sort());
    const created = changes.filter((c) => c.kind === "create").map((c) => c.resource.name);
    for (const e of entities) assert.ok(created.includes(`shared-fs-key-${e}-aes256`), e);
    assert.equal(changes.find((c) => c.resource.type.startsWith("random:") && c.kind !== "create"), undefined);
});

test("csiKey: aes256 on: the CSI user's 32-byte key resource created (the old one kept), the mons' init drops --allow-aes-keys; no daemon key changes", () => {
    const changes = upgradeDiff(plain.resources, csiFlagged.resources);
    const said = changes.map((c) => `${c.kind} ${c.resource.type} ${c.resource.name}${c.fields?.length ? " " + c.fields.join(",") : ""}`).sort();
    // The CSI Secrets take the new key too, but a plan shows secret values only as [secret].
    assert.deepEqual(said, [
        "create random:index/randomBytes:RandomBytes shared-fs-key-csi-aes256",
        ...["a", "b", "c"].map((m) => `update kubernetes:apps/v1:Deployment ceph-shared-fs-mon-${m} spec.template.spec`),
        ...["mon-a", "mon-b", "mon-c", "roll-start"].map((g) => `update command:local:Command shared-fs-gate-${g} environment.ZCLOUD_GATE_GUARDS`),
    ].sort());
    const fresh = csiFlagged.resources.find((r) => r.name === "shared-fs-key-csi-aes256")!;
    assert.equal(fresh.inputs.length, 32);
    assert.deepEqual(csiFlagged.resources.find((r) => r.name === "shared-fs-key-csi")!.inputs, plain.resources.find((r) => r.name === "shared-fs-key-csi")!.inputs);
    const monInit = (run: PlanRun, mon: string) => JSON.stringify((run.resources.find((r) => r.name === `ceph-shared-fs-mon-${mon}`)!.inputs as any).spec.template.spec.initContainers[0].command);
    for (const m of ["a", "b", "c"]) {
        assert.ok(monInit(plain, m).endsWith(',"--allow-aes-keys"]'), monInit(plain, m));
        assert.equal(monInit(csiFlagged, m), monInit(plain, m).replace(',"--allow-aes-keys"]', "]"));
    }
    assert.deepEqual(changes.filter((c) => c.kind === "replace" || c.kind === "delete"), []);
    assert.deepEqual(changes.filter((c) => c.resource.type.startsWith("random:")).map((c) => `${c.kind} ${c.resource.name}`), ["create shared-fs-key-csi-aes256"]);
});
