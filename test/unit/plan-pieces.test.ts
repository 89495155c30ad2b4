/**
 * The plan in pieces' pure parts (tools/plan/piece.ts, tools/plan/pieces.ts): which LVM nodes a
 * piece keeps, how many pieces, the merge of the pieces' records into the one-process order, and
 * when the pieces cannot be merged. The end-to-end equality is test/plan/plan-pieces.test.ts.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { StackModel } from "../../components/config/model";
import { PlannedResource } from "../../tools/plan/model";
import { evenPieceSize, lvmNodeOrder, modelPiece, pieceCount, planPiece, planPieceKey } from "../../tools/plan/piece";
import { lvmNodesInConfig, mergePieces, Slots } from "../../tools/plan/pieces";

const thin = { overprovisionRatio: 2, poolPercent: 90, snapshots: false };
const model: StackModel = {
    namespace: "ns",
    nodes: {},
    lvm: [
        { name: "a", default: false, wipe: false, hosts: { n1: ["/dev/sdb"], n2: ["/dev/sdb"], n3: ["/dev/sdb"] } },
        { name: "b", default: false, wipe: false, hosts: { n4: ["/dev/sdc"], n5: ["/dev/sdc"] }, thin },
    ],
    cephfs: [],
    iscsi: [],
    nfs: [],
};

describe("modelPiece", () => {
    test("slices the LVM nodes in the order the program makes them, across storages", () => {
        assert.deepEqual(lvmNodeOrder(model), [[0, "n1"], [0, "n2"], [0, "n3"], [1, "n4"], [1, "n5"]]);
        const piece = (index: number) => modelPiece(model, { index, nodesPerPiece: 2 }).lvm.map((s) => Object.keys(s.hosts));
        assert.deepEqual(piece(0), [["n1", "n2"], []]);
        assert.deepEqual(piece(1), [["n3"], ["n4"]]);
        assert.deepEqual(piece(2), [[], ["n5"]]);
        assert.deepEqual(piece(3), [[], []]);
    });

    test("keeps every other field, and the model it was given", () => {
        const p = modelPiece(model, { index: 1, nodesPerPiece: 2 });
        assert.equal(p.namespace, "ns");
        assert.deepEqual(p.lvm[1], { name: "b", default: false, wipe: false, hosts: { n4: ["/dev/sdc"] }, thin });
        assert.equal(Object.keys(model.lvm[0].hosts).length, 3);
    });

    test("refuses a piece that is not one", () => {
        assert.throws(() => modelPiece(model, { index: -1, nodesPerPiece: 2 }), /^Error: plan piece: index -1 and nodesPerPiece 2 must be integers, >= 0 and >= 1$/);
        assert.throws(() => modelPiece(model, { index: 0, nodesPerPiece: 0 }), /nodesPerPiece 0 must be/);
    });

    test("planPiece: the whole model without the hook; with it, the piece, marked taken", () => {
        const full = model;
        assert.equal(planPiece(full), full);
        const hook = { index: 2, nodesPerPiece: 2, taken: false };
        (globalThis as Record<symbol, unknown>)[planPieceKey] = hook;
        try {
            assert.deepEqual(planPiece(full).lvm.map((s) => Object.keys(s.hosts)), [[], ["n5"]]);
            assert.equal(hook.taken, true);
        } finally {
            delete (globalThis as Record<symbol, unknown>)[planPieceKey];
        }
    });

    test("pieceCount and lvmNodesInConfig", () => {
        assert.equal(pieceCount(0, 10), 1);
        assert.equal(pieceCount(10, 10), 1);
        assert.equal(pieceCount(11, 10), 2);
        assert.equal(lvmNodesInConfig({ "zcloud-storage:lvm": model.lvm }), 5);
        // As many pieces as at most `mostPerPiece` a piece needs, as even as that count allows.
        assert.equal(evenPieceSize(1001, 500), 334);
        assert.equal(evenPieceSize(5000, 625), 625);
        assert.equal(evenPieceSize(5000, 600), 556);
        assert.equal(evenPieceSize(1000, 500), 500);
        assert.equal(evenPieceSize(7, 10), 7);
        assert.equal(evenPieceSize(0, 10), 1);
        for (let nodes = 1; nodes <= 300; nodes++) {
            for (let most = 1; most <= nodes + 1; most++) {
                const size = evenPieceSize(nodes, most);
                const count = pieceCount(nodes, most);
                assert.ok(size <= most && pieceCount(nodes, size) === count, `${nodes} nodes, at most ${most}: ${size}`);
                // The last piece is not empty and fewer than `count` nodes short of the others.
                const last = nodes - (count - 1) * size;
                assert.ok(last >= 1 && last <= size && (count === 1 || size - last < count), `${nodes} nodes, at most ${most}: last ${last} of ${size}`);
            }
        }
        assert.equal(lvmNodesInConfig({ "zcloud-storage:lvm": "nonsense" }), 0);
        assert.equal(lvmNodesInConfig({ "zcloud-storage:lvm": [{ hosts: ["n1"] }, null, { hosts: { n1: [] } }] }), 1);
    });
});

const rec = (urn: string, inputs: Record<string, unknown> = {}): PlannedResource => ({
    urn,
    type: "t",
    name: urn,
    parent: "",
    dependencies: [],
    inputs,
    custom: true,
    deleteBeforeReplace: false,
    retainOnDelete: false,
});
const piece = (entries: Array<[string, number]>) => ({ resources: entries.map(([u]) => rec(u)), generations: entries.map(([, g]) => g) });
const urns = (m: ReturnType<typeof mergePieces>) => ("resources" in m ? m.resources.map((r) => r.urn) : m.disagree);

describe("mergePieces", () => {
    test("the pieces' own records between the shared ones, by generation, then piece, then place", () => {
        // One process would record: S1, copy1 copy2 copy3 (gen 2), cmd1 cmd2 cmd3 (gen 3), S2 (gen 3), label1..3 (gen 4).
        const merged = mergePieces([
            piece([["S1", 1], ["copy1", 2], ["copy2", 2], ["cmd1", 3], ["cmd2", 3], ["S2", 3], ["label1", 4], ["label2", 4]]),
            piece([["S1", 1], ["copy3", 2], ["cmd3", 3], ["S2", 3], ["label3", 4]]),
        ]);
        assert.deepEqual(urns(merged), ["S1", "copy1", "copy2", "copy3", "cmd1", "cmd2", "cmd3", "S2", "label1", "label2", "label3"]);
    });

    test("one piece is itself", () => {
        assert.deepEqual(urns(mergePieces([piece([["a", 1], ["b", 1], ["c", 5]])])), ["a", "b", "c"]);
        assert.deepEqual(urns(mergePieces([])), []);
    });

    test("refuses pieces that do not agree on what they share", () => {
        const a = piece([["S1", 1], ["x", 2], ["S2", 2]]);
        assert.equal(urns(mergePieces([a, piece([["S2", 2], ["y", 2], ["S1", 1]])])), "piece 1 records S2 in another place than piece 0");
        assert.equal(urns(mergePieces([a, piece([["S1", 2], ["y", 2], ["S2", 2]])])), "piece 1 records S1 otherwise than piece 0");
        const changed = piece([["S1", 1], ["y", 2], ["S2", 2]]);
        changed.resources[0].inputs = { other: true };
        assert.equal(urns(mergePieces([a, changed])), "piece 1 records S1 otherwise than piece 0");
        assert.equal(urns(mergePieces([a, piece([["S1", 1], ["x", 2], ["S2", 2]]), piece([["S1", 1], ["S2", 2]])])), "x is in 2 of 3 pieces");
    });
});

test("Slots: at most `size` jobs at a time, every job run", async () => {
    const slots = new Slots(2);
    let running = 0;
    let most = 0;
    const job = (v: number) => slots.run(async () => {
        running++;
        most = Math.max(most, running);
        await new Promise((r) => setTimeout(r, 5));
        running--;
        return v;
    });
    assert.deepEqual(await Promise.all([1, 2, 3, 4, 5].map(job)), [1, 2, 3, 4, 5]);
    assert.equal(most, 2);
});
