import { fork } from "child_process";
import * as path from "path";
import { PlanConfig, PlanRun } from "./model";
import { PlanPiece, pieceTakenNotice } from "./piece";
import { projectRoot } from "./stackFile";

export const defaultProgram = path.join(projectRoot, "index.ts");

/**
 * Plans one config in a fresh process (the SDK's runtime state is global) and returns what the
 * program registered. `program` is a module whose import runs a Pulumi program.
 * `onPieceTaken`: called when the program took `piece` (it validated the config), before the end.
 */
export function planConfig(config: PlanConfig, program: string = defaultProgram, piece?: PlanPiece, onPieceTaken?: () => void): Promise<PlanRun> {
    return new Promise((resolve, reject) => {
        const child = fork(path.join(__dirname, "worker.ts"), [], {
            // TypeScript through tsx, the packages through Node's own loader (pieceBoot.cjs says why).
            execArgv: ["--require", path.join(__dirname, "pieceBoot.cjs")],
            cwd: projectRoot,
            stdio: ["ignore", "pipe", "pipe", "ipc"],
            // Structured clone, not JSON: a large plan's JSON exceeds V8's string length limit.
            serialization: "advanced",
        });
        let output = "";
        let result: PlanRun | undefined;
        child.stdout?.on("data", (d) => (output += d));
        child.stderr?.on("data", (d) => (output += d));
        child.on("message", (m) => {
            if (m === pieceTakenNotice) {
                onPieceTaken?.();
            } else {
                result = m as PlanRun;
            }
        });
        child.on("error", reject);
        child.on("exit", (code) => {
            if (result) {
                resolve(result);
            } else {
                reject(new Error(`plan worker exited with ${code} without a result:\n${output}`));
            }
        });
        child.send({ config, program: path.resolve(program), ...(piece ? { piece } : {}) });
    });
}
