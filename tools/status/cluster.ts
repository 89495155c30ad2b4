/**
 * What status reads from the cluster, through kubectl (read-only `get` and, for CephFS, `exec`
 * of `ceph status` in the storage's admin pod). kubectl is used rather than a client library so
 * every kubeconfig auth method works as it does for the operator's own kubectl.
 */
import { spawn } from "child_process";

export interface ClusterNode {
    name: string;
    labels: Record<string, string>;
    ready: boolean;
}

export interface ClusterStorageClass {
    name: string;
    provisioner: string;
    isDefault: boolean;
}

export interface ClusterPod {
    name: string;
    node?: string;
    labels: Record<string, string>;
    phase: string;
    ready: boolean;
}

export interface ClusterFacts {
    nodes: ClusterNode[];
    storageClasses: ClusterStorageClass[];
    /** Pods of the storage namespace. */
    pods: ClusterPod[];
}

interface KubeObject {
    kind: string;
    metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
    provisioner?: string;
    spec?: { nodeName?: string };
    status?: { phase?: string; conditions?: Array<{ type: string; status: string }> };
}

const readyCondition = (o: KubeObject) => o.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;

/** Turns `kubectl get ... -o json` lists into the facts status evaluates. Pure. */
export function clusterFacts(clusterScoped: { items: KubeObject[] }, namespaced: { items: KubeObject[] }): ClusterFacts {
    const of = (list: { items: KubeObject[] }, kind: string) => list.items.filter((o) => o.kind === kind);
    return {
        nodes: of(clusterScoped, "Node").map((o) => ({ name: o.metadata.name, labels: o.metadata.labels ?? {}, ready: readyCondition(o) })),
        storageClasses: of(clusterScoped, "StorageClass").map((o) => ({
            name: o.metadata.name,
            provisioner: o.provisioner ?? "",
            isDefault: o.metadata.annotations?.["storageclass.kubernetes.io/is-default-class"] === "true",
        })),
        pods: of(namespaced, "Pod").map((o) => ({
            name: o.metadata.name,
            node: o.spec?.nodeName,
            labels: o.metadata.labels ?? {},
            phase: o.status?.phase ?? "Unknown",
            ready: readyCondition(o),
        })),
    };
}

export interface Kubectl {
    (args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }>;
}

/** kubectl with the stack's context (or KUBECONFIG's current one). */
export function kubectlFor(context: string | undefined, timeoutSeconds: number): Kubectl {
    return (args) =>
        new Promise((resolve) => {
            const child = spawn("kubectl", [...(context ? ["--context", context] : []), `--request-timeout=${timeoutSeconds}s`, ...args], { stdio: ["ignore", "pipe", "pipe"] });
            let stdout = "";
            let stderr = "";
            child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
            child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
            child.once("error", (e) => resolve({ code: null, stdout, stderr: `${stderr}${e.message}` }));
            child.once("close", (code) => resolve({ code, stdout, stderr }));
        });
}

const lastLine = (text: string) =>
    text
        .split("\n")
        .map((l) => l.trim())
        .filter(Boolean)
        .pop() ?? "no output";

/** Why kubectl failed, on one line: its last error line, and a prompt it printed (no terminal to answer it). */
function kubectlFailure(r: { stdout: string; stderr: string }): string {
    const printed = r.stdout.trim();
    return `kubectl: ${lastLine(r.stderr)}${printed && !printed.startsWith("{") ? ` (it printed: ${printed.slice(0, 200)})` : ""}`;
}

/** Reads nodes, StorageClasses and the namespace's pods; an error string when the cluster does not answer. */
export async function readCluster(kubectl: Kubectl, namespace: string): Promise<ClusterFacts | { error: string }> {
    const [cluster, pods] = await Promise.all([kubectl(["get", "nodes,storageclasses", "-o", "json"]), kubectl(["get", "pods", "-n", namespace, "-o", "json"])]);
    for (const r of [cluster, pods]) {
        if (r.code !== 0) {
            return { error: kubectlFailure(r) };
        }
    }
    try {
        return clusterFacts(JSON.parse(cluster.stdout), JSON.parse(pods.stdout));
    } catch (e) {
        return { error: `unreadable kubectl output: ${(e as Error).message}` };
    }
}

/** The parts of `ceph status -f json` status shows. */
export interface CephHealth {
    status: string;
    osds: number;
    up: number;
    in: number;
    bytesUsed: number;
    bytesTotal: number;
}

/** Pure: tolerant of the field layouts of Ceph 16 to 19 (osdmap nested or flat). */
export function parseCephStatus(json: string): CephHealth {
    const s = JSON.parse(json) as {
        health?: { status?: string };
        osdmap?: { num_osds?: number; num_up_osds?: number; num_in_osds?: number; osdmap?: { num_osds?: number; num_up_osds?: number; num_in_osds?: number } };
        pgmap?: { bytes_used?: number; bytes_total?: number };
    };
    const osdmap = s.osdmap?.osdmap ?? s.osdmap ?? {};
    return {
        status: s.health?.status ?? "UNKNOWN",
        osds: osdmap.num_osds ?? 0,
        up: osdmap.num_up_osds ?? 0,
        in: osdmap.num_in_osds ?? 0,
        bytesUsed: s.pgmap?.bytes_used ?? 0,
        bytesTotal: s.pgmap?.bytes_total ?? 0,
    };
}

/** `ceph status` run in one Ready admin pod of the storage; an error string when it cannot run. */
export async function readCephHealth(kubectl: Kubectl, namespace: string, adminPod: string | undefined): Promise<CephHealth | { error: string }> {
    if (!adminPod) {
        return { error: "no Ready admin pod to ask" };
    }
    const r = await kubectl(["exec", "-n", namespace, adminPod, "--", "ceph", "status", "--format", "json"]);
    if (r.code !== 0) {
        return { error: kubectlFailure(r) };
    }
    try {
        return parseCephStatus(r.stdout);
    } catch (e) {
        return { error: `unreadable ceph status: ${(e as Error).message}` };
    }
}
