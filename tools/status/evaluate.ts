/**
 * Status of every storage from facts: the cluster's objects, each node's inventory over SSH and
 * (CephFS) `ceph status`. Pure: facts in, problems out; unit-tested with exact messages.
 */
import { IscsiConfig, StackModel, StorageType } from "../../components/config/model";
import { cephNames } from "../../components/cephfs/cluster";
import { NodeStorageType, labelDomain, lvmVolumeGroup, storageLabelKey } from "../../components/naming";
import { NodeReport } from "../discover/inventory";
import { CephHealth, CephOsd, ClusterFacts, ClusterPod } from "./cluster";
import { IscsiNodeFacts, iscsiNodeProblems } from "./iscsi";
import { Problem } from "./problem";

export type { Problem, ProblemKind } from "./problem";

export interface VgStatus {
    name: string;
    size: number;
    free: number;
    lvCount: number;
    /** Data usage of the thin pool in percent, when the storage has one. */
    thinPoolPercent?: number;
    /** Kernel paths of its PVs. */
    devices: string[];
}

export interface NodeStatus {
    /** The node object is Ready (null: cluster not read). */
    ready: boolean | null;
    label: boolean | null;
    daemonsReady: boolean | null;
    /** LVM: the storage's VG on the node (null: none, or the node was not reached). */
    vg?: VgStatus | null;
    /** Declared path -> kernel path on the node (null: missing; undefined: node not reached). */
    devices: Record<string, string | null | undefined>;
    /** iSCSI: sessions, multipath, VG and lockspace on the initiator (null: not reached). */
    iscsi?: IscsiNodeFacts | null;
}

export interface StorageStatus {
    name: string;
    type: StorageType;
    healthy: boolean;
    problems: Problem[];
    nodes: Record<string, NodeStatus>;
    storageClass: { present: boolean; default: boolean } | null;
    ceph?: CephHealth | null;
}

export interface StatusFacts {
    model: StackModel;
    cluster: ClusterFacts | { error: string };
    /** Node name -> its inventory, or why it could not be read. */
    nodes: Map<string, NodeReport | { error: string }>;
    /** CephFS storage name -> `ceph status`, or why it could not be read. */
    ceph: Map<string, CephHealth | { error: string }>;
    /** CephFS storage name -> its OSDs (`ceph osd tree` + `ceph osd metadata`), or why not read. */
    cephOsds?: Map<string, CephOsd[] | { error: string }>;
    /** iSCSI storage name -> initiator -> its iscsi-status.sh facts, or why they could not be read. */
    iscsi?: Map<string, Map<string, IscsiNodeFacts | { error: string }>>;
}

/** The shared CSI drivers: their pods' name label and the components status expects Ready. */
const drivers = {
    lvm: { name: "topolvm", controller: "controller", nodePlugin: "node" },
    cephfs: { name: "ceph-csi-cephfs", controller: "provisioner", nodePlugin: "nodeplugin" },
    nfs: { name: "csi-driver-nfs", controller: "controller", nodePlugin: "node" },
    iscsi: { name: "csi-sanlock-lvm", controller: "controller", nodePlugin: "node" },
} as const;

/** A thin pool at or above this data usage is reported. */
export const thinPoolFullPercent = 90;

const storageLabel = `${labelDomain}/storage`;

function matches(pod: ClusterPod, selector: Record<string, string>): boolean {
    return Object.entries(selector).every(([k, v]) => pod.labels[k] === v);
}

/**
 * Problems of the pods matching `selector` (on `node`, when given): none at all, or each one
 * not Ready. `what` names them in messages (`lvmd`, `topolvm node`).
 */
function podProblems(pods: ClusterPod[], selector: Record<string, string>, node: string | null, what: string): Problem[] {
    const found = pods.filter((p) => matches(p, selector) && (node === null || p.node === node));
    if (found.length === 0) {
        return [{ kind: "degraded", node, object: `${what} pod`, message: node ? "none on the node" : "none found" }];
    }
    return found.filter((p) => !p.ready).map((p) => ({ kind: "degraded", node: node ?? p.node ?? null, object: `pod ${p.name}`, message: `${what} pod is not Ready (phase ${p.phase})` }));
}

function driverSelector(type: keyof typeof drivers, component: "controller" | "nodePlugin"): Record<string, string> {
    return { "app.kubernetes.io/name": drivers[type].name, "app.kubernetes.io/component": drivers[type][component] };
}

function storageClassProblems(cluster: ClusterFacts, name: string, isDefault: boolean): { problems: Problem[]; sc: StorageStatus["storageClass"] } {
    const sc = cluster.storageClasses.find((s) => s.name === name);
    if (!sc) {
        return { problems: [{ kind: "drift", node: null, object: `StorageClass ${name}`, message: "missing" }], sc: { present: false, default: false } };
    }
    const problems: Problem[] = [];
    if (sc.isDefault !== isDefault) {
        problems.push({ kind: "drift", node: null, object: `StorageClass ${name}`, message: isDefault ? "is not the default StorageClass, the config says default: true" : "is the default StorageClass, the config does not say so" });
    }
    return { problems, sc: { present: true, default: sc.isDefault } };
}

/** The node object and its storage label. */
function nodeObjectProblems(cluster: ClusterFacts, node: string, type: NodeStorageType, storage: string): { problems: Problem[]; ready: boolean; label: boolean } {
    const obj = cluster.nodes.find((n) => n.name === node);
    if (!obj) {
        return { problems: [{ kind: "drift", node, object: `node ${node}`, message: "not in the cluster" }], ready: false, label: false };
    }
    const problems: Problem[] = [];
    if (!obj.ready) {
        problems.push({ kind: "degraded", node, object: `node ${node}`, message: "is not Ready" });
    }
    const key = storageLabelKey(type);
    const value = obj.labels[key];
    if (value !== storage) {
        problems.push({ kind: "drift", node, object: `label ${key}`, message: value === undefined ? `missing (expected ${storage})` : `is ${value}, expected ${storage}` });
    }
    return { problems, ready: obj.ready, label: value === storage };
}

/** Declared devices that do not exist on the node. */
function declaredOnNode(report: NodeReport, declared: string[], node: string): { devices: NodeStatus["devices"]; problems: Problem[] } {
    const devices: NodeStatus["devices"] = {};
    const problems: Problem[] = [];
    for (const d of declared) {
        const kernel = report.declared.get(d);
        devices[d] = kernel ?? null;
        if (!kernel) {
            problems.push({ kind: "drift", node, object: d, message: "declared but does not exist on the node" });
        }
    }
    return { devices, problems };
}

/** The storage's VG against the declared devices, both ways, and its thin pool usage. */
function lvmVgProblems(report: NodeReport, storage: string, declared: NodeStatus["devices"], node: string, thin: boolean): { vg: VgStatus | null; problems: Problem[] } {
    const vgName = lvmVolumeGroup(storage);
    const pvs = report.pvs.filter((p) => p.vg === vgName);
    if (pvs.length === 0) {
        return { vg: null, problems: [{ kind: "drift", node, object: `VG ${vgName}`, message: "does not exist on the node" }] };
    }
    const problems: Problem[] = [];
    const inVg = pvs.map((p) => p.pv);
    for (const [path, kernel] of Object.entries(declared)) {
        if (kernel && !inVg.includes(kernel)) {
            problems.push({ kind: "drift", node, object: path, message: `declared but not in VG ${vgName}` });
        }
    }
    const declaredKernel = Object.values(declared).filter((k): k is string => !!k);
    for (const pv of inVg) {
        if (!declaredKernel.includes(pv)) {
            problems.push({ kind: "drift", node, object: pv, message: `in VG ${vgName} but not declared` });
        }
    }
    const pool = report.lvs.find((l) => l.vg === vgName && l.attr.startsWith("t"));
    if (thin && !pool) {
        problems.push({ kind: "drift", node, object: `VG ${vgName}`, message: "has no thin pool, the config declares thin" });
    }
    if (pool?.dataPercent !== undefined && pool.dataPercent >= thinPoolFullPercent) {
        problems.push({ kind: "degraded", node, object: `LV ${vgName}/${pool.lv}`, message: `thin pool ${pool.dataPercent}% full` });
    }
    const vg: VgStatus = { name: vgName, size: pvs[0].vgSize, free: pvs[0].vgFree, lvCount: pvs[0].lvCount, devices: inVg, ...(pool?.dataPercent !== undefined ? { thinPoolPercent: pool.dataPercent } : {}) };
    return { vg, problems };
}

/** The node object, its label and the storage's daemon pods on it (node plugin and `own`). */
function nodeClusterStatus(facts: StatusFacts, type: NodeStorageType, storage: string, node: string, status: NodeStatus, own: (cluster: ClusterFacts) => Problem[]): Problem[] {
    if ("error" in facts.cluster) {
        return [];
    }
    const cluster = facts.cluster;
    const obj = nodeObjectProblems(cluster, node, type, storage);
    status.ready = obj.ready;
    status.label = obj.label;
    const daemonProblems = [...podProblems(cluster.pods, driverSelector(type, "nodePlugin"), node, `${drivers[type].name} node`), ...own(cluster)];
    status.daemonsReady = daemonProblems.length === 0;
    return [...obj.problems, ...daemonProblems];
}

/** Per node of an lvm or cephfs storage: node object, label, daemons, devices (and the VG for lvm). */
function nodeStorageStatus(facts: StatusFacts, type: "lvm" | "cephfs", storage: string, node: string, declared: string[], thin: boolean): { status: NodeStatus; problems: Problem[] } {
    const status: NodeStatus = { ready: null, label: null, daemonsReady: null, devices: Object.fromEntries(declared.map((d) => [d, undefined])) };
    const problems = nodeClusterStatus(facts, type, storage, node, status, (cluster) =>
            type === "lvm"
                ? podProblems(cluster.pods, { [storageLabel]: storage, "app.kubernetes.io/component": "lvmd" }, node, "lvmd")
                : [
                      ...declared.flatMap((d) => podProblems(cluster.pods, { "storage.zcloud.io/ceph-osd": cephNames(storage).osd(node, d) }, node, `ceph-osd ${d}`)),
                      ...cluster.pods
                          .filter((p) => p.node === node && p.labels[storageLabel] === storage && !p.labels["storage.zcloud.io/ceph-osd"] && !p.ready)
                          .map((p): Problem => ({ kind: "degraded", node, object: `pod ${p.name}`, message: `${p.labels["app.kubernetes.io/component"] ?? "ceph"} pod is not Ready (phase ${p.phase})` })),
                  ],
    );
    const report = facts.nodes.get(node);
    if (!report || "error" in report) {
        problems.push({ kind: "unreachable", node, object: "ssh", message: report ? report.error : "not contacted" });
        if (type === "lvm") {
            status.vg = null;
        }
        return { status, problems };
    }
    const devices = declaredOnNode(report, declared, node);
    status.devices = devices.devices;
    problems.push(...devices.problems);
    if (type === "lvm") {
        const vg = lvmVgProblems(report, storage, devices.devices, node, thin);
        status.vg = vg.vg;
        problems.push(...vg.problems);
    }
    return { status, problems };
}

/** Per initiator of an iSCSI storage: node object, label, node plugin, then what the node shows. */
function iscsiInitiatorStatus(facts: StatusFacts, s: IscsiConfig, node: string): { status: NodeStatus; problems: Problem[] } {
    const status: NodeStatus = { ready: null, label: null, daemonsReady: null, devices: {}, iscsi: null };
    const problems = nodeClusterStatus(facts, "iscsi", s.name, node, status, () => []);
    const answer = facts.iscsi?.get(s.name)?.get(node);
    if (!answer || "error" in answer) {
        problems.push({ kind: "unreachable", node, object: "ssh", message: answer ? answer.error : "not contacted" });
        return { status, problems };
    }
    status.iscsi = answer;
    problems.push(...iscsiNodeProblems(s, node, answer));
    return { status, problems };
}

/**
 * The checks Ceph 20 raises for the storage's AES-128 CSI key, and nothing else (docs/cephfs.md
 * "Keys on Ceph 20"): the one client entity with an AES-128 key and the monmap allowing `aes`.
 */
export const aesCsiKeyChecks = ["AUTH_INSECURE_CLIENT_KEY_TYPE", "AUTH_INSECURE_KEYS_ALLOWED", "AUTH_INSECURE_KEYS_CREATABLE"];

/**
 * Pure: why a HEALTH_WARN is expected, or undefined. Expected when its checks are only those of
 * the CSI user's AES-128 key (aesCsiKeyChecks, the client check counting one entity): a second
 * AES-128 client, or any other check, is a problem.
 */
export function expectedCephWarning(health: Pick<CephHealth, "status" | "checks">): string | undefined {
    const codes = Object.keys(health.checks ?? {});
    const client = health.checks?.AUTH_INSECURE_CLIENT_KEY_TYPE;
    if (health.status !== "HEALTH_WARN" || codes.length === 0 || codes.some((c) => !aesCsiKeyChecks.includes(c)) || (client !== undefined && !/^1 \D/.test(client))) {
        return undefined;
    }
    return 'expected: the CSI user\'s AES-128 key, which every kernel client reads (docs/cephfs.md "Keys on Ceph 20")';
}

function cephProblems(health: CephHealth | { error: string } | undefined, declaredOsds: number): Problem[] {
    if (!health || "error" in health) {
        return [{ kind: "unreachable", node: null, object: "ceph status", message: health ? health.error : "not asked" }];
    }
    const problems: Problem[] = [];
    if (health.status !== "HEALTH_OK" && expectedCephWarning(health) === undefined) {
        problems.push({ kind: "degraded", node: null, object: "ceph health", message: health.status });
    }
    if (health.up < declaredOsds || health.in < declaredOsds) {
        problems.push({ kind: "degraded", node: null, object: "OSDs", message: `${health.up} up and ${health.in} in of ${declaredOsds} declared devices` });
    }
    problems.push(...(health.flags ?? []).map((f): Problem => ({ kind: "degraded", node: null, object: `OSD flag ${f}`, message: osdFlagAdvice(f) })));
    return problems;
}

/**
 * What a set cluster-wide OSD flag means and what to do. The roll sets noout around the OSD
 * restarts (docs/cephfs.md "Rolling restarts behind health gates"); a roll that stopped before its
 * noout-unset gate leaves it set. The program never sets the others.
 */
export function osdFlagAdvice(flag: string): string {
    switch (flag) {
        case "noout":
            return "set: a stopped OSD is never marked out, so its data is not copied elsewhere. A Ceph roll that stopped before its noout-unset gate leaves it set: fix what stopped it and run pulumi up again (the roll clears it), or, once every OSD is up, run `ceph osd unset noout` in an admin pod";
        case "norebalance":
            return "set: data is not moved between OSDs (no rebalancing after a change of OSDs); the program never sets it: once what it was set for is done, run `ceph osd unset norebalance` in an admin pod";
        default:
            return `set (a cluster-wide OSD flag the program never sets): once it is no longer wanted, run \`ceph osd unset ${flag}\` in an admin pod`;
    }
}

/**
 * One problem per OSD that is down or out, on its node (the CRUSH host, which the program names
 * after the node) and named by its device: the declared path whose kernel device it sits on when
 * the node's report maps one (`nodeDevices`: node -> declared path -> kernel path), else the
 * kernel names Ceph reports.
 */
export function cephOsdProblems(osds: CephOsd[], nodeDevices: Record<string, Record<string, string | null | undefined>> = {}): Problem[] {
    return osds
        .filter((o) => !o.up || !o.in)
        .map((o): Problem => {
            const declared = Object.entries(nodeDevices[o.host] ?? {})
                .filter(([, kernel]) => kernel && o.devices.includes(kernel.replace(/^\/dev\//, "")))
                .map(([d]) => d);
            const device = declared.length > 0 ? declared.join(",") : `(${o.devices.join(",") || "device unknown"})`;
            return { kind: "degraded", node: o.host || null, object: `osd.${o.id} ${device}`, message: `${o.up ? "up" : "down"}, ${o.in ? "in" : "out"}` };
        });
}

function storageStatus(facts: StatusFacts, type: StorageType, name: string, isDefault: boolean, hosts: Record<string, string[]> | null, thin: boolean, iscsi?: IscsiConfig): StorageStatus {
    const problems: Problem[] = [];
    let sc: StorageStatus["storageClass"] = null;
    if ("error" in facts.cluster) {
        problems.push({ kind: "unreachable", node: null, object: "cluster", message: facts.cluster.error });
    } else {
        const scResult = storageClassProblems(facts.cluster, name, isDefault);
        sc = scResult.sc;
        problems.push(...scResult.problems);
        problems.push(...podProblems(facts.cluster.pods, driverSelector(type, "controller"), null, `${drivers[type].name} ${drivers[type].controller}`));
        if (type === "nfs") {
            const nodePods = facts.cluster.pods.filter((p) => matches(p, driverSelector("nfs", "nodePlugin")));
            problems.push(...podProblems(nodePods, {}, null, "csi-driver-nfs node"));
        }
    }
    const nodes: Record<string, NodeStatus> = {};
    if (hosts && (type === "lvm" || type === "cephfs")) {
        for (const [node, declared] of Object.entries(hosts)) {
            const r = nodeStorageStatus(facts, type, name, node, declared, thin);
            nodes[node] = r.status;
            problems.push(...r.problems);
        }
    }
    for (const node of iscsi ? iscsi.initiators : []) {
        const r = iscsiInitiatorStatus(facts, iscsi as IscsiConfig, node);
        nodes[node] = r.status;
        problems.push(...r.problems);
    }
    let ceph: CephHealth | null | undefined;
    if (type === "cephfs" && hosts) {
        const health = facts.ceph.get(name);
        ceph = health && !("error" in health) ? { ...health, expected: expectedCephWarning(health) } : null;
        problems.push(...cephProblems(health, Object.values(hosts).flat().length));
        const osds = facts.cephOsds?.get(name);
        if (osds && !("error" in osds)) {
            problems.push(...cephOsdProblems(osds, Object.fromEntries(Object.entries(nodes).map(([n, st]) => [n, st.devices]))));
        }
    }
    return { name, type, healthy: problems.length === 0, problems, nodes, storageClass: sc, ...(type === "cephfs" ? { ceph } : {}) };
}

export function evaluateStatus(facts: StatusFacts): StorageStatus[] {
    const m = facts.model;
    return [
        ...m.lvm.map((s) => storageStatus(facts, "lvm", s.name, s.default, s.hosts, s.thin !== undefined)),
        ...m.cephfs.map((s) => storageStatus(facts, "cephfs", s.name, s.default, s.hosts, false)),
        ...m.iscsi.map((s) => storageStatus(facts, "iscsi", s.name, s.default, null, false, s)),
        ...m.nfs.map((s) => storageStatus(facts, "nfs", s.name, s.default, null, false)),
    ];
}

/** 0 healthy, 1 degraded or drifted, 2 something could not be reached. */
export function exitCodeOf(storages: StorageStatus[]): 0 | 1 | 2 {
    const problems = storages.flatMap((s) => s.problems);
    if (problems.some((p) => p.kind === "unreachable")) {
        return 2;
    }
    return problems.length > 0 ? 1 : 0;
}

/** One line per problem: `fast: node2: /dev/sdc: in VG zcloud-fast but not declared`. */
export function problemLine(storage: string, p: Problem): string {
    return `${storage}: ${p.node ? `${p.node}: ` : ""}${p.object}: ${p.message}`;
}
