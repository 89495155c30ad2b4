// Shapes and helpers shared by the policies. Pure: no Pulumi runtime, no policy server.
import { DEFAULT_SSH_PORT, sshEndpoint } from "./endpoint";

/** A resource as a policy sees it: the program's inputs (or, in a stack policy, its outputs). */
export interface PlannedResource {
    type: string;
    name: string;
    urn: string;
    props: Record<string, unknown> | undefined;
}

export type EnforcementLevel = "mandatory" | "advisory" | "disabled";

/** One reported problem. `urn` is absent when it concerns the stack as a whole. */
export interface Violation {
    policy: string;
    enforcementLevel: EnforcementLevel;
    urn?: string;
    message: string;
}

/** What a stack policy reports before the enforcement level is attached. */
export interface Finding {
    urn?: string;
    message: string;
}

/** Parameters of the pack (see the configSchema in policies.ts). */
export interface PolicyParams {
    /** The namespace where privileged and host-namespace pods are allowed. */
    namespace: string;
    /** Stack names (`*` for any characters) that storage-monitoring-on counts as production. */
    productionStacks: readonly string[];
}

export const DEFAULT_NAMESPACE = "zcloud-storage";
/** Stack names the pack treats as production unless its config names others. */
export const DEFAULT_PRODUCTION_STACKS: readonly string[] = ["prod", "prod-*", "*-prod", "production", "production-*", "*-production"];

/** A pattern is a stack name in which `*` stands for any run of characters (none too). */
const PATTERN = /^[A-Za-z0-9_.*-]{1,100}$/;

/** What is wrong with a productionStacks parameter, or undefined when it is usable. */
export function productionStacksParamProblem(value: unknown): string | undefined {
    if (!Array.isArray(value)) {
        return "must be a list of stack names or patterns (`*` for any characters)";
    }
    const bad = value.filter((p) => typeof p !== "string" || !PATTERN.test(p));
    if (bad.length > 0) {
        return `${bad.map((p) => JSON.stringify(p)).join(", ")}: not a stack name or pattern (letters, digits, '-', '_', '.', and '*' for any characters)`;
    }
    return undefined;
}


/**
 * Namespaces every cluster has, shared with other workloads: never the storage namespace (the
 * stack config refuses them too; the pack is copied on its own, so it keeps its own list).
 */
export const SYSTEM_NAMESPACES: readonly string[] = ["default", "kube-node-lease", "kube-public", "kube-system"];

/** What is wrong with a storage-namespace parameter, or undefined when it is usable. */
export function namespaceParamProblem(value: unknown): string | undefined {
    if (typeof value !== "string" || value === "") {
        return "must be a non-empty string";
    }
    if (SYSTEM_NAMESPACES.includes(value)) {
        return `"${value}" is a system namespace (${SYSTEM_NAMESPACES.join(", ")}); privileged storage pods need a namespace of their own, e.g. ${DEFAULT_NAMESPACE}`;
    }
    return undefined;
}

export const DEFAULT_PARAMS: PolicyParams = { namespace: DEFAULT_NAMESPACE, productionStacks: DEFAULT_PRODUCTION_STACKS };

/** What is wrong with a parameter's value, or undefined when it is usable (or no such parameter). */
export function paramProblem(name: string, value: unknown): string | undefined {
    if (name === "namespace") return namespaceParamProblem(value);
    if (name === "productionStacks") return productionStacksParamProblem(value);
    return undefined;
}

/** The opaque value the offline plan puts where a Pulumi secret was. */
export const SECRET_MARKER = "[secret]";

// Sentinels the Pulumi engine uses for values not known during preview (one per value kind).
// The SDK serializes an unknown as the string one; the policy SDK keeps all seven.
const UNKNOWN_SENTINELS: ReadonlySet<string> = new Set([
    "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",
    "3eeb2bf0-c639-47a8-9e75-3b44932eb421",
    "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
    "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",
    "030794c1-ac77-496b-92df-f27374a8bd58",
    "e48ece36-62e2-4504-bad9-02848725956a",
    "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",
]);

/** What the offline plan puts where a value is not known during preview. */
export const PLAN_UNKNOWN_MARKER = "[unknown]";

/** The marker policy/index.ts substitutes for a value the policy server reports as unknown. */
export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

/** True for a value not known yet (preview): an engine sentinel or the offline plan's "[unknown]". */
export function isUnknown(value: unknown): boolean {
    return typeof value === "string" && (UNKNOWN_SENTINELS.has(value) || value === PLAN_UNKNOWN_MARKER);
}

/** A known string, or undefined (missing, unknown, or another type). */
export function str(value: unknown): string | undefined {
    return typeof value === "string" && !isUnknown(value) ? value : undefined;
}

/** A known plain object, or undefined. */
export function obj(value: unknown): Record<string, unknown> | undefined {
    return value !== null && typeof value === "object" && !Array.isArray(value)
        ? (value as Record<string, unknown>)
        : undefined;
}

/** A known array, or an empty one. */
export function arr(value: unknown): unknown[] {
    return Array.isArray(value) ? value : [];
}

/** Reads a nested field; undefined as soon as a step is missing or unknown. */
export function dig(value: unknown, ...path: string[]): unknown {
    let cur: unknown = value;
    for (const key of path) {
        const o = obj(cur);
        if (!o) {
            return undefined;
        }
        cur = o[key];
    }
    return cur;
}

/** "kubernetes:apps/v1:DaemonSet" -> "DaemonSet". */
export function kindOf(type: string): string {
    const i = type.lastIndexOf(":");
    return i >= 0 ? type.slice(i + 1) : type;
}

/** Lists names as "a, b and c". */
export function listText(items: string[]): string {
    if (items.length <= 1) {
        return items.join("");
    }
    return `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`;
}

// ---- Kubernetes workloads -------------------------------------------------------------------

export const WORKLOAD_TYPES: ReadonlySet<string> = new Set([
    "kubernetes:apps/v1:DaemonSet",
    "kubernetes:apps/v1:Deployment",
    "kubernetes:apps/v1:StatefulSet",
    "kubernetes:apps/v1:ReplicaSet",
    "kubernetes:core/v1:Pod",
    "kubernetes:batch/v1:Job",
    "kubernetes:batch/v1:CronJob",
]);

/** The pod spec of a workload, or undefined if the resource has none (or it is not known). */
export function podSpecOf(resource: PlannedResource): Record<string, unknown> | undefined {
    const props = resource.props;
    switch (resource.type) {
        case "kubernetes:core/v1:Pod":
            return obj(dig(props, "spec"));
        case "kubernetes:batch/v1:CronJob":
            return obj(dig(props, "spec", "jobTemplate", "spec", "template", "spec"));
        default:
            return WORKLOAD_TYPES.has(resource.type) ? obj(dig(props, "spec", "template", "spec")) : undefined;
    }
}

export interface ContainerRef {
    /** "container", "init container" or "ephemeral container". */
    role: string;
    name: string;
    spec: Record<string, unknown>;
}

/** Every container of a pod spec: containers, initContainers and ephemeralContainers. */
export function containersOf(podSpec: Record<string, unknown> | undefined): ContainerRef[] {
    if (!podSpec) {
        return [];
    }
    const out: ContainerRef[] = [];
    const lists: Array<[string, string]> = [
        ["initContainers", "init container"],
        ["containers", "container"],
        ["ephemeralContainers", "ephemeral container"],
    ];
    for (const [field, role] of lists) {
        arr(podSpec[field]).forEach((c, i) => {
            const spec = obj(c);
            if (spec) {
                out.push({ role, name: str(spec.name) ?? `#${i}`, spec });
            }
        });
    }
    return out;
}

/** "DaemonSet 'topolvm-lvmd'" — the kind and the Pulumi name, as the preview shows it. */
export function describe(resource: PlannedResource): string {
    return `${kindOf(resource.type)} '${resource.name}'`;
}

// ---- Node labels ------------------------------------------------------------------------------

/** A node label is a local command that applies the Node on its stdin (JSON, kind Node). */
export const NODE_LABEL_TYPE = "command:local:Command";
export const STORAGE_TYPES = ["lvm", "cephfs", "iscsi"] as const;
export type StorageType = (typeof STORAGE_TYPES)[number];
export const LABEL_PREFIX = "storage.zcloud.io/";

/** A storage on a node as one label command declares it. */
export interface NodeClaim {
    node: string;
    type: StorageType;
    storage: string;
    /** Declared device paths (from the `<type>-devices` annotation). */
    devices: string[];
    urn: string;
    name: string;
}

/**
 * The Node a label command applies (its stdin: a JSON object of kind Node), or undefined for any
 * other resource or a stdin that is not known or not such an object.
 */
export function nodeLabelObject(resource: PlannedResource): Record<string, unknown> | undefined {
    if (resource.type !== NODE_LABEL_TYPE) {
        return undefined;
    }
    const text = str(dig(resource.props, "stdin"));
    if (text === undefined) {
        return undefined;
    }
    try {
        const node = obj(JSON.parse(text));
        return node?.kind === "Node" ? node : undefined;
    } catch {
        return undefined;
    }
}

/**
 * Reads the claims a label command makes: for each storage type, the label names the storage and
 * the annotation lists the devices. Names follow `<storage>-<node>-label`, which fills in the node
 * or the storage when the other fields are not known.
 */
export function nodeClaimsOf(resource: PlannedResource): NodeClaim[] {
    const manifest = nodeLabelObject(resource);
    if (manifest === undefined) {
        return [];
    }
    const labels = obj(dig(manifest, "metadata", "labels")) ?? {};
    const annotations = obj(dig(manifest, "metadata", "annotations")) ?? {};
    let node = str(dig(manifest, "metadata", "name"));
    const claims: NodeClaim[] = [];
    for (const type of STORAGE_TYPES) {
        const labelled = str(labels[`${LABEL_PREFIX}${type}`]);
        const deviceList = str(annotations[`${LABEL_PREFIX}${type}-devices`]);
        if (labelled === undefined && deviceList === undefined) {
            continue;
        }
        if (node === undefined && labelled !== undefined) {
            const prefix = `${labelled}-`;
            if (resource.name.startsWith(prefix) && resource.name.endsWith("-label")) {
                node = resource.name.slice(prefix.length, -"-label".length) || undefined;
            }
        }
        if (node === undefined) {
            continue;
        }
        let storage = labelled;
        if (storage === undefined) {
            const suffix = `-${node}-label`;
            storage = resource.name.endsWith(suffix) ? resource.name.slice(0, -suffix.length) : resource.name;
        }
        const devices = (deviceList ?? "")
            .split(",")
            .map(normalizeDevice)
            .filter((d) => d !== "");
        claims.push({ node, type, storage, devices: [...new Set(devices)], urn: resource.urn, name: resource.name });
    }
    return claims;
}

/** Trims and collapses repeated and trailing slashes, so "/dev//sdb/" and "/dev/sdb" compare equal. */
export function normalizeDevice(path: string): string {
    const p = path.trim().replace(/\/{2,}/g, "/");
    return p.length > 1 ? p.replace(/\/$/, "") : p;
}

/**
 * Claims of all label commands, one per (node, type, storage). Should two resources claim the same
 * (a hand-made stack), the one named `<storage>-<node>-label` wins, else the first.
 */
export function collectNodeClaims(resources: PlannedResource[]): NodeClaim[] {
    const byKey = new Map<string, NodeClaim>();
    for (const resource of resources) {
        for (const claim of nodeClaimsOf(resource)) {
            const key = `${claim.node}\u0000${claim.type}\u0000${claim.storage}`;
            const seen = byKey.get(key);
            if (!seen) {
                byKey.set(key, claim);
            } else {
                const own = `${claim.storage}-${claim.node}-label`;
                const merged = [...new Set([...seen.devices, ...claim.devices])];
                byKey.set(key, claim.name === own && seen.name !== own ? { ...claim, devices: merged } : { ...seen, devices: merged });
            }
        }
    }
    return [...byKey.values()];
}

// ---- Machines ---------------------------------------------------------------------------------

export const REMOTE_COMMAND_TYPE = "command:remote:Command";

/** `urn:...::parent$child::name` -> `parent` (the type chain of the resource's parents). */
function parentTypes(urn: string): string {
    const qualified = urn.split("::")[2] ?? "";
    const i = qualified.lastIndexOf("$");
    return i >= 0 ? qualified.slice(0, i) : "";
}

/**
 * The SSH endpoint a remote command connects to, `host:port` canonical (see sshEndpoint), with
 * ` via <bastion>` when it goes through one (an address behind a bastion is the bastion's view).
 * Undefined where the policy cannot see it: the connection is an opaque secret or not known yet.
 * Only the address and port are read; credentials stay where they are.
 */
export function commandEndpoint(resource: PlannedResource): string | undefined {
    const connection = obj(resource.props?.connection);
    const host = str(connection?.host);
    if (!connection || host === undefined) {
        return undefined;
    }
    const port = portOf(connection.port);
    if (port === undefined) {
        return undefined;
    }
    const proxy = obj(connection.proxy);
    if (proxy === undefined) {
        return sshEndpoint(host, port);
    }
    const bastion = str(proxy.host);
    const bastionPort = portOf(proxy.port);
    return bastion === undefined || bastionPort === undefined ? undefined : `${sshEndpoint(host, port)} via ${sshEndpoint(bastion, bastionPort)}`;
}

/** A known port; the provider's default where none is given. */
function portOf(value: unknown): number | undefined {
    if (value === undefined || value === null) {
        return DEFAULT_SSH_PORT;
    }
    return typeof value === "number" && Number.isInteger(value) ? value : undefined;
}

/** Roles of the remote command a storage runs beside a node's label: disk prep, iSCSI login. */
const NODE_COMMAND_ROLES = ["disks", "login"];

/**
 * The endpoint of the node a claim's label command labels: the remote command of the same storage
 * and node (`<storage>-<node>-disks` or `-login` beside `<storage>-<node>-label`, under the same
 * parents), or undefined when there is none or its connection cannot be seen.
 */
function claimEndpoints(claims: NodeClaim[], resources: PlannedResource[]): Map<NodeClaim, string> {
    const commands = new Map<string, PlannedResource>();
    for (const r of resources) {
        if (r.type === REMOTE_COMMAND_TYPE) {
            commands.set(`${parentTypes(r.urn)}\u0000${r.name}`, r);
        }
    }
    const out = new Map<NodeClaim, string>();
    for (const claim of claims) {
        const stem = `${claim.storage}-${claim.node}`;
        for (const role of NODE_COMMAND_ROLES) {
            const command = commands.get(`${parentTypes(claim.urn)}\u0000${stem}-${role}`);
            const endpoint = command && commandEndpoint(command);
            if (endpoint !== undefined) {
                out.set(claim, endpoint);
                break;
            }
        }
    }
    return out;
}

/** The claims on one machine: node names that are one node, or that reach one SSH endpoint. */
export interface Machine {
    /** Node names, in the order their claims come. */
    nodes: string[];
    /** The endpoints seen for it (empty where no connection could be seen). */
    endpoints: string[];
    claims: NodeClaim[];
}

/**
 * Claims grouped by machine. A node name is one machine; two names whose remote commands reach
 * one SSH endpoint are one machine too (one machine under two node names would otherwise claim
 * one disk twice, or serve lvm and cephfs, unseen). Where no connection can be seen (an opaque
 * secret in the offline plan, an unknown during preview) the node name alone decides.
 */
export function claimsByMachine(resources: PlannedResource[]): Machine[] {
    const claims = collectNodeClaims(resources);
    const endpoints = claimEndpoints(claims, resources);
    // Union-find over "node:<name>" and "endpoint:<host:port>" keys.
    const up = new Map<string, string>();
    const find = (k: string): string => {
        const p = up.get(k) ?? k;
        if (p === k) {
            return k;
        }
        const root = find(p);
        up.set(k, root);
        return root;
    };
    const union = (a: string, b: string) => {
        const [ra, rb] = [find(a), find(b)];
        if (ra !== rb) {
            up.set(rb, ra);
        }
    };
    for (const claim of claims) {
        const endpoint = endpoints.get(claim);
        if (endpoint !== undefined) {
            union(`node:${claim.node}`, `endpoint:${endpoint}`);
        }
    }
    const machines = new Map<string, Machine>();
    for (const claim of claims) {
        const root = find(`node:${claim.node}`);
        const m = machines.get(root) ?? { nodes: [], endpoints: [], claims: [] };
        const endpoint = endpoints.get(claim);
        if (!m.nodes.includes(claim.node)) {
            m.nodes.push(claim.node);
        }
        if (endpoint !== undefined && !m.endpoints.includes(endpoint)) {
            m.endpoints.push(endpoint);
        }
        m.claims.push(claim);
        machines.set(root, m);
    }
    return [...machines.values()];
}

