/**
 * The offline plan's one hook into the program (index.ts): which LVM nodes this plan process
 * registers, when the plan runs a big stack in pieces (tools/plan/pieces.ts).
 *
 * The plan's worker puts a PlanPiece on `globalThis` under a registered symbol before it loads the
 * program; nothing else sets it. A stack config cannot reach it (it is no config key, no
 * environment variable), and under `pulumi preview`/`up` it is absent: the program deploys the
 * whole model. Validation still sees the whole config: the piece is taken from the validated model.
 *
 * An LVM node's resources (script copy, disk command, label) depend on no other node, and nothing
 * shared depends on them: each piece registers every shared resource and every storage of the
 * other types, and only its slice of the LVM nodes, taken in the order the program makes them
 * (storages in config order, each storage's hosts in order).
 */
import type { StackModel } from "../../components/config/model";

export const planPieceKey = Symbol.for("zcloud-storage.plan-piece");

export interface PlanPiece {
    /** 0-based; piece `index` registers LVM nodes [index * nodesPerPiece, (index + 1) * nodesPerPiece). */
    index: number;
    nodesPerPiece: number;
    /** Set by the program when it took its piece: a program without the hook plans everything. */
    taken?: boolean;
}

/** What a plan worker sends its parent when the program took its piece (before the records). */
export const pieceTakenNotice = "zcloud-storage.plan-piece-taken";

/**
 * The piece for the worker's global, telling `onTaken` once when the program takes it: the
 * program has validated the whole config and has the hook, so the plan can start the other
 * pieces then instead of after this one ends (tools/plan/pieces.ts).
 */
export function pieceWithNotice(piece: PlanPiece, onTaken: () => void): PlanPiece {
    let taken = false;
    return Object.defineProperty({ index: piece.index, nodesPerPiece: piece.nodesPerPiece }, "taken", {
        enumerable: true,
        get: () => taken,
        set: (value: boolean) => {
            if (value && !taken) {
                onTaken();
            }
            taken = value;
        },
    });
}

/** The LVM nodes in the order the program makes their resources: [storage index, node]. */
export function lvmNodeOrder(model: Pick<StackModel, "lvm">): Array<[number, string]> {
    return model.lvm.flatMap((s, i) => Object.keys(s.hosts).map((node) => [i, node] as [number, string]));
}

/** The model with only the piece's LVM nodes in its storages' hosts; everything else as it is. */
export function modelPiece<M extends Pick<StackModel, "lvm">>(model: M, piece: PlanPiece): M {
    if (!Number.isInteger(piece.index) || piece.index < 0 || !Number.isInteger(piece.nodesPerPiece) || piece.nodesPerPiece < 1) {
        throw new Error(`plan piece: index ${piece.index} and nodesPerPiece ${piece.nodesPerPiece} must be integers, >= 0 and >= 1`);
    }
    const first = piece.index * piece.nodesPerPiece;
    const keep = new Set(
        lvmNodeOrder(model)
            .slice(first, first + piece.nodesPerPiece)
            .map(([i, node]) => `${i}/${node}`),
    );
    const lvm = model.lvm.map((s, i) => ({ ...s, hosts: Object.fromEntries(Object.entries(s.hosts).filter(([node]) => keep.has(`${i}/${node}`))) }));
    return { ...model, lvm };
}

/** How many pieces plan `lvmNodes` LVM nodes, `nodesPerPiece` at a time (at least one). */
export function pieceCount(lvmNodes: number, nodesPerPiece: number): number {
    return Math.max(1, Math.ceil(lvmNodes / nodesPerPiece));
}

/**
 * The piece size that plans `lvmNodes` in the fewest pieces of at most `mostPerPiece` nodes
 * (`pieceCount`), as even as that count allows: every piece but the last that size, the last
 * fewer than `count` nodes short of it. 1001 nodes, at most 500 a piece: 334 + 334 + 333, not
 * 500 + 500 + 1 (a third process started for one node while the other core waits).
 */
export function evenPieceSize(lvmNodes: number, mostPerPiece: number): number {
    return Math.max(1, Math.ceil(lvmNodes / pieceCount(lvmNodes, mostPerPiece)));
}

/**
 * For index.ts: the model to deploy. The whole model, unless the offline plan's worker set a
 * piece for this process.
 */
export function planPiece(model: StackModel): StackModel {
    const piece = (globalThis as Record<symbol, PlanPiece | undefined>)[planPieceKey];
    if (piece === undefined) {
        return model;
    }
    piece.taken = true;
    return modelPiece(model, piece);
}
