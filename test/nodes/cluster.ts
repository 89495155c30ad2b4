/**
 * The nodes tier's cluster for a test file: the tools built (or found in the cache), the images
 * built and the cluster of cluster.sh started with them pushed into its registry; `stop` ends it.
 */
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const nodesDir = __dirname;
const engineDir = path.join(nodesDir, "..", "engine");
/** The tools the tier runs: the control plane's and the nodes'. */
export const nodeTools = ["node", "kubernetes", "etcd", "kwok", "kubernetes-node", "containerd", "runc", "cni-plugins", "crane", "kube-state-metrics"];
/** The registry cluster.sh serves on the nodes' bridge. */
export const registry = "10.250.0.1:5000";

export interface NodesCluster {
    dir: string;
    nodes: string[];
    /** Image references in the registry by image name (images.sh push): toolbox, ceph, ceph-debian. */
    images: Record<string, string>;
    /** Runs a bash command with the tools on PATH and KUBECONFIG set; throws with its output on failure. */
    sh(command: string, timeoutMs?: number): string;
    /** `kubectl ... -o json` parsed. */
    json(args: string): any;
    stop(): void;
}

export function startCluster(nodes: string[], prefix = "zcloud-nodes-"): NodesCluster {
    const built = execFileSync("bash", [path.join(engineDir, "build-tools.sh"), ...nodeTools], { encoding: "utf8", timeout: 3_600_000 });
    const envFile = built.trim().split("\n").pop()!;
    if (!fs.existsSync(envFile)) {
        throw new Error(`build-tools.sh printed no env file:\n${built}`);
    }
    execFileSync("bash", [path.join(nodesDir, "images.sh"), "build"], { encoding: "utf8", timeout: 1_800_000 });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    const sh = (command: string, timeoutMs = 180_000): string => {
        const r = spawnSync("bash", ["-c", `. "${envFile}" && export KUBECONFIG="${dir}/kubeconfig" && ${command}`], {
            encoding: "utf8",
            timeout: timeoutMs,
            maxBuffer: 64 * 1024 * 1024,
        });
        if (r.status !== 0) {
            throw new Error(`${command} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
        }
        return r.stdout;
    };
    const script = path.join(nodesDir, "cluster.sh");
    // the nodes' containerd roots hold every image unpacked: a few GB per run, removed with the rest
    const stop = () => {
        sh(`bash "${script}" stop "${dir}"`);
        fs.rmSync(dir, { recursive: true, force: true });
    };
    try {
        sh(`bash "${script}" start "${dir}" ${nodes.join(" ")}`, 600_000);
        const pushed = sh(`bash "${path.join(nodesDir, "images.sh")}" push ${registry} 2>>"${dir}/logs/images.log"`, 600_000);
        const images = Object.fromEntries(
            pushed
                .trim()
                .split("\n")
                .map((line) => line.split(" ") as [string, string]),
        );
        return { dir, nodes, images, sh, json: (args: string) => JSON.parse(sh(`kubectl ${args} -o json`)), stop };
    } catch (e) {
        stop();
        throw e;
    }
}

/** Polls `check` (sync or async) every `everyMs` (1 s) until it returns a value (not undefined); fails naming `what`. */
export async function waitFor<T>(what: string, timeoutMs: number, check: () => T | undefined | Promise<T | undefined>, everyMs = 1000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    for (;;) {
        try {
            const value = await check();
            if (value !== undefined) {
                return value;
            }
        } catch (e) {
            last = e;
        }
        if (Date.now() > deadline) {
            throw new Error(`${what}: not within ${timeoutMs / 1000} s${last ? ` (last error: ${String(last).slice(0, 500)})` : ""}`);
        }
        await new Promise((r) => setTimeout(r, everyMs));
    }
}
