/**
 * The plan-input budget of a 3-host CephFS with 4 OSDs (issue #20; `npm run bench` prints the same
 * figures, tools/benchFigures.ts): the roll's 18 gates and the drains carry a stub naming their
 * local script set, never the script (651.7 KB in all and 322.9 KB of gates when they inlined
 * it). Fails when a gate or drain grows back or the storage's inputs pass the bound.
 */
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { InputFigures, inputFigures } from "../../tools/benchFigures";

let f: InputFigures;
before(async () => {
    f = await inputFigures();
});

test("a gate or a drain carries no script: each under 2.5 KB of inputs, the 18 gates under 40 KB in all", () => {
    assert.equal(f.cephfs3x4Gates.count, 18);
    assert.equal(f.cephfs3x4Drains.count, 4);
    assert.ok(f.cephfs3x4Gates.largest < 2_500, `largest gate: ${f.cephfs3x4Gates.largest} bytes`);
    assert.ok(f.cephfs3x4Gates.bytes < 40_000, `gates: ${f.cephfs3x4Gates.bytes} bytes`);
    assert.ok(f.cephfs3x4Drains.largest < 2_500, `largest drain: ${f.cephfs3x4Drains.largest} bytes`);
});

test("the storage's inputs stay within 355 KB (352.1 KB measured, of which 10.5 KB the 4 OSD prepare Jobs; the rest is its script-set ConfigMaps, each set once)", () => {
    assert.ok(f.cephfs3x4Bytes <= 355_000, `${f.cephfs3x4Bytes} bytes`);
    const jobs = f.stacks["cephfs: 3 hosts, 4 OSDs"].filter((r) => r.type === "kubernetes:batch/v1:Job" && r.name.endsWith("-prepare"));
    assert.equal(jobs.length, 4);
    for (const j of jobs) assert.ok(JSON.stringify(j.inputs).length < 3_000, `${j.name}: ${JSON.stringify(j.inputs).length} bytes`);
    const sets = f.stacks["cephfs: 3 hosts, 4 OSDs"].filter((r) => r.type === "kubernetes:core/v1:ConfigMap" && /-scripts-[a-z-]+-[0-9a-f]{12}$/.test(r.name));
    // each set once per storage: six Ceph sets, the gates' and the drains' local sets
    assert.equal(sets.length, 8);
    assert.equal(new Set(sets.map((r) => r.name)).size, 8);
});
