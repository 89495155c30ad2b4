/**
 * A big stack's offline plan runs in pieces (tools/plan/pieces.ts): every output mode must print
 * the same bytes as the plan in one process. Generated stacks of several shapes (LVM storages,
 * with CephFS hosts, iSCSI initiators, NFS, all of them) planned with a tiny piece size
 * (ZCLOUD_PLAN_NODES_PER_PIECE) and in one piece: the tree with --out's files, --diff against
 * another config as text and as --json (all resources and the changes), --diff-plan against a
 * saved plan. Also: the hook is the plan's only (a config cannot set it, the program run without
 * it, as under pulumi up, registers every node).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import * as yaml from "js-yaml";
import { benchHostKey } from "../../tools/benchStack";
import { planValues } from "../helpers/plan";

const root = path.resolve(__dirname, "..", "..");
let dir = "";
before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-plan-pieces-"))));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

interface Run {
    code: number;
    stdout: string;
    stderr: string;
}

/** `npm run plan` with LVM nodes per piece `perPiece` (a huge number: one piece). */
function plan(perPiece: number, args: string[]): Promise<Run> {
    return new Promise((resolve) => {
        execFile(
            process.execPath,
            ["--import", "tsx", "tools/plan.ts", ...args],
            { cwd: root, maxBuffer: 64 << 20, env: { ...process.env, ZCLOUD_PLAN_NODES_PER_PIECE: String(perPiece) } },
            (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr }),
        );
    });
}

/** Every file under `d`, relative path -> content. */
function tree(d: string): Record<string, string> {
    const files: Record<string, string> = {};
    const walk = (sub: string) => {
        for (const e of fs.readdirSync(path.join(d, sub), { withFileTypes: true })) {
            const rel = path.join(sub, e.name);
            if (e.isDirectory()) walk(rel);
            else files[rel] = fs.readFileSync(path.join(d, rel), "utf8");
        }
    };
    walk("");
    return files;
}

interface Shape {
    /** Nodes of each LVM storage (the second one thin, with snapshots). */
    lvm: number[];
    /** CephFS hosts (0: none; else 3 or more), nodes of their own. */
    cephfs: number;
    /** iSCSI initiators, taken from the LVM nodes. */
    iscsi: number;
    nfs: boolean;
    perPiece: number;
}

const nodeName = (i: number) => `n${String(i + 1).padStart(3, "0")}`;
const dev = (i: number, d: number) => `/dev/disk/by-id/wwn-0x5000c5${String(i).padStart(3, "0")}${d}`;

/**
 * A valid stack config of the shape. `variant` "base" is the other side of the diffs: without the
 * last LVM node, with an extra node in the first storage, and a device less on the first node.
 */
function shapeConfig(shape: Shape, variant: "target" | "base"): Record<string, unknown> {
    let next = 0;
    const lvm = shape.lvm.map((count, s) => {
        const hosts: Record<string, string[]> = {};
        for (let k = 0; k < count; k++, next++) hosts[nodeName(next)] = [dev(next, 0), dev(next, 1)];
        return { name: `local-${s}`, ...(s === 0 ? { default: true } : {}), ...(s === 1 ? { thin: { overprovisionRatio: 2, snapshots: true } } : {}), hosts };
    });
    const lvmNodes = lvm.flatMap((s) => Object.keys(s.hosts));
    const cephHosts = Array.from({ length: shape.cephfs }, (_, k) => nodeName(next + k));
    next += shape.cephfs;
    const extra = nodeName(next);
    if (variant === "base") {
        const last = [...lvm].reverse().find((s) => Object.keys(s.hosts).length > 1);
        if (last) delete last.hosts[Object.keys(last.hosts).pop()!];
        lvm[0].hosts[extra] = [dev(next, 0)];
        lvm[0].hosts[lvmNodes[0]] = [dev(0, 0)];
    }
    const all = [...lvmNodes, ...cephHosts, extra];
    const initiators = lvmNodes.slice(0, shape.iscsi);
    return {
        "kubernetes:context": "prod-admin",
        "zcloud-storage:ssh": { user: "root", privateKey: { secure: "v1:x" }, hostKeys: Object.fromEntries(all.map((n) => [n, benchHostKey])) },
        "zcloud-storage:nodes": Object.fromEntries(all.map((n, i) => [n, { address: `10.0.${i >> 8}.${i & 255}` }])),
        "zcloud-storage:lvm": lvm,
        ...(shape.cephfs ? { "zcloud-storage:cephfs": [{ name: "shared-fs", hosts: Object.fromEntries(cephHosts.map((n, k) => [n, k === 0 ? [dev(900 + k, 0), dev(900 + k, 1)] : [dev(900 + k, 0)]])) }] } : {}),
        ...(initiators.length
            ? { "zcloud-storage:iscsi": [{ name: "san", portals: ["10.1.0.50:3260"], iqn: "iqn.2003-01.org.linux-iscsi.san:sn.1", lun: 0, chap: { username: "k8s", password: { secure: "v1:y" } }, initiators }] }
            : {}),
        ...(shape.nfs ? { "zcloud-storage:nfs": [{ name: "nfs", server: "10.1.0.60", path: "/exports/k8s", onDelete: "archive" }] } : {}),
    };
}

let counter = 0;

/** Plans the shape in every output mode, in one piece and in pieces, and compares the bytes. */
async function assertPiecesEqualWhole(shape: Shape): Promise<void> {
    const id = `s${counter++}`;
    const file = path.join(dir, `Pulumi.${id}.yaml`);
    const base = path.join(dir, `Pulumi.${id}-base.yaml`);
    fs.writeFileSync(file, yaml.dump({ config: shapeConfig(shape, "target") }));
    fs.writeFileSync(base, yaml.dump({ config: shapeConfig(shape, "base") }));
    const saved = path.join(dir, `${id}-base.json`);
    const savedRun = await plan(1e6, [base, "--json"]);
    assert.equal(savedRun.code, 0, savedRun.stderr);
    fs.writeFileSync(saved, savedRun.stdout);
    const lvmNodes = shape.lvm.reduce((a, b) => a + b, 0);
    const pieces = Math.ceil(lvmNodes / shape.perPiece);
    // The pieces are as even as their count allows (tools/plan/piece.ts, evenPieceSize).
    const even = (nodes: number, count: number) => Math.ceil(nodes / count);
    const modes: Array<{ label: string; args: (out: string) => string[]; out?: true; basePieces?: boolean }> = [
        { label: "tree and --out", args: (out) => [file, "--out", out], out: true },
        { label: "--diff", args: () => [file, "--diff", base], basePieces: true },
        // Its resources are --json's, with the changes after them.
        { label: "--diff --json", args: () => [file, "--diff", base, "--json"], basePieces: true },
        { label: "--diff-plan", args: () => [file, "--diff-plan", saved] },
    ];
    for (const mode of modes) {
        const [outWhole, outPieces] = [path.join(dir, `${id}-whole-out`), path.join(dir, `${id}-pieces-out`)];
        const [whole, pieced] = await Promise.all([plan(1e6, mode.args(outWhole)), plan(shape.perPiece, mode.args(outPieces))]);
        const what = `${JSON.stringify(shape)} ${mode.label}`;
        assert.equal(whole.stderr, "", `${what}: one piece says nothing on stderr`);
        assert.ok(whole.stdout.length > 0, what);
        assert.equal(pieced.code, whole.code, `${what}: exit code\n${pieced.stderr}`);
        // Not a silent fall-back to one piece: the pieced run says how it planned.
        const lines = pieced.stderr.trim().split("\n");
        assert.equal(lines[0], `planned ${path.relative(root, file)}: ${pieces} pieces of ${even(lvmNodes, pieces)} LVM nodes`, what);
        if (mode.basePieces) {
            const baseNodes = lvmNodes + 1 - (shape.lvm.some((n) => n > 1) ? 1 : 0);
            const basePieces = Math.ceil(baseNodes / shape.perPiece);
            assert.equal(lines[1], `planned ${path.relative(root, base)}: ${basePieces > 1 ? `${basePieces} pieces of ${even(baseNodes, basePieces)} LVM nodes` : "one piece"}`, what);
        }
        // The only difference allowed: the name of the --out directory in its last line.
        assert.equal(pieced.stdout.replaceAll(outPieces, outWhole), whole.stdout, `${what}: stdout`);
        if (mode.out) {
            assert.deepEqual(tree(outPieces), tree(outWhole), `${what}: --out files`);
            assert.ok(Object.keys(tree(outWhole)).length > 10, what);
        }
    }
}

describe("plan in pieces: the same bytes as in one piece", () => {
    test("generated shapes: LVM only, one node per piece; LVM with CephFS, iSCSI and NFS; one more at random", async () => {
        const shape = fc.record({
            lvm: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 3 }),
            cephfs: fc.constantFrom(0, 3, 4),
            iscsi: fc.integer({ min: 0, max: 2 }),
            nfs: fc.boolean(),
            perPiece: fc.integer({ min: 1, max: 2 }),
        }).filter((s) => s.lvm.reduce((a, b) => a + b, 0) > s.perPiece);
        const examples: Shape[] = [
            { lvm: [2, 1], cephfs: 0, iscsi: 0, nfs: false, perPiece: 1 },
            { lvm: [2, 2], cephfs: 3, iscsi: 2, nfs: true, perPiece: 2 },
            // At most 3 a piece: 4 nodes plan as 2 + 2 (not 3 + 1), across the two storages.
            { lvm: [3, 1], cephfs: 0, iscsi: 1, nfs: false, perPiece: 3 },
        ];
        await fc.assert(
            fc.asyncProperty(shape, async (s) => {
                await assertPiecesEqualWhole(s);
            }),
            { numRuns: examples.length + 1, examples: examples.map((e) => [e]), endOnFailure: true, verbose: true },
        );
    });
});

describe("the plan-piece hook", () => {
    test("a config key cannot set it: zcloud-storage:planPiece is refused as unknown", async () => {
        const run = await planValues({ ...shapeConfig({ lvm: [2], cephfs: 0, iscsi: 0, nfs: false, perPiece: 1 }, "target"), planPiece: { index: 1, nodesPerPiece: 1 } });
        assert.equal(run.error?.kind, "config");
        assert.match(run.error!.message, /planPiece/);
        assert.equal(run.resources.length, 0);
    });

    test("without the plan's worker (as under pulumi preview and up) the program registers every node", async () => {
        const run = await planValues(shapeConfig({ lvm: [3, 2], cephfs: 0, iscsi: 0, nfs: false, perPiece: 1 }, "target"));
        assert.equal(run.piece, undefined);
        const commands = run.resources.filter((r) => r.type === "command:remote:Command").map((r) => r.name);
        assert.deepEqual(commands, ["local-0-n001-disks", "local-0-n002-disks", "local-0-n003-disks", "local-1-n004-disks", "local-1-n005-disks"]);
    });

    test("ZCLOUD_PLAN_NODES_PER_PIECE must be a whole number", async () => {
        const run = await plan(0, ["dev"]);
        assert.equal(run.code, 2);
        assert.match(run.stderr, /^ZCLOUD_PLAN_NODES_PER_PIECE=0: give a whole number of LVM nodes, 1 or more/);
    });
});
