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
    /** The cluster-wide OSD flags Ceph warns of (health check OSDMAP_FLAGS), e.g. ["noout"]. */
    flags?: string[];
    /** The health checks: code -> summary message. */
    checks?: Record<string, string>;
    /** Why a HEALTH_WARN is expected and no problem (set by the evaluation). */
    expected?: string;
}

/** The flags of Ceph's OSDMAP_FLAGS health check summary (`noout,norebalance flag(s) set`). */
export function osdmapFlags(summary: string | undefined): string[] {
    const m = /^([a-z_,-]+) flag\(s\) set$/.exec(summary ?? "");
    return m ? m[1].split(",").filter(Boolean) : [];
}

/** Pure: tolerant of the field layouts of Ceph 16 to 20 (osdmap nested or flat). */
export function parseCephStatus(json: string): CephHealth {
    const s = JSON.parse(json) as {
        health?: { status?: string; checks?: Record<string, { summary?: { message?: string } }> };
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
        flags: osdmapFlags(s.health?.checks?.OSDMAP_FLAGS?.summary?.message),
        checks: Object.fromEntries(Object.entries(s.health?.checks ?? {}).map(([code, c]) => [code, c.summary?.message ?? ""])),
    };
}

/**
 * kubectl's argv of a read-only `ceph <args> --format json` in the storage's admin pod. The pod has
 * no keyring where `ceph` looks by default: it holds client.admin's key as a file of the key
 * directory its env names (ZCLOUD_CEPH_KEYS, as the node scripts read it) and ceph.conf through
 * CEPH_CONF. The key stays in its file (only its path is in argv).
 */
export function cephExecArgv(namespace: string, adminPod: string, args: string[]): string[] {
    return ["exec", "-n", namespace, adminPod, "--", "sh", "-c", 'exec ceph --name client.admin --keyfile "$ZCLOUD_CEPH_KEYS/admin" "$@"', "ceph", ...args, "--format", "json"];
}

/** One OSD as the cluster sees it: its CRUSH host (= node), up/in, the devices under it. */
export interface CephOsd {
    id: number;
    host: string;
    up: boolean;
    in: boolean;
    /** Kernel names of the devices the OSD sits on (`ceph osd metadata`'s `devices`), e.g. ["sdb"]. */
    devices: string[];
}

/**
 * Pure: `ceph osd tree -f json` and `ceph osd metadata -f json` to one entry per OSD. The tree
 * gives host (the OSD's parent host bucket), `status` up/down and `reweight` (0: out); metadata
 * gives the devices (kept by the mons for a down OSD).
 */
export function parseCephOsds(treeJson: string, metadataJson: string): CephOsd[] {
    const tree = JSON.parse(treeJson) as { nodes: Array<{ id: number; name: string; type: string; status?: string; reweight?: number; children?: number[] }> };
    const metadata = JSON.parse(metadataJson) as Array<{ id: number; devices?: string }>;
    const hostOf = new Map<number, string>();
    for (const n of tree.nodes) {
        if (n.type === "host") {
            for (const child of n.children ?? []) {
                hostOf.set(child, n.name);
            }
        }
    }
    return tree.nodes
        .filter((n) => n.type === "osd")
        .map((n) => ({
            id: n.id,
            host: hostOf.get(n.id) ?? "",
            up: n.status === "up",
            in: (n.reweight ?? 0) > 0,
            devices: (metadata.find((m) => m.id === n.id)?.devices ?? "").split(",").filter(Boolean),
        }))
        .sort((a, b) => a.id - b.id);
}

/** `ceph osd tree` and `ceph osd metadata` in one Ready admin pod of the storage. */
export async function readCephOsds(kubectl: Kubectl, namespace: string, adminPod: string | undefined): Promise<CephOsd[] | { error: string }> {
    if (!adminPod) {
        return { error: "no Ready admin pod to ask" };
    }
    const [tree, metadata] = await Promise.all(
        [["osd", "tree"], ["osd", "metadata"]].map((args) => kubectl(cephExecArgv(namespace, adminPod, args))),
    );
    for (const r of [tree, metadata]) {
        if (r.code !== 0) {
            return { error: kubectlFailure(r) };
        }
    }
    try {
        return parseCephOsds(tree.stdout, metadata.stdout);
    } catch (e) {
        return { error: `unreadable ceph osd tree/metadata: ${(e as Error).message}` };
    }
}

/** `ceph status` run in one Ready admin pod of the storage; an error string when it cannot run. */
export async function readCephHealth(kubectl: Kubectl, namespace: string, adminPod: string | undefined): Promise<CephHealth | { error: string }> {
    if (!adminPod) {
        return { error: "no Ready admin pod to ask" };
    }
    const r = await kubectl(cephExecArgv(namespace, adminPod, ["status"]));
    if (r.code !== 0) {
        return { error: kubectlFailure(r) };
    }
    try {
        return parseCephStatus(r.stdout);
    } catch (e) {
        return { error: `unreadable ceph status: ${(e as Error).message}` };
    }
}
