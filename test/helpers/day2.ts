/** Shared by the day-2 tool tests: a stack file for sandbox SSH nodes, and running a tool's CLI. */
import { spawn } from "node:child_process";
import * as path from "node:path";

export interface SshNodeInfo {
    address: string;
    port: number;
    user: string;
    hostKey: string;
}

/**
 * A stack file for SSH nodes (nodes.json of the sandbox): every node with its address and port,
 * its host key pinned unless listed in `unpinned`, and `storages` appended as written.
 */
export function stackForNodes(nodes: Record<string, SshNodeInfo>, storages: string[] = [], unpinned: string[] = []): string {
    const names = Object.keys(nodes);
    const pinned = names.filter((n) => !unpinned.includes(n));
    return [
        "config:",
        "  zcloud-storage:ssh:",
        "    user: root",
        "    privateKey: { secure: v1:not-readable-offline }",
        ...(pinned.length ? ["    hostKeys:", ...pinned.map((n) => `      ${n}: "${nodes[n].hostKey}"`)] : []),
        "  zcloud-storage:nodes:",
        ...names.map((n) => `    ${n}: { address: ${nodes[n].address}, port: ${nodes[n].port} }`),
        ...storages,
        "",
    ].join("\n");
}

export interface ToolRun {
    code: number | null;
    stdout: string;
    stderr: string;
    ms: number;
}

const root = path.resolve(__dirname, "..", "..");

/** Runs `npm run <tool> -- args` the way npm would (tsx on tools/<tool>.ts), in the repo root. */
export function runTool(tool: "discover" | "status", args: string[], env: NodeJS.ProcessEnv = process.env): Promise<ToolRun> {
    const started = Date.now();
    return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, ["--import", "tsx", path.join(root, "tools", `${tool}.ts`), ...args], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
        child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
        child.once("error", reject);
        child.once("close", (code) => resolve({ code, stdout, stderr, ms: Date.now() - started }));
    });
}
