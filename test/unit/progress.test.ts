// Progress of long runs goes to a terminal's stderr only: a plan in pieces tells each piece
// planned, discover each node answered; in a pipe nothing is written.
import assert from "node:assert/strict";
import { test } from "node:test";
import { PlanConfig, PlanRun } from "../../tools/plan/model";
import { planInPieces, Slots } from "../../tools/plan/pieces";
import { terminalProgress } from "../../tools/progress";

test("terminalProgress: nothing when stderr is not a terminal", () => {
    const written: string[] = [];
    assert.equal(terminalProgress("x", { isTTY: false, write: (t) => written.push(t) }), undefined);
    assert.equal(terminalProgress("x", { write: (t) => written.push(t) }), undefined);
    assert.deepEqual(written, []);
});

test("terminalProgress: on a terminal, the count in place at most once a second, the last one with a line end", () => {
    const written: string[] = [];
    let clock = 0;
    const progress = terminalProgress("discover: nodes answered", { isTTY: true, write: (t) => written.push(t) }, () => clock)!;
    progress(1, 4);
    clock = 500;
    progress(2, 4);
    clock = 1500;
    progress(3, 4);
    clock = 1600;
    progress(4, 4);
    assert.deepEqual(written, ["\rdiscover: nodes answered: 1/4", "\rdiscover: nodes answered: 3/4", "\rdiscover: nodes answered: 4/4\n"]);
});

test("planInPieces tells each piece planned, as many times as there are pieces", async () => {
    const hosts = Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`n${i}`, ["/dev/sdb"]]));
    const config: PlanConfig = { values: { "zcloud-storage:lvm": [{ name: "a", hosts }] }, secretKeys: [], stack: "s" };
    const heard: string[] = [];
    const run: PlanRun = { resources: [], warnings: [], piece: { generations: [], taken: true, generationsReliable: true } };
    const result = await planInPieces(config, "program.ts", {
        nodesPerPiece: 3,
        slots: new Slots(2),
        planProcess: async (_c, _p, _piece, onTaken) => (onTaken?.(), { ...run }),
        progress: (done, total) => heard.push(`${done}/${total}`),
    });
    assert.equal(result.how, "3 pieces of 3 LVM nodes");
    assert.deepEqual(heard, ["1/3", "2/3", "3/3"]);
});
