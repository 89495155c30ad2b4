/**
 * The plan-input budget of a 3-host CephFS with 4 OSDs (issue #20; `npm run bench` prints the same
 * figures, tools/benchFigures.ts): the roll's 18 gates and the drains carry a stub naming their
 * local script set, never the script (651.7 KB in all and 322.9 KB of gates when they inlined
 * it). Fails when a gate or drain grows back or the storage's inputs pass the bound.
 */
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { readNodeScript } from "../../components/node/script";
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

test("the storage's inputs stay within the issue's 300 KB (283.4 KB measured with the 4 OSD prepare Jobs, 3.5 KB each, and the mons' leaves with their two sets; 338.8 KB while each Ceph set carried lib.sh + ceph-lib.sh)", () => {
    assert.ok(f.cephfs3x4Bytes <= 300_000, `${f.cephfs3x4Bytes} bytes`);
    const jobs = f.stacks["cephfs: 3 hosts, 4 OSDs"].filter((r) => r.type === "kubernetes:batch/v1:Job" && r.name.endsWith("-prepare"));
    assert.equal(jobs.length, 4);
    for (const j of jobs) assert.ok(JSON.stringify(j.inputs).length < 4_000, `${j.name}: ${JSON.stringify(j.inputs).length} bytes`);
    const sets = f.stacks["cephfs: 3 hosts, 4 OSDs"].filter((r) => r.type === "kubernetes:core/v1:ConfigMap" && /-scripts-[a-z-]+-[0-9a-f]{12}$/.test(r.name));
    // each set once per storage: the shared library, seven Ceph sets, the gates', the drains' and the mons' leave local sets
    assert.equal(sets.length, 11);
    assert.equal(new Set(sets.map((r) => r.name)).size, 11);
    // the library's text travels once: no other ConfigMap of the storage holds lib.sh's first lines
    const lib = readNodeScript("lib.sh").slice(0, 400);
    assert.deepEqual(sets.filter((r) => JSON.stringify(r.inputs).includes(JSON.stringify(lib).slice(1, -1))).map((r) => r.name.replace(/-[0-9a-f]{12}$/, "")), ["ceph-shared-fs-scripts-library"]);
});
