/**
 * The node disk commands a stack config plans: what each `<storage>-<node>-disks` remote
 * command runs on create, update and delete, and the script copy it depends on, taken from the
 * offline plan's JSON output (`npm run plan -- <file> --json`, DESIGN "Offline plan") — so tests
 * do exactly what the engine would do on a node: the copy first, then the command.
 */
import { execFile, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

/** A planned `command:remote:CopyToRemote`: a local file asset to a path on the node. */
export interface PlannedCopy {
    /** Pulumi logical name, `<command>-scripts`. */
    name: string;
    /** The asset's local file, as the plan recorded it. */
    source: string;
    sha256: string;
    /** Where the copy puts it, as the connection's user (relative: under that user's home). */
    remotePath: string;
}

export interface PlannedNodeCommand {
    /** Pulumi logical name, `<storage>-<node>-disks`. */
    name: string;
    /** The storage (parent component) the command belongs to. */
    storage: string;
    /** Kubernetes node name. */
    node: string;
    create: string;
    /** What an update runs: the command provider runs `create` again when `update` is unset. */
    update: string;
    delete: string;
    /** The copy of the script bundle the command runs; the engine makes it first (dependsOn). */
    copy: PlannedCopy;
}

interface PlanJson {
    resources: Array<{ urn: string; type: string; name: string; parent: string; dependencies: string[]; inputs: Record<string, unknown> }>;
    violations: unknown[];
}

const projectRoot = path.resolve(__dirname, "..", "..");

/** Runs the offline plan on a stack file's text; rejects with its output if it exits non-zero. */
function planJson(stackYaml: string): Promise<PlanJson> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-plan-"));
    const file = path.join(dir, "Pulumi.nodetest.yaml");
    fs.writeFileSync(file, stackYaml);
    return new Promise<PlanJson>((resolve, reject) => {
        execFile(
            process.execPath,
            ["--import", "tsx", path.join(projectRoot, "tools", "plan.ts"), file, "--json"],
            { cwd: projectRoot, maxBuffer: 64 * 1024 * 1024 },
            (err, stdout, stderr) => {
                fs.rmSync(dir, { recursive: true, force: true });
                if (err) {
                    reject(new Error(`plan failed (${err.message}):\n${stdout}\n${stderr}`));
                    return;
                }
                try {
                    resolve(JSON.parse(stdout) as PlanJson);
                } catch (e) {
                    reject(new Error(`plan --json printed no JSON (${(e as Error).message}):\n${stdout}\n${stderr}`));
                }
            },
        );
    });
}

function commandInput(name: string, inputs: Record<string, unknown>, key: string): string {
    const v = inputs[key];
    if (typeof v !== "string" || v === "[secret]") {
        throw new Error(`planned ${name}: inputs.${key} is not a plain command string (${JSON.stringify(v)})`);
    }
    return v;
}

/** The copy a planned command depends on, checked: named `<command>-scripts`, a file asset. */
export function plannedCopy(resources: PlanJson["resources"], command: { name: string; urn: string; dependencies?: string[] }): PlannedCopy {
    const r = resources.find((x) => x.type === "command:remote:CopyToRemote" && x.name === `${command.name}-scripts`);
    if (!r) {
        throw new Error(`planned ${command.name}: no script copy ${command.name}-scripts`);
    }
    if (command.dependencies && !command.dependencies.includes(r.urn)) {
        throw new Error(`planned ${command.name}: does not depend on ${r.name}`);
    }
    const source = r.inputs.source as { asset?: string; path?: string; sha256?: string } | undefined;
    if (source?.asset !== "file" || typeof source.path !== "string" || typeof source.sha256 !== "string" || typeof r.inputs.remotePath !== "string") {
        throw new Error(`planned ${r.name}: not a file asset copy (${JSON.stringify(r.inputs)})`);
    }
    return { name: r.name, source: source.path, sha256: source.sha256, remotePath: r.inputs.remotePath };
}

/**
 * What the engine's CopyToRemote does over SFTP as the connection's user (create the parent
 * directories, then write the file), as one shell command for that user's SSH session and the
 * bytes for its stdin. Refuses a source whose content is not the planned hash.
 */
export function copyOverSsh(copy: PlannedCopy): { command: string; stdin: string } {
    const stdin = fs.readFileSync(copy.source, "utf8");
    const sha256 = createHash("sha256").update(stdin).digest("hex");
    if (sha256 !== copy.sha256) {
        throw new Error(`planned ${copy.name}: ${copy.source} has sha256 ${sha256}, the plan says ${copy.sha256}`);
    }
    const q = (s: string) => `'${s.replace(/'/g, `'"'"'`)}'`;
    return { command: `mkdir -p -- ${q(path.posix.dirname(copy.remotePath))} && cat > ${q(copy.remotePath)}`, stdin };
}

/** Performs each distinct planned copy once through `run` (an SSH session as the connection's user). */
export async function performCopies(
    run: (command: string, stdin: string) => Promise<{ code: number | null; stderr: string }>,
    copies: PlannedCopy[],
): Promise<void> {
    const done = new Set<string>();
    for (const copy of copies) {
        const { command, stdin } = copyOverSsh(copy);
        if (done.has(command)) {
            continue;
        }
        done.add(command);
        const r = await run(command, stdin);
        if (r.code !== 0) {
            throw new Error(`${copy.name}: copy to ${copy.remotePath} failed (exit ${r.code}): ${r.stderr}`);
        }
    }
}

/** Removes staged copies from a test node's home (the harness's own sshd logs in as a real user). */
export function removeCopiesCommand(copies: PlannedCopy[]): string {
    const files = [...new Set(copies.map((c) => `'${c.remotePath}'`))].join(" ");
    return `rm -f -- ${files}; rmdir .zcloud-storage/scripts .zcloud-storage 2>/dev/null || true`;
}

/** A planned node label: a local command (`<storage>-<node>-label`) applying the Node on its stdin with kubectl. */
export interface PlannedLabelCommand {
    name: string;
    node: string;
    create: string;
    delete: string;
    stdin: string;
}

export async function plannedLabelCommands(stackYaml: string): Promise<PlannedLabelCommand[]> {
    return labelCommandsOf(await planJson(stackYaml));
}

function labelCommandsOf(plan: PlanJson): PlannedLabelCommand[] {
    return plan.resources
        .filter((r) => r.type === "command:local:Command" && r.name.endsWith("-label"))
        .map((r) => {
            const stdin = commandInput(r.name, r.inputs, "stdin");
            const node = (JSON.parse(stdin) as { metadata: { name: string } }).metadata.name;
            return { name: r.name, node, create: commandInput(r.name, r.inputs, "create"), delete: commandInput(r.name, r.inputs, "delete"), stdin };
        });
}

/**
 * Runs a planned label command's phase as the command provider runs a local command: `/bin/sh -c`
 * where `pulumi up` runs, stdin on create (and update) only, `env` (KUBECONFIG of the cluster).
 */
export function runLabelCommand(cmd: PlannedLabelCommand, phase: "create" | "delete", env: NodeJS.ProcessEnv): void {
    execFileSync("/bin/sh", ["-c", cmd[phase]], { input: phase === "create" ? cmd.stdin : "", env, stdio: ["pipe", "pipe", "pipe"] });
}

/** The disk commands and the label commands of one offline plan. */
export async function plannedCommands(stackYaml: string): Promise<{ nodes: PlannedNodeCommand[]; labels: PlannedLabelCommand[] }> {
    const plan = await planJson(stackYaml);
    return { nodes: nodeCommandsOf(plan), labels: labelCommandsOf(plan) };
}

export async function plannedNodeCommands(stackYaml: string): Promise<PlannedNodeCommand[]> {
    return nodeCommandsOf(await planJson(stackYaml));
}

function nodeCommandsOf(plan: PlanJson): PlannedNodeCommand[] {
    return plan.resources
        .filter((r) => r.type === "command:remote:Command")
        .map((r) => {
            const storage = r.parent.slice(r.parent.lastIndexOf("::") + 2);
            const prefix = `${storage}-`;
            const suffix = "-disks";
            if (!r.name.startsWith(prefix) || !r.name.endsWith(suffix)) {
                throw new Error(`planned ${r.name}: not named <storage>-<node>-disks under ${r.parent}`);
            }
            return {
                name: r.name,
                storage,
                node: r.name.slice(prefix.length, -suffix.length),
                create: commandInput(r.name, r.inputs, "create"),
                update: commandInput(r.name, r.inputs, r.inputs.update === undefined ? "create" : "update"),
                delete: commandInput(r.name, r.inputs, "delete"),
                copy: plannedCopy(plan.resources, r),
            };
        });
}
