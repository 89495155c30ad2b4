/**
 * A stack applied the way `pulumi up` applies it, without the Pulumi CLI: a control plane on
 * 127.0.0.1 (controlplane.sh: etcd, kube-apiserver, controller-manager, scheduler, kwok nodes),
 * sandbox SSH nodes with loop devices (nodes.ts), each node's planned disk command run over SSH,
 * each node's planned label command run here with kubectl (as `pulumi up` runs it), then every
 * manifest `npm run plan -- <stack> --out` renders applied with kubectl, so kwok runs the pods the
 * program declares. Used by the day-2 status test and bench;
 * needs only the control plane's binaries (build-tools.sh node kubernetes etcd kwok) and root.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { SandboxNode, startNodes, stopNodes } from "./nodes";
import { stackForNodes } from "../helpers/day2";
import { copyOverSsh, plannedCommands, removeCopiesCommand, runLabelCommand } from "../helpers/planned";
import { nodeLabelFieldManager } from "../../components/node/nodeLabel";
import { lvmQuiet, sh, tryRun } from "../helpers/sshNode";

const here = __dirname;
const root = path.resolve(here, "..", "..");

export interface AppliedStack {
    dir: string;
    /** process.env with the engine binaries first on PATH and KUBECONFIG of the control plane. */
    env: NodeJS.ProcessEnv;
    nodes: Record<string, SandboxNode>;
    stackFile: string;
    keyFile: string;
    kubectl(args: string[]): string;
    /** An LVM command as node `name` runs it (its own LVM view). */
    lvmOn(name: string, args: string[]): string;
    stop(): void;
}

/** The environment the engine tools' env file gives (binaries first on PATH). */
export function toolsEnv(): NodeJS.ProcessEnv {
    const out = execFileSync("bash", [path.join(here, "build-tools.sh"), "node", "kubernetes", "etcd", "kwok"], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    const file = out.trim().split("\n").pop()!;
    const dump = execFileSync("bash", ["-c", 'set -a; . "$1"; env -0', "env", file], { encoding: "utf8" });
    return Object.fromEntries(
        dump
            .split("\0")
            .filter(Boolean)
            .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
    );
}

/** The manifests `npm run plan -- <stack> --out <dir>` wrote, in the apply order its index.txt gives. */
export function manifestsInApplyOrder(out: string): string[] {
    const index = fs.readFileSync(path.join(out, "index.txt"), "utf8");
    return [...index.matchAll(/^ *\d+ {2}(manifests\/\S+)/gm)].map((m) => path.join(out, m[1]));
}

/**
 * Applies the manifests `npm run plan -- <stack> --out <dir>` wrote to <dir>/manifests, in the
 * order of its index (the program's dependencies): namespaces and CRDs first (CRDs waited Established),
 * then every other object. A node label renders as the Node its command applies: with
 * `labels: "apply"` it is server-side-applied as that command does (the storage's field manager,
 * only the label and annotation); with "commands" it is left to the caller, which runs the
 * planned label commands themselves (applyStackFile).
 */
export function applyManifests(out: string, kubectl: (args: string[]) => string, labels: "apply" | "commands" = "apply"): void {
    const files = manifestsInApplyOrder(out);
    const first = files.filter((f) => /^kind: (Namespace|CustomResourceDefinition)$/m.test(fs.readFileSync(f, "utf8")));
    for (const f of first) {
        kubectl(["apply", "-f", f]);
    }
    kubectl(["wait", "--for", "condition=Established", "--timeout", "60s", "crd", "--all"]);
    for (const f of files.filter((f) => !first.includes(f))) {
        const text = fs.readFileSync(f, "utf8");
        if (/^kind: Node$/m.test(text)) {
            const storage = /^ {4}storage\.zcloud\.io\/[a-z]+: (\S+)$/m.exec(text)?.[1];
            assert.ok(storage, `${f}: a Node without a storage label`);
            if (labels === "apply") {
                kubectl(["apply", "--server-side", "--field-manager", nodeLabelFieldManager(storage), "-f", f]);
            }
        } else {
            kubectl(["apply", "--server-side", "--field-manager", `zcloud-${path.basename(f, ".yaml")}`, "-f", f]);
        }
    }
}

/** A started sandbox: the control plane, kwok nodes and sshd nodes node1..N; nothing applied yet. */
export interface Sandbox {
    dir: string;
    env: NodeJS.ProcessEnv;
    nodes: Record<string, SandboxNode>;
    keyFile: string;
    kubectl(args: string[]): string;
    lvmOn(name: string, args: string[]): string;
    /** Runs at stop(), before the nodes go (removing what was staged on them). */
    onStop(cleanup: () => void): void;
    stop(): void;
}

/** Starts the control plane and `count` nodes (node1..N, `devices` 64 MiB loop devices each). */
export async function startSandbox(count: number, devices: number): Promise<Sandbox> {
    const env: NodeJS.ProcessEnv = { ...toolsEnv(), ...lvmQuiet };
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-applied-"));
    const controlPlane = path.join(dir, "controlplane");
    const cleanups: Array<() => void> = [];
    const stop = () => {
        for (const cleanup of cleanups.splice(0)) {
            try {
                cleanup();
            } catch {
                // a node already gone has nothing staged left to remove
            }
        }
        tryRun("bash", [path.join(here, "controlplane.sh"), "stop", controlPlane], env);
        stopNodes(dir);
        fs.rmSync(dir, { recursive: true, force: true });
    };
    try {
        execFileSync("bash", [path.join(here, "controlplane.sh"), "start", controlPlane], { env, stdio: ["ignore", "ignore", "inherit"] });
        env.KUBECONFIG = path.join(controlPlane, "kubeconfig");
        const nodes = await startNodes(dir, count, devices, 64);
        for (const n of Object.keys(nodes)) {
            execFileSync("bash", [path.join(here, "controlplane.sh"), "add-node", controlPlane, n], { env, stdio: ["ignore", "ignore", "inherit"] });
        }
        return {
            dir,
            env,
            nodes,
            keyFile: path.join(dir, "id_ed25519"),
            kubectl: (args) => execFileSync("kubectl", args, { encoding: "utf8", env }),
            lvmOn: (name, args) => sh(args[0], args.slice(1), { ...process.env, ...lvmQuiet, LVM_SYSTEM_DIR: path.join(dir, "nodes", name, "lvm") }),
            onStop: (cleanup) => cleanups.push(cleanup),
            stop,
        };
    } catch (e) {
        stop();
        throw e;
    }
}

/**
 * Applies a stack file to the sandbox as `pulumi up` would: `npm run plan -- <file> --out`, then
 * per node command its script copy and its disk command over SSH (host key pinned), then the
 * label commands (kubectl here), then the manifests, as the dependency graph orders them.
 */
export async function applyStackFile(sb: Sandbox, stackFile: string): Promise<void> {
    const out = path.join(sb.dir, `out-${path.basename(stackFile, ".yaml")}`);
    execFileSync(process.execPath, ["--import", "tsx", path.join(root, "tools", "plan.ts"), stackFile, "--out", out], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
    const planned = await plannedCommands(fs.readFileSync(stackFile, "utf8"));
    for (const cmd of planned.nodes) {
        const n = sb.nodes[cmd.node];
        const knownHosts = path.join(sb.dir, `known_hosts_${cmd.node}`);
        fs.writeFileSync(knownHosts, `[${n.address}]:${n.port} ${n.hostKey}\n`);
        const pin = ["-o", "StrictHostKeyChecking=yes", "-o", `UserKnownHostsFile=${knownHosts}`];
        const ssh = (command: string, input = "") =>
            execFileSync("ssh", ["-F", "/dev/null", "-i", sb.keyFile, "-p", String(n.port), "-o", "BatchMode=yes", ...pin, "-o", "LogLevel=ERROR", `root@${n.address}`, command], { input, stdio: ["pipe", "ignore", "pipe"] });
        const copy = copyOverSsh(cmd.copy);
        ssh(copy.command, copy.stdin);
        ssh(cmd.create);
        sb.onStop(() => ssh(removeCopiesCommand([cmd.copy])));
    }
    // The label commands for real: kubectl where `pulumi up` runs, against the sandbox's API server.
    for (const label of planned.labels) {
        runLabelCommand(label, "create", sb.env);
    }
    applyManifests(out, sb.kubectl, "commands");
}

/**
 * Starts the sandbox (`count` nodes, `devices` loop devices each) and applies an LVM storage
 * `storage` (default StorageClass) on the first device of every node, and an NFS storage if
 * `nfs` names one.
 */
export async function applyLvmStack(storage: string, count: number, devices: number, nfs?: string): Promise<AppliedStack> {
    const sb = await startSandbox(count, devices);
    try {
        const nodes = sb.nodes;
        const stackFile = path.join(sb.dir, "Pulumi.applied.yaml");
        const hosts = ["  zcloud-storage:lvm:", `    - name: ${storage}`, "      default: true", "      hosts:", ...Object.keys(nodes).map((n) => `        ${n}: [${nodes[n].devices[0]}]`)];
        const share = nfs ? ["  zcloud-storage:nfs:", `    - name: ${nfs}`, "      server: 127.0.0.1", "      path: /exports/k8s"] : [];
        fs.writeFileSync(stackFile, stackForNodes(nodes, [...hosts, ...share]));
        await applyStackFile(sb, stackFile);
        return { dir: sb.dir, env: sb.env, nodes, stackFile, keyFile: sb.keyFile, kubectl: sb.kubectl, lvmOn: sb.lvmOn, stop: sb.stop };
    } catch (e) {
        sb.stop();
        throw e;
    }
}
