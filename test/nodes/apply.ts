/**
 * A plan applied to the nodes tier's cluster the way `pulumi up` applies it, without the Pulumi
 * CLI (its language host and the command provider are not served here): every resource once all
 * it depends on is done, independent ones at the same time; Kubernetes objects server-side
 * applied and awaited as the Kubernetes provider awaits them (a Deployment available, a DaemonSet
 * rolled out, a Job complete); a node's script copy and command run in that node; a local command
 * (a gate, a node label) run here with `/bin/sh -c`, its environment and stdin, against a kubeconfig
 * whose context is the stack's.
 *
 * What stands in for what cannot run here, and nothing else:
 * - the random provider: the plan's own values (tools/plan/recorder.ts makes them from the
 *   resource name), which the plan's policy inputs carry in the clear;
 * - the SSH transport of node commands on namespace nodes: `nsenter` into the node, the command's
 *   working directory a home of its own under the node's /var/lib (a guest node's commands go
 *   over real SSH, with the connection the plan gives them);
 * - Services' ClusterIPs: the plan's made-up address in every later input is replaced by the one
 *   the API server allocated (the program reads it back as an output).
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { PlannedResource, PlanRun } from "../helpers/plan";
import { toManifest } from "../../tools/plan/manifests";
import { Change, diffPlans } from "../../tools/plan/diff";
import { plannedClusterIp } from "../../tools/plan/recorder";
import { shellQuote } from "../../components/node/script";
import { NodesCluster } from "./cluster";

export interface ApplyOptions {
    /** The stack's `kubernetes:context`: the context name local commands ask kubectl for. */
    context: string;
    /** Node name by the address the stack gives it (namespace nodes). */
    nodeByAddress: Record<string, string>;
    /** Guest nodes by the `host:port` the stack gives them: their commands run over SSH. */
    guests?: Record<string, GuestShell>;
    /** Workloads not awaited (they cannot start here); they are still applied. */
    notAwaited?: ReadonlySet<string>;
    /** Variables of the nodes' own environment (an SSH session's), e.g. ZCLOUD_ALLOW_LOOP. */
    nodeEnv?: Record<string, string>;
    /** Seconds a workload gets to become ready (default 300). */
    timeoutS?: number;
    log?: (line: string) => void;
}

export interface AppliedResource {
    name: string;
    type: string;
    /** Seconds from the start of the apply. */
    started: number;
    done: number;
    /** Set for a resource deleted (gone from the program). */
    deleted?: true;
}

/** What the applier needs of a guest node (test/vm/harness.ts's Guest): a real SSH session. */
export interface GuestShell {
    readonly name: string;
    run(command: string, opts?: { stdin?: string | Buffer; timeoutMs?: number }): Promise<Result>;
}

interface Result {
    code: number | null;
    stdout: string;
    stderr: string;
}

function run(argv: string[], opts: { env?: NodeJS.ProcessEnv; stdin?: string; timeoutMs?: number } = {}): Promise<Result> {
    return new Promise((resolve, reject) => {
        const child = spawn(argv[0], argv.slice(1), { env: opts.env ?? process.env, stdio: ["pipe", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (d) => (stdout += String(d)));
        child.stderr.on("data", (d) => (stderr += String(d)));
        const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 600_000);
        child.on("error", reject);
        child.on("close", (code) => {
            clearTimeout(timer);
            resolve({ code, stdout, stderr });
        });
        // a command that never reads its stdin may have exited before it is written
        child.stdin.on("error", () => undefined);
        child.stdin.end(opts.stdin ?? "");
    });
}

async function ok(what: string, r: Promise<Result>): Promise<Result> {
    const result = await r;
    if (result.code !== 0) {
        throw new Error(`${what} failed (exit ${result.code}):\n${result.stdout.slice(-3000)}\n${result.stderr.slice(-3000)}`);
    }
    return result;
}

/** A kubeconfig like the cluster's whose one context is named `context` (the stack's). */
export function stackKubeconfig(cluster: NodesCluster, context: string): string {
    const file = path.join(cluster.dir, `kubeconfig-${context}`);
    fs.copyFileSync(path.join(cluster.dir, "kubeconfig"), file);
    cluster.sh(`kubectl --kubeconfig "${file}" config rename-context "$(kubectl --kubeconfig "${file}" config current-context)" "${context}"`);
    return file;
}

/** The rollout the Kubernetes provider waits for before a resource counts as created. */
function awaitArgs(kind: string, name: string, namespace: string | undefined, timeoutS: number): string[] | undefined {
    const ns = namespace ? ["-n", namespace] : [];
    switch (kind) {
        case "Deployment":
        case "DaemonSet":
        case "StatefulSet":
            return ["rollout", "status", `${kind.toLowerCase()}/${name}`, ...ns, `--timeout=${timeoutS}s`];
        case "Job":
            return ["wait", "--for=condition=complete", `job/${name}`, ...ns, `--timeout=${timeoutS}s`];
        default:
            return undefined;
    }
}

export class PlanApplier {
    /** The plan's made-up ClusterIP -> the allocated one. */
    readonly addresses = new Map<string, string>();
    readonly applied: AppliedResource[] = [];
    private readonly kubeconfig: string;
    private readonly env: NodeJS.ProcessEnv;
    private began = 0;

    constructor(
        private readonly cluster: NodesCluster,
        private readonly options: ApplyOptions,
    ) {
        this.kubeconfig = stackKubeconfig(cluster, options.context);
        const pathLine = cluster.sh("echo \"$PATH\"").trim();
        this.env = { ...process.env, PATH: pathLine, KUBECONFIG: this.kubeconfig };
    }

    private log(line: string): void {
        this.options.log?.(line);
    }

    /** Inputs with the policy view's secrets in the clear and every planned ClusterIP replaced. */
    private inputs(r: PlannedResource): Record<string, any> {
        let text = JSON.stringify(r.policyInputs ?? r.inputs);
        for (const [planned, real] of this.addresses) text = text.split(planned).join(real);
        return JSON.parse(text);
    }

    private kubectl(args: string[], stdin?: string): Promise<Result> {
        return ok(`kubectl ${args.join(" ")}`, run(["kubectl", ...args], { env: this.env, stdin }));
    }

    private async applyKubernetes(r: PlannedResource, inputs: Record<string, any>): Promise<void> {
        const manifest = toManifest({ ...r, inputs });
        if (!manifest) return;
        const meta = manifest.metadata as { name: string; namespace?: string };
        await this.kubectl(["apply", "--server-side", "--force-conflicts", "--field-manager", "pulumi-kubernetes", "-f", "-"], JSON.stringify(manifest));
        if (manifest.kind === "Service") {
            const ip = (await this.kubectl(["get", "service", meta.name, "-n", meta.namespace ?? "default", "-o", "jsonpath={.spec.clusterIP}"])).stdout.trim();
            this.addresses.set(plannedClusterIp(r.name), ip);
        }
        const wait = awaitArgs(String(manifest.kind), meta.name, meta.namespace, this.options.timeoutS ?? 300);
        if (wait && !this.options.notAwaited?.has(meta.name)) {
            await this.kubectl(wait);
        }
    }

    private node(inputs: Record<string, any>): string {
        const node = this.options.nodeByAddress[inputs.connection?.host];
        if (!node) throw new Error(`no node at ${inputs.connection?.host}`);
        return node;
    }

    /** A node command's working directory (the SSH user's home), inside the node. */
    private static readonly home = "/var/lib/zcloud-test-home";

    private guest(inputs: Record<string, any>): GuestShell | undefined {
        return this.options.guests?.[`${inputs.connection?.host}:${inputs.connection?.port ?? 22}`];
    }

    private async copyToNode(inputs: Record<string, any>): Promise<void> {
        const guest = this.guest(inputs);
        if (guest) {
            // relative to the login's home, as an SFTP upload is
            const target = shellQuote(String(inputs.remotePath));
            await ok(`copy to ${guest.name}`, guest.run(`mkdir -p "$(dirname ${target})" && cat >${target}`, { stdin: fs.readFileSync(inputs.source.path) }));
            return;
        }
        const node = this.node(inputs);
        const target = path.join(this.cluster.dir, "nodes", node, "var-lib", path.basename(PlanApplier.home), inputs.remotePath);
        fs.mkdirSync(path.dirname(target), { recursive: true });
        fs.copyFileSync(inputs.source.path, target);
    }

    /** Runs `script` (a command's create or delete) in the node the command connects to. */
    private async nodeCommand(r: PlannedResource, inputs: Record<string, any>, script: unknown): Promise<void> {
        if (typeof script !== "string") return;
        const guest = this.guest(inputs);
        if (guest) {
            // the command as the SSH server runs it: the login shell's `sh -c`, in the login's home
            const result = await ok(`${r.name} on ${guest.name}`, guest.run(script, { stdin: inputs.stdin, timeoutMs: 900_000 }));
            this.log(`${r.name}: ${result.stdout.trim().split("\n").slice(-3).join(" | ")}`);
            return;
        }
        const node = this.node(inputs);
        const pid = fs.readFileSync(path.join(this.cluster.dir, "pids", `${node}.node`), "utf8").trim();
        const result = await ok(
            `${r.name} on ${node}`,
            // an SSH session's environment: root's, no KUBECONFIG or test variables
            run(["nsenter", "-t", pid, "-m", "-u", "-i", "-n", "-p", "--", "/bin/sh", "-c", 'mkdir -p "$1" && cd "$1" && exec /bin/sh -c "$2"', "sh", PlanApplier.home, script], {
                env: { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", HOME: PlanApplier.home, LANG: "C.UTF-8", ...this.options.nodeEnv },
            }),
        );
        this.log(`${r.name}: ${result.stdout.trim().split("\n").slice(-3).join(" | ")}`);
    }

    /** Runs `script` (a command's create or delete) here; stdin reaches create only, as with @pulumi/command. */
    private async localCommand(r: PlannedResource, inputs: Record<string, any>, script: unknown, stdin?: string): Promise<void> {
        if (typeof script !== "string") return;
        const result = await ok(r.name, run(["/bin/sh", "-c", script], { env: { ...this.env, ...(inputs.environment ?? {}) }, stdin, timeoutMs: 900_000 }));
        const said = (result.stdout + result.stderr).trim().split("\n").slice(-2).join(" | ");
        this.log(`${r.name}: ${said}`);
    }

    /**
     * Creates or updates one resource. A command runs its `create`, or on an update its `update`
     * where it has one (else `create` again), as @pulumi/command does; stdin reaches both.
     */
    private async applyOne(r: PlannedResource, phase: "create" | "update" = "create"): Promise<void> {
        const inputs = this.inputs(r);
        if (r.type.startsWith("kubernetes:") && r.custom && !r.type.startsWith("pulumi:providers:")) {
            return this.applyKubernetes(r, inputs);
        }
        const script = phase === "update" && typeof inputs.update === "string" ? inputs.update : inputs.create;
        if (r.type === "command:remote:CopyToRemote") return this.copyToNode(inputs);
        if (r.type === "command:remote:Command") return this.nodeCommand(r, inputs, script);
        if (r.type === "command:local:Command") return this.localCommand(r, inputs, script, inputs.stdin);
        // components, the stack, providers and random values: nothing to do here
    }

    /** Deletes a Kubernetes object and waits until it is gone, as the provider does. */
    private async deleteKubernetes(r: PlannedResource): Promise<void> {
        const manifest = toManifest({ ...r, inputs: this.inputs(r) });
        if (!manifest) return;
        const meta = manifest.metadata as { name: string; namespace?: string };
        await this.kubectl(["delete", String(manifest.kind).toLowerCase(), meta.name, ...(meta.namespace ? ["-n", meta.namespace] : []), "--ignore-not-found", "--wait=true"]);
    }

    /** A replaced resource: the Kubernetes object deleted first (it keeps its name), then made again. */
    private async replaceOne(r: PlannedResource): Promise<void> {
        if (r.type.startsWith("kubernetes:") && r.custom) await this.deleteKubernetes(r);
        return this.applyOne(r);
    }

    /** A resource gone from the program, with its inputs as the state holds them (the plan before). */
    private async deleteOne(r: PlannedResource): Promise<boolean> {
        if (r.retainOnDelete || !r.custom) return false;
        const inputs = this.inputs(r);
        if (r.type.startsWith("kubernetes:")) {
            await this.deleteKubernetes(r);
            return true;
        }
        // a copied file stays on the node, as @pulumi/command's CopyToRemote leaves it
        if (r.type === "command:remote:Command") await this.nodeCommand(r, inputs, inputs.delete);
        else if (r.type === "command:local:Command") await this.localCommand(r, inputs, inputs.delete);
        else return false;
        return true;
    }

    /**
     * Deletes `gone` as the engine does at the end of an update: each resource once every gone
     * resource that depends on it or is its child is deleted, independent ones at the same time;
     * the first failure fails the whole.
     */
    private async deleteInOrder(gone: PlannedResource[]): Promise<void> {
        const byUrn = new Map(gone.map((r) => [r.urn, r]));
        const dependents = new Map<string, PlannedResource[]>();
        for (const r of gone) {
            for (const d of new Set([...r.dependencies, r.parent])) {
                if (byUrn.has(d)) dependents.set(d, [...(dependents.get(d) ?? []), r]);
            }
        }
        const done = new Map<string, Promise<void>>();
        const remove = (r: PlannedResource): Promise<void> => {
            let p = done.get(r.urn);
            if (!p) {
                p = Promise.all((dependents.get(r.urn) ?? []).map(remove)).then(async () => {
                    const started = (Date.now() - this.began) / 1000;
                    if (await this.deleteOne(r)) {
                        this.applied.push({ name: r.name, type: r.type, started, done: (Date.now() - this.began) / 1000, deleted: true });
                    }
                });
                done.set(r.urn, p);
            }
            return p;
        };
        await Promise.all(gone.map(remove));
    }

    /**
     * Runs `step` for every resource of `plan` once all it depends on is done, independent ones at
     * the same time; as `pulumi up` does, the first failure fails the whole (what runs already is
     * not waited for).
     */
    private async walk(plan: PlanRun, step: (r: PlannedResource) => Promise<boolean>): Promise<AppliedResource[]> {
        this.began = Date.now();
        this.applied.length = 0;
        const byUrn = new Map(plan.resources.map((r) => [r.urn, r]));
        const done = new Map<string, Promise<void>>();
        const start = (r: PlannedResource): Promise<void> => {
            let p = done.get(r.urn);
            if (!p) {
                const deps = r.dependencies.filter((d) => byUrn.has(d));
                p = Promise.all(deps.map((d) => start(byUrn.get(d)!))).then(async () => {
                    const started = (Date.now() - this.began) / 1000;
                    if (await step(r)) {
                        this.applied.push({ name: r.name, type: r.type, started, done: (Date.now() - this.began) / 1000 });
                    }
                });
                done.set(r.urn, p);
            }
            return p;
        };
        await Promise.all(plan.resources.map((r) => start(r)));
        return [...this.applied];
    }

    /** Applies every resource of the plan (a new stack); throws naming the first that failed. */
    async apply(plan: PlanRun): Promise<AppliedResource[]> {
        return this.walk(plan, async (r) => {
            await this.applyOne(r);
            return true;
        });
    }

    /**
     * Applies what changed from `before` to `after` (tools/plan/diff.ts, the offline diff): a
     * created or updated resource is applied (an updated command runs its `update`, or its
     * `create` again where it has none), a replaced one deleted and made again, an unchanged one
     * left alone; then what `after` no longer has is deleted (deleteInOrder), with the inputs
     * `before` gave it. Returns what it applied and deleted.
     */
    async update(before: PlanRun, after: PlanRun): Promise<{ applied: AppliedResource[]; changes: Change[] }> {
        const changes = diffPlans(before.resources, after.resources);
        const byUrn = new Map(changes.map((c) => [c.resource.urn, c]));
        await this.walk(after, async (r) => {
            const change = byUrn.get(r.urn);
            if (!change) return false;
            await (change.kind === "replace" ? this.replaceOne(r) : this.applyOne(r, change.kind === "update" ? "update" : "create"));
            return true;
        });
        await this.deleteInOrder(changes.filter((c) => c.kind === "delete").map((c) => c.resource));
        return { applied: [...this.applied], changes };
    }
}
