/** Shared by the day-2 tool tests: a stack file for sandbox SSH nodes, and running a tool's CLI. */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
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

/** A Kubernetes object as `kubectl get -o json` lists it (the fields status reads). */
export interface KubeObj {
    kind: string;
    metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
    [k: string]: unknown;
}

export interface ClusterView {
    cluster: KubeObj[];
    pods: KubeObj[];
}

export const readyStatus = (value = "True") => ({ conditions: [{ type: "Ready", status: value }] });

/**
 * What a healthy cluster shows after `pulumi up` of one LVM storage (default StorageClass) on
 * `nodes` and, if named, an NFS storage: labelled Ready nodes, StorageClasses, the drivers' and
 * lvmd pods Running and Ready.
 */
export function healthyView(lvm: string, nodes: string[], nfs?: string): ClusterView {
    const pod = (name: string, node: string, labels: Record<string, string>): KubeObj => ({ kind: "Pod", metadata: { name, labels }, spec: { nodeName: node }, status: { phase: "Running", ...readyStatus() } });
    const driver = (name: string, component: string) => ({ "app.kubernetes.io/name": name, "app.kubernetes.io/component": component });
    return {
        cluster: [
            ...nodes.map((n) => ({ kind: "Node", metadata: { name: n, labels: { "storage.zcloud.io/lvm": lvm } }, status: readyStatus() })),
            { kind: "StorageClass", metadata: { name: lvm, annotations: { "storageclass.kubernetes.io/is-default-class": "true" } }, provisioner: "topolvm.io" },
            ...(nfs ? [{ kind: "StorageClass", metadata: { name: nfs }, provisioner: "nfs.csi.k8s.io" }] : []),
        ],
        pods: [
            pod("topolvm-controller-0", nodes[0], driver("topolvm", "controller")),
            ...(nfs ? [pod("csi-nfs-controller-0", nodes[0], driver("csi-driver-nfs", "controller"))] : []),
            ...nodes.flatMap((n) => [
                pod(`topolvm-node-${n}`, n, driver("topolvm", "node")),
                pod(`lvmd-${lvm}-${n}`, n, { "storage.zcloud.io/storage": lvm, "app.kubernetes.io/component": "lvmd" }),
                ...(nfs ? [pod(`csi-nfs-node-${n}`, n, driver("csi-driver-nfs", "node"))] : []),
            ]),
        ],
    };
}

/**
 * A stand-in kubectl in `dir` that answers exactly the two reads status makes from the view
 * last served; `env` puts it first on PATH.
 */
export function standInKubectl(dir: string, namespace = "zcloud-storage"): { env: NodeJS.ProcessEnv; serve(view: ClusterView): void } {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(
        path.join(dir, "kubectl"),
        [
            "#!/bin/sh",
            'here=$(dirname "$0")',
            'case "$*" in',
            '  *"get nodes,storageclasses -o json"*) cat "$here/cluster.json" ;;',
            `  *"get pods -n ${namespace} -o json"*) cat "$here/pods.json" ;;`,
            '  *) echo "stand-in kubectl: unexpected: $*" >&2; exit 1 ;;',
            "esac",
            "",
        ].join("\n"),
        { mode: 0o755 },
    );
    return {
        env: { ...process.env, PATH: `${dir}:${process.env.PATH}` },
        serve(view) {
            fs.writeFileSync(path.join(dir, "cluster.json"), JSON.stringify({ kind: "List", items: view.cluster }));
            fs.writeFileSync(path.join(dir, "pods.json"), JSON.stringify({ kind: "List", items: view.pods }));
        },
    };
}
