import { execFile } from "node:child_process";

/** `npm run plan` as a PR check runs it: a child process, its output and exit code. */
export function plan(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
        execFile(process.execPath, ["--import", "tsx", "tools/plan.ts", ...args], { maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
            resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr });
        });
    });
}
