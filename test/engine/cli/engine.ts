/**
 * The engine tier's harness: a sandbox (test/engine/sandbox.sh) and this project run by the real
 * Pulumi CLI against it. The project is used as it is (its Pulumi.yaml, index.ts, components,
 * policy pack); only the stack file is the test's, generated from the sandbox's nodes.json, with
 * the SSH key set as a real `secure:` secret through `pulumi config set --secret --path` from
 * stdin and every node's host key pinned.
 */
import { execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as yaml from "js-yaml";
import * as path from "node:path";
import type { SandboxNode } from "../nodes";

export const repoRoot = path.resolve(__dirname, "..", "..", "..");
const sandboxScript = path.join(repoRoot, "test", "engine", "sandbox.sh");

export interface RunResult {
    code: number | null;
    stdout: string;
    stderr: string;
    /** stdout then stderr, for messages and leak checks. */
    output: string;
    seconds: number;
}

/** Runs a command to its end; never throws on a non-zero exit. */
export function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string; input?: string } = {}): Promise<RunResult> {
    const start = performance.now();
    return new Promise((resolve, reject) => {
        const child = spawn(cmd, args, { env: opts.env, cwd: opts.cwd, stdio: ["pipe", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
        child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
        child.once("error", reject);
        child.once("close", (code) => resolve({ code, stdout, stderr, output: stdout + stderr, seconds: (performance.now() - start) / 1000 }));
        child.stdin.end(opts.input ?? "");
    });
}

/** Throws with the command's output unless it exited 0. */
export function ok(r: RunResult, what: string): RunResult {
    if (r.code !== 0) {
        throw new Error(`${what} exited ${r.code}:\n${r.output.slice(-6000)}`);
    }
    return r;
}

export interface Sandbox {
    dir: string;
    /** process.env plus the sandbox's env file. */
    env: NodeJS.ProcessEnv;
    nodes: Record<string, SandboxNode>;
    keyFile: string;
    /** LVM commands as node `name` runs them (its own LVM view). */
    lvm(name: string, args: string[]): string;
    kubectl(args: string[]): string;
    stop(): void;
}

/** The environment a sourced env file gives (its exports applied over process.env). */
function sourcedEnv(file: string): NodeJS.ProcessEnv {
    const out = execFileSync("bash", ["-c", `set -a; . "$1"; env -0`, "env", file], { encoding: "utf8" });
    return Object.fromEntries(
        out
            .split("\0")
            .filter(Boolean)
            .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
    );
}

/** Starts a sandbox; it is stopped on stop() and on process exit. */
export function startSandbox(opts: { nodes: number; devices: number }): Sandbox {
    let stdout: string;
    try {
        stdout = execFileSync("bash", [sandboxScript, "start", "--pulumi", "--nodes", String(opts.nodes), "--devices", String(opts.devices)], {
            encoding: "utf8",
            stdio: ["ignore", "pipe", "pipe"],
            maxBuffer: 64 * 1024 * 1024,
        });
    } catch (e) {
        const err = e as { stderr?: string; message: string };
        throw new Error(`engine tier: the sandbox did not start: ${err.stderr ?? err.message}`);
    }
    const dir = stdout.trim().split("\n").pop()!;
    let stopped = false;
    const stop = () => {
        if (!stopped) {
            stopped = true;
            execFileSync("bash", [sandboxScript, "stop", dir], { stdio: "ignore" });
            process.off("exit", stop);
        }
    };
    process.on("exit", stop);
    const env = sourcedEnv(path.join(dir, "env"));
    const nodesFile = path.join(dir, "nodes.json");
    const nodes = JSON.parse(fs.readFileSync(nodesFile, "utf8")) as Record<string, SandboxNode>;
    return {
        dir,
        env,
        nodes,
        keyFile: path.join(dir, "id_ed25519"),
        lvm: (name, args) =>
            execFileSync(args[0], args.slice(1), {
                encoding: "utf8",
                env: { ...env, LVM_SYSTEM_DIR: path.join(dir, "nodes", name, "lvm"), LVM_SUPPRESS_FD_WARNINGS: "1" },
            }),
        kubectl: (args) => execFileSync("kubectl", args, { encoding: "utf8", env }),
        stop,
    };
}

/** The `config:` of a stack file: `zcloud-storage:` keys given without prefix. */
export type StackValues = Record<string, unknown>;

/**
 * One stack of this project in the sandbox. The project directory is a scratch copy of the
 * project's entry files (symlinked, so the program that runs is the repository's) with its own
 * stacks/, so a test run never writes into the repository.
 */
export class EngineStack {
    readonly projectDir: string;
    readonly stackFile: string;
    private secretConfig: Record<string, unknown> = {};
    private header: Record<string, unknown> = {};

    constructor(
        readonly sandbox: Sandbox,
        readonly name: string,
        program = "index.ts",
    ) {
        this.projectDir = path.join(sandbox.dir, `project-${name}`);
        fs.mkdirSync(path.join(this.projectDir, "stacks"), { recursive: true });
        for (const entry of ["components", "node_modules", "package.json", "tsconfig.json"]) {
            fs.symlinkSync(path.join(repoRoot, entry), path.join(this.projectDir, entry));
        }
        fs.symlinkSync(path.resolve(repoRoot, program), path.join(this.projectDir, "index.ts"));
        fs.copyFileSync(path.join(repoRoot, "Pulumi.yaml"), path.join(this.projectDir, "Pulumi.yaml"));
        this.stackFile = path.join(this.projectDir, "stacks", `Pulumi.${name}.yaml`);
    }

    /**
     * Points the project at another program root (a directory with index.ts and components, e.g.
     * an older commit's, test/helpers/oldProgram.ts); the stack and its state stay. Upgrade tests
     * apply a stack with one program, then preview and apply it with another.
     */
    useProgram(root: string): void {
        for (const entry of ["components", "index.ts"]) {
            const link = path.join(this.projectDir, entry);
            fs.rmSync(link, { force: true });
            fs.symlinkSync(path.join(root, entry), link);
        }
    }

    pulumi(args: string[], input?: string): Promise<RunResult> {
        // The CLI registers --event-log only when its debug commands are enabled.
        const env = args.includes("--event-log") ? { ...this.sandbox.env, PULUMI_DEBUG_COMMANDS: "true" } : this.sandbox.env;
        return run("pulumi", [...args, "--stack", this.name, "--non-interactive", "--color", "never"], { env, cwd: this.projectDir, input });
    }

    /** `pulumi stack init`, then the SSH key as a secret (from stdin) and host keys pinned. */
    async init(values: StackValues): Promise<void> {
        ok(await run("pulumi", ["stack", "init", this.name, "--non-interactive"], { env: this.sandbox.env, cwd: this.projectDir }), "pulumi stack init");
        const key = fs.readFileSync(this.sandbox.keyFile, "utf8");
        ok(await this.pulumi(["config", "set", "--secret", "--path", "zcloud-storage:ssh.privateKey"], key), "pulumi config set --secret");
        const doc = yaml.load(fs.readFileSync(this.stackFile, "utf8")) as { config: Record<string, Record<string, unknown>> };
        const { config, ...header } = doc;
        this.header = header;
        this.secretConfig = config["zcloud-storage:ssh"];
        if (!this.secretConfig || typeof (this.secretConfig.privateKey as { secure?: unknown })?.secure !== "string") {
            throw new Error(`pulumi config set --secret did not write a secure: value:\n${fs.readFileSync(this.stackFile, "utf8")}`);
        }
        this.write(values);
    }

    /** Rewrites the stack file with new values; the SSH secret (unless `ssh.agent: true`) and the encryption salt stay. */
    write(values: StackValues): void {
        const config: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(values)) {
            config[k.includes(":") ? k : `zcloud-storage:${k}`] = v;
        }
        const ssh = (config["zcloud-storage:ssh"] ?? {}) as Record<string, unknown>;
        // `ssh.agent: true`: the key is in ssh-agent, the stack file holds none.
        config["zcloud-storage:ssh"] = ssh.agent === true ? ssh : { ...ssh, privateKey: this.secretConfig.privateKey };
        fs.writeFileSync(this.stackFile, yaml.dump({ ...this.header, config }, { lineWidth: -1 }));
    }

    /** Writes `stacks/<file>`: a config file (listed in the stack's `configFiles`) holding these values. */
    writeConfigFile(file: string, values: StackValues): void {
        const to = path.join(this.projectDir, "stacks", file);
        fs.mkdirSync(path.dirname(to), { recursive: true });
        fs.writeFileSync(to, yaml.dump({ config: Object.fromEntries(Object.entries(values).map(([k, v]) => [k.includes(":") ? k : `zcloud-storage:${k}`, v])) }, { lineWidth: -1 }));
    }

    /** A copy of the current stack file (to plan against later as `--diff`). */
    snapshot(label: string): string {
        const to = path.join(this.sandbox.dir, `snapshot-${this.name}-${label}.yaml`);
        fs.copyFileSync(this.stackFile, to);
        return to;
    }
}

/** Stack values for the sandbox's nodes: every node reachable, every host key pinned. */
export function sandboxValues(sandbox: Sandbox, rest: StackValues): StackValues {
    const nodes = Object.fromEntries(Object.entries(sandbox.nodes).map(([n, s]) => [n, { address: s.address, port: s.port }]));
    const hostKeys = Object.fromEntries(Object.entries(sandbox.nodes).map(([n, s]) => [n, s.hostKey]));
    return { ssh: { user: "root", hostKeys }, nodes, ...rest };
}

/**
 * Stack values split as a large fleet keeps them: the inventory (`nodes`, `ssh.hostKeys`, the
 * storages) in the config file `file`, the rest and `configFiles: [file]` in the stack file.
 */
export function splitInventory(values: StackValues, file: string): { stack: StackValues; inventory: StackValues } {
    const { ssh, nodes, lvm, cephfs, ...rest } = values as Record<string, unknown>;
    const { hostKeys, ...login } = (ssh ?? {}) as Record<string, unknown>;
    const inventory: StackValues = { ssh: { hostKeys }, nodes, ...(lvm ? { lvm } : {}), ...(cephfs ? { cephfs } : {}) };
    return { stack: { ...rest, ssh: login, configFiles: [file] }, inventory };
}

export type Operation = "create" | "update" | "replace" | "delete";

/** URN -> operation of a `pulumi preview --json` (providers and the stack itself left out). */
export function previewOperations(json: string): Map<string, Operation> {
    const doc = JSON.parse(json) as { steps?: Array<{ op: string; urn: string }> };
    const ops = new Map<string, Operation>();
    for (const step of doc.steps ?? []) {
        if (/::pulumi:providers:|::pulumi:pulumi:Stack::/.test(step.urn)) {
            continue;
        }
        const op = { create: "create", update: "update", delete: "delete", replace: "replace", "create-replacement": "replace", "delete-replaced": "replace" }[step.op];
        if (op) {
            ops.set(step.urn, op as Operation);
        }
    }
    return ops;
}

/** URN -> operation of `npm run plan -- <new> --diff <old> --json`. */
export async function planOperations(newFile: string, oldFile: string): Promise<Map<string, Operation>> {
    const r = ok(await run("node", ["--import", "tsx", path.join(repoRoot, "tools", "plan.ts"), newFile, "--diff", oldFile, "--json"], { cwd: repoRoot }), "npm run plan --diff");
    const doc = JSON.parse(r.stdout) as { changes: Array<{ kind: Operation; urn: string }> };
    return new Map(doc.changes.map((c) => [c.urn, c.kind]));
}

/** Both maps as sorted "op urn" lines, for one assertion that shows every disagreement. */
export function operationLines(ops: Map<string, Operation>): string[] {
    return [...ops].map(([urn, op]) => `${op} ${urn}`).sort();
}

/** The resources of `pulumi stack export`. */
export function exportedResources(exported: string): Array<{ urn: string; type: string; outputs?: Record<string, unknown> }> {
    return (JSON.parse(exported) as { deployment: { resources?: Array<{ urn: string; type: string; outputs?: Record<string, unknown> }> } }).deployment.resources ?? [];
}

/** The base64 body of an OpenSSH private key: the part that must never appear in clear. */
export function privateKeyBody(keyFile: string): string[] {
    return fs
        .readFileSync(keyFile, "utf8")
        .split("\n")
        .filter((l) => l && !l.startsWith("-----"));
}

export interface EngineStep {
    phase: "start" | "done";
    op: string;
    urn: string;
}

/** Step starts and ends of a `--event-log` file, in the engine's order. */
export function engineSteps(log: string): EngineStep[] {
    type Meta = { metadata?: { op: string; urn: string } };
    const events = log
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { sequence: number; resourcePreEvent?: Meta; resOutputsEvent?: Meta })
        .sort((a, b) => a.sequence - b.sequence);
    const steps: EngineStep[] = [];
    for (const e of events) {
        const start = e.resourcePreEvent?.metadata;
        const done = e.resOutputsEvent?.metadata;
        if (start) {
            steps.push({ phase: "start", op: start.op, urn: start.urn });
        } else if (done) {
            steps.push({ phase: "done", op: done.op, urn: done.urn });
        }
    }
    return steps;
}

/** Top-level JSON documents of a stream (objects one after another), by brace depth outside strings. */
export function splitDocuments(text: string): string[] {
    const docs: string[] = [];
    let depth = 0;
    let start = -1;
    let inString = false;
    for (let i = 0; i < text.length; i++) {
        const c = text[i];
        if (inString) {
            if (c === "\\") i++;
            else if (c === '"') inString = false;
        } else if (c === '"') {
            inString = true;
        } else if (c === "{") {
            if (depth++ === 0) start = i;
        } else if (c === "}" && --depth === 0) {
            docs.push(text.slice(start, i + 1));
        }
    }
    return docs;
}
