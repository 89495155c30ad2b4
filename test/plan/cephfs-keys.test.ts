/**
 * CephFS keys across a release of the program: a new stack's keys are as long as the shipped Ceph
 * image wants for each entity (AES-256 from Tentacle 20 on, the CSI user's AES-128), while an existing stack's key resources keep what they
 * hold: `length` is ignored once the bytes exist, so the offline diff from the previous program
 * shows no change of a key resource or of the key Secrets (a replace would make new keys that the
 * cluster does not know).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { GeneratedKey, cephKeyBytes } from "../../components/cephfs/cluster";
import { images } from "../../components/images";
import { diffPlans } from "../../tools/plan/diff";
import { oldProgram } from "../helpers/oldProgram";
import { PlanRun, baseConfig, nodesThrough, planValues } from "../helpers/plan";

/** The program before keys followed the image's release (16-byte keys without ignoreChanges). */
const fixedLengthKeysCommit = "67000edf925f644889f087619a043b836a50a9bf";

const nodes = nodesThrough(6);
const config = {
    ...baseConfig,
    nodes,
    cephfs: [{ name: "shared-fs", hosts: { node4: ["/dev/disk/by-id/wwn-0x4"], node5: ["/dev/disk/by-id/wwn-0x5"], node6: ["/dev/disk/by-id/wwn-0x6"] } }],
};
const keyResources = ["shared-fs-key-admin", "shared-fs-key-bootstrap-osd", "shared-fs-key-csi", "shared-fs-key-mon"];

let old: ReturnType<typeof oldProgram> | undefined;
let before_: PlanRun;
let after_: PlanRun;
before(async () => {
    old = oldProgram(fixedLengthKeysCommit);
    [before_, after_] = await Promise.all([planValues(config, old.program), planValues(config)]);
    assert.equal(before_.error, undefined, before_.error?.message);
    assert.equal(after_.error, undefined, after_.error?.message);
});
after(() => old?.cleanup());

test("a new stack's keys get the shipped release's length for their entity (the CSI user's: AES-128); the length is ignored once they exist", () => {
    const keys = after_.resources.filter((r) => r.type === "random:index/randomBytes:RandomBytes").map((r) => r.name).sort();
    assert.deepEqual(keys, keyResources);
    for (const r of after_.resources.filter((x) => keyResources.includes(x.name))) {
        const entity = r.name.slice("shared-fs-key-".length) as GeneratedKey;
        assert.equal(r.inputs.length, cephKeyBytes(images.ceph, entity), r.name);
        if (entity === "csi") assert.equal(r.inputs.length, 16, "the CSI user's key stays AES-128 by default");
        assert.deepEqual(r.ignoreChanges, ["length"], r.name);
    }
});

test("the previous program made 16-byte keys: the base this proof needs", () => {
    for (const r of before_.resources.filter((x) => keyResources.includes(x.name))) {
        assert.equal(r.inputs.length, 16, r.name);
        assert.equal(r.ignoreChanges, undefined, r.name);
    }
});

test("old program -> new: no key resource and no key Secret changes (no replace, no new key)", () => {
    const changes = diffPlans(before_.resources, after_.resources);
    const touched = changes
        .filter((c) => keyResources.includes(c.resource.name) || (c.resource.type === "kubernetes:core/v1:Secret" && /keys|csi/.test(c.resource.name)))
        .map((c) => `${c.kind} ${c.resource.name} ${c.fields.join(",")}`);
    assert.deepEqual(touched, []);
});
