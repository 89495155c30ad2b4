/**
 * The node disk commands a stack config plans: what each `<storage>-<node>-disks` remote
 * command runs on create, update and delete, taken from the offline plan's JSON output
 * (`npm run plan -- <file> --json`, DESIGN "Offline plan") — so tests run exactly what the
 * program would send to a node.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

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
}

interface PlanJson {
    resources: Array<{ urn: string; type: string; name: string; parent: string; inputs: Record<string, unknown> }>;
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

export async function plannedNodeCommands(stackYaml: string): Promise<PlannedNodeCommand[]> {
    const plan = await planJson(stackYaml);
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
            };
        });
}
