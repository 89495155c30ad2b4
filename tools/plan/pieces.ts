/**
 * A big stack planned in pieces: the SDK keeps every resource of a program in flight at once
 * (about 0.4 MiB per LVM node under the mocks), so one process planning 5000 nodes peaks above
 * 2 GiB. Each piece is a fresh plan process that registers every shared resource and only its
 * slice of the LVM nodes (tools/plan/piece.ts); the parent merges the records into the order one
 * process would have recorded them, so every output mode prints the same bytes.
 *
 * The order. Under the mock runtime a program registers everything in microtasks, and each record
 * carries its microtask generation (tools/plan/recorder.ts): the depth of its registration chain,
 * the same in a piece as in the whole plan. Within a generation, jobs run in the order their
 * chains started, which is the order the program made the resources: the nodes of piece 0, then of
 * piece 1, ... (the pieces are slices of the nodes in the order the program makes them). So: the
 * records all pieces have (shared ones) split each piece's list into segments; within a segment
 * the pieces' own records go by generation, then piece, then their place in the piece.
 */
import { isDeepStrictEqual } from "util";
import { PlanConfig, PlanRun, PlannedResource } from "./model";
import { evenPieceSize, PlanPiece, pieceCount } from "./piece";
import { planConfig } from "./runner";

/**
 * At most this many LVM nodes per piece unless told otherwise (the pieces are as even as their
 * count allows); stacks with at most this many plan in one process as before (no start-up cost).
 * Measured (5000-node config, workers loading the packages without tsx): a plan process costs
 * about 190 MiB and 1.35 s CPU to start (the SDK, the program, validating the whole config), then
 * about 0.37 MiB and 3.2 ms per LVM node; a piece of 625 peaks at about 420 MiB, so two pieces at
 * a time and the parent stay under 1.2 GiB (1005 MiB measured for the tree). Fewer, bigger
 * pieces pay the start-up fewer times: 8 pieces for 5000 nodes, not 10.
 */
export const defaultNodesPerPiece = 625;

/**
 * The same for `--diff`, which plans two stacks (16 pieces of 625 for 5000 nodes, each paying the
 * start-up): its memory goal is 1.6 GiB, so bigger pieces, fewer of them. Two pieces of 1000 at
 * about 560 MiB each and the parent (about 180 MiB while they run, 300 MiB at the end) stay
 * about 300 MiB under it.
 */
export const defaultNodesPerPieceWithBase = 1000;

/** How many LVM nodes a stack config's values declare (0 where they do not parse: validation says why). */
export function lvmNodesInConfig(values: Record<string, unknown>): number {
    const lvm = values["zcloud-storage:lvm"];
    if (!Array.isArray(lvm)) {
        return 0;
    }
    return lvm.reduce((sum: number, s: unknown) => {
        const hosts = s && typeof s === "object" ? (s as { hosts?: unknown }).hosts : undefined;
        return sum + (hosts && typeof hosts === "object" && !Array.isArray(hosts) ? Object.keys(hosts).length : 0);
    }, 0);
}

export interface PieceRecords {
    resources: PlannedResource[];
    /** Per record, its microtask generation. */
    generations: number[];
}

/**
 * One piece's records in the one-process order, or why the pieces cannot be merged (then the
 * caller plans in one process). Pure: the records and generations of each piece, in piece order.
 */
export function mergePieces(pieces: PieceRecords[]): { resources: PlannedResource[] } | { disagree: string } {
    if (pieces.length === 0) {
        return { resources: [] };
    }
    const seen = new Map<string, number>();
    for (const p of pieces) {
        for (const r of p.resources) {
            seen.set(r.urn, (seen.get(r.urn) ?? 0) + 1);
        }
    }
    const everywhere = (urn: string) => seen.get(urn) === pieces.length;
    const twice = [...seen].find(([, n]) => n > 1 && n < pieces.length);
    if (twice) {
        return { disagree: `${twice[0]} is in ${twice[1]} of ${pieces.length} pieces` };
    }
    // Per piece: segments of own records (with generation and place) between the shared ones.
    type Own = { r: PlannedResource; generation: number; piece: number; place: number };
    const shared = pieces[0].resources.filter((r) => everywhere(r.urn));
    const sharedGenerations = pieces[0].generations.filter((_, i) => everywhere(pieces[0].resources[i].urn));
    const segments: Own[][] = Array.from({ length: shared.length + 1 }, () => []);
    for (const [k, p] of pieces.entries()) {
        let j = 0;
        for (const [i, r] of p.resources.entries()) {
            if (!everywhere(r.urn)) {
                segments[j].push({ r, generation: p.generations[i], piece: k, place: i });
                continue;
            }
            if (shared[j]?.urn !== r.urn) {
                return { disagree: `piece ${k} records ${r.urn} in another place than piece 0` };
            }
            if (p.generations[i] !== sharedGenerations[j] || (k > 0 && !isDeepStrictEqual(r, shared[j]))) {
                return { disagree: `piece ${k} records ${r.urn} otherwise than piece 0` };
            }
            j++;
        }
    }
    const resources: PlannedResource[] = [];
    for (const [j, segment] of segments.entries()) {
        segment.sort((a, b) => a.generation - b.generation || a.piece - b.piece || a.place - b.place);
        resources.push(...segment.map((o) => o.r));
        if (j < shared.length) {
            resources.push(shared[j]);
        }
    }
    return { resources };
}

/** A slot pool shared by the plans of one CLI run (the plan and its --diff base). */
export class Slots {
    private free: number;
    private waiting: Array<() => void> = [];

    constructor(size: number) {
        this.free = size;
    }

    async run<T>(job: () => Promise<T>): Promise<T> {
        if (this.free === 0) {
            await new Promise<void>((resolve) => this.waiting.push(resolve));
        } else {
            this.free--;
        }
        try {
            return await job();
        } finally {
            const wake = this.waiting.shift();
            if (wake) {
                wake();
            } else {
                this.free++;
            }
        }
    }
}

export interface PiecesOptions {
    /** At most this many LVM nodes per piece: the pieces are as even as that count of them allows. */
    nodesPerPiece: number;
    /** Plan processes at a time, shared with other plans of the same run. */
    slots: Slots;
    /** Plans one piece (or, without a piece, the whole config) in a fresh process. */
    planProcess?: (config: PlanConfig, program: string, piece?: PlanPiece, onPieceTaken?: () => void) => Promise<PlanRun>;
    /** Hears of each piece planned: how many are done of how many. */
    progress?: (done: number, total: number) => void;
}

/**
 * Plans `config` in pieces of `nodesPerPiece` LVM nodes when it has more than that, each in a
 * fresh process, and merges them; otherwise (and when the pieces cannot be merged: a program
 * without the hook, a program that waits for I/O) in one process. `how` says which it was.
 */
export async function planInPieces(config: PlanConfig, program: string, opts: PiecesOptions): Promise<PlanRun & { how: string }> {
    const planProcess = opts.planProcess ?? planConfig;
    const lvmNodes = lvmNodesInConfig(config.values);
    const count = pieceCount(lvmNodes, opts.nodesPerPiece);
    const nodesPerPiece = evenPieceSize(lvmNodes, opts.nodesPerPiece);
    const whole = async (why: string) => ({ ...(await opts.slots.run(() => planProcess(config, program))), how: why });
    if (count === 1) {
        return whole("one piece");
    }
    // Piece 0 first: a config error shows there, and the others would only repeat it; a program
    // without the hook plans everything in it. The others start when piece 0 took its piece (the
    // config is valid, the hook there), not when it ends: the other process does not wait.
    let rest: Promise<PlanRun[]> | undefined;
    let done = 0;
    const counted = (run: PlanRun) => (opts.progress?.(++done, count), run);
    const startRest = () =>
        (rest ??= Promise.all(Array.from({ length: count - 1 }, (_, i) => opts.slots.run(() => planProcess(config, program, { index: i + 1, nodesPerPiece }).then(counted)))));
    const first = await opts.slots.run(() => planProcess(config, program, { index: 0, nodesPerPiece }, startRest).then(counted));
    if (first.error) {
        // Pieces started are let finish: none is left running when the plan exits.
        await rest;
        return { ...first, how: `piece 1 of ${count}` };
    }
    if (!first.piece?.taken) {
        return whole("one piece: the program has no plan-piece hook");
    }
    // Also when the notice did not come.
    const others = await startRest();
    const runs = [first, ...others];
    const failed = runs.find((r) => r.error);
    if (failed) {
        return { ...failed, how: `${count} pieces` };
    }
    const unusable = runs.findIndex((r) => !r.piece?.taken || !r.piece.generationsReliable);
    if (unusable >= 0) {
        const p = runs[unusable].piece;
        return whole(`one piece: piece ${unusable + 1} ${p?.taken ? "waited for I/O (no microtask order)" : "was not taken by the program (no plan-piece hook)"}`);
    }
    const merged = mergePieces(runs.map((r) => ({ resources: r.resources, generations: r.piece!.generations })));
    runs.length = 0;
    others.length = 0;
    if ("disagree" in merged) {
        return whole(`one piece: the pieces disagree (${merged.disagree})`);
    }
    return { resources: merged.resources, warnings: first.warnings, how: `${count} pieces of ${nodesPerPiece} LVM nodes` };
}
