/**
 * A stack applied the way `pulumi up` applies it, without the Pulumi CLI: a control plane on
 * 127.0.0.1 (controlplane.sh: etcd, kube-apiserver, controller-manager, scheduler, kwok nodes),
 * sandbox SSH nodes with loop devices (nodes.ts), each node's planned disk command run over SSH,
 * then every manifest `npm run plan -- <stack> --out` renders applied with kubectl (labels
 * included), so kwok runs the pods the program declares. Used by the day-2 status test and bench;
 * needs only the control plane's binaries (build-tools.sh node kubernetes etcd kwok) and root.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { SandboxNode, startNodes, stopNodes } from "./nodes";
import { stackForNodes } from "../helpers/day2";
import { copyOverSsh, plannedNodeCommands, removeCopiesCommand } from "../helpers/planned";
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
 * then every other object; a NodePatch renders as a Node and is merged into the node as the
 * program's patch would (never applied: kubectl would take over the node's own labels from its
 * client-side apply and drop them).
 */
export function applyManifests(out: string, kubectl: (args: string[]) => string): void {
    const files = manifestsInApplyOrder(out);
    const first = files.filter((f) => /^kind: (Namespace|CustomResourceDefinition)$/m.test(fs.readFileSync(f, "utf8")));
    for (const f of first) {
        kubectl(["apply", "-f", f]);
    }
    kubectl(["wait", "--for", "condition=Established", "--timeout", "60s", "crd", "--all"]);
    for (const f of files.filter((f) => !first.includes(f))) {
        if (/^kind: Node$/m.test(fs.readFileSync(f, "utf8"))) {
            kubectl(["patch", "-f", f, "--type", "merge", "--patch-file", f]);
        } else {
            kubectl(["apply", "--server-side", "--field-manager", `zcloud-${path.basename(f, ".yaml")}`, "-f", f]);
        }
    }
}

/**
 * Starts the control plane and `count` nodes (node1..N, `devices` loop devices each) and applies
 * an LVM storage `storage` (default StorageClass) on the first device of every node, and an NFS
 * storage if `nfs` names one.
 */
export async function applyLvmStack(storage: string, count: number, devices: number, nfs?: string): Promise<AppliedStack> {
    const env: NodeJS.ProcessEnv = { ...toolsEnv(), ...lvmQuiet };
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-applied-"));
    const controlPlane = path.join(dir, "controlplane");
    let nodes: Record<string, SandboxNode> = {};
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
    const kubectl = (args: string[]) => execFileSync("kubectl", args, { encoding: "utf8", env });
    try {
        execFileSync("bash", [path.join(here, "controlplane.sh"), "start", controlPlane], { env, stdio: ["ignore", "ignore", "inherit"] });
        env.KUBECONFIG = path.join(controlPlane, "kubeconfig");
        nodes = await startNodes(dir, count, devices, 64);
        for (const n of Object.keys(nodes)) {
            execFileSync("bash", [path.join(here, "controlplane.sh"), "add-node", controlPlane, n], { env, stdio: ["ignore", "ignore", "inherit"] });
        }
        const stackFile = path.join(dir, "Pulumi.applied.yaml");
        const hosts = ["  zcloud-storage:lvm:", `    - name: ${storage}`, "      default: true", "      hosts:", ...Object.keys(nodes).map((n) => `        ${n}: [${nodes[n].devices[0]}]`)];
        const share = nfs ? ["  zcloud-storage:nfs:", `    - name: ${nfs}`, "      server: 127.0.0.1", "      path: /exports/k8s"] : [];
        fs.writeFileSync(stackFile, stackForNodes(nodes, [...hosts, ...share]));
        const out = path.join(dir, "out");
        execFileSync(process.execPath, ["--import", "tsx", path.join(root, "tools", "plan.ts"), stackFile, "--out", out], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
        const keyFile = path.join(dir, "id_ed25519");
        const planned = new Map((await plannedNodeCommands(fs.readFileSync(stackFile, "utf8"))).map((c) => [c.name, c]));
        // Per node its script copy, then its disk command; then the objects (labels included), as
        // the dependency graph orders them.
        for (const [name, n] of Object.entries(nodes)) {
            const cmd = planned.get(`${storage}-${name}-disks`)!;
            const pin = ["-o", "StrictHostKeyChecking=yes", "-o", `UserKnownHostsFile=${path.join(dir, `known_hosts_${name}`)}`];
            fs.writeFileSync(path.join(dir, `known_hosts_${name}`), `[${n.address}]:${n.port} ${n.hostKey}\n`);
            const ssh = (command: string, input = "") =>
                execFileSync("ssh", ["-F", "/dev/null", "-i", keyFile, "-p", String(n.port), "-o", "BatchMode=yes", ...pin, "-o", "LogLevel=ERROR", `root@${n.address}`, command], { input, stdio: ["pipe", "ignore", "pipe"] });
            const copy = copyOverSsh(cmd.copy);
            ssh(copy.command, copy.stdin);
            ssh(cmd.create);
            cleanups.push(() => ssh(removeCopiesCommand([cmd.copy])));
        }
        applyManifests(out, kubectl);
        return {
            dir,
            env,
            nodes,
            stackFile,
            keyFile,
            kubectl,
            lvmOn: (name, args) => sh(args[0], args.slice(1), { ...process.env, ...lvmQuiet, LVM_SYSTEM_DIR: path.join(dir, "nodes", name, "lvm") }),
            stop,
        };
    } catch (e) {
        stop();
        throw e;
    }
}
