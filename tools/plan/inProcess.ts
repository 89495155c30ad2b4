import * as pulumi from "@pulumi/pulumi";
import { ConfigValidationError } from "../../components/config/errors";
import { PlanConfig, PlanRun } from "./model";
import { PlanPiece, planPieceKey, pieceWithNotice } from "./piece";
import { recordProgramWithGenerations } from "./recorder";

export interface PlanRequest {
    config: PlanConfig;
    /** Module whose import runs the program (defaults to the project's index.ts). */
    program: string;
    /** Plan only this piece of the LVM nodes (tools/plan/piece.ts): for the plan's own workers. */
    piece?: PlanPiece;
}

/**
 * The SDK records a full stack trace (stackTraceLimit = Infinity, through tsx's source maps) for
 * every resource and promise, to report source positions to the engine. The mock runtime
 * discards them; an accessor for Error.stackTraceLimit (which ignores the SDK's assignments) and
 * no source-map lookups make plans 2-3x faster. V8 reads the limit only as a data property, so
 * with the accessor no stack is captured at all: errors of the program carry their message only.
 */
export function cheapStackTraces(): void {
    process.setSourceMapsEnabled(false);
    Object.defineProperty(Error, "stackTraceLimit", { configurable: true, get: () => 16, set: () => undefined });
}

let used = false;

/**
 * Runs one program under the mock runtime in this process. Once per process: the SDK's runtime
 * state is global (the plan CLI runs its main plan here and forks for a second one).
 */
export async function planInThisProcess(req: PlanRequest, onPieceTaken: () => void = () => undefined): Promise<PlanRun> {
    if (used) {
        throw new Error("planInThisProcess: one plan per process; use planConfig for more");
    }
    used = true;
    cheapStackTraces();
    const warnings: string[] = [];
    const warn = pulumi.log.warn;
    pulumi.log.warn = (message: string) => {
        warnings.push(message);
        return Promise.resolve();
    };
    try {
        const start = performance.now();
        const piece = req.piece && pieceWithNotice(req.piece, onPieceTaken);
        if (piece) {
            (globalThis as Record<symbol, PlanPiece>)[planPieceKey] = piece;
        }
        const recorded = await recordProgramWithGenerations(req.config, () => require(req.program));
        const stats = { programMs: Math.round(performance.now() - start), maxRssMb: Math.round(process.resourceUsage().maxRSS / 1024) };
        const pieceRun = piece && { generations: recorded.generations, taken: piece.taken ?? false, generationsReliable: recorded.generationsReliable };
        return { resources: recorded.records, warnings, stats, ...(pieceRun ? { piece: pieceRun } : {}) };
    } catch (e) {
        // The SDK also rejects the stack's own promise with the program's error, unhandled: it
        // would crash the process (and its report) while a --diff base is still planning.
        process.on("unhandledRejection", (reason) => {
            if (reason !== e) {
                throw reason;
            }
        });
        if (e instanceof ConfigValidationError) {
            return { resources: [], warnings, error: { kind: "config", message: e.message, issues: e.issues } };
        }
        return { resources: [], warnings, error: { kind: "program", message: e instanceof Error ? e.stack ?? e.message : String(e) } };
    } finally {
        pulumi.log.warn = warn;
    }
}
