// Builders for the resources the program registers, in the shape policies receive them.
import type { PlannedResource } from "../../policy/policies";

const PARENT: Record<string, string> = {
    lvm: "zcloud:storage:LvmStorage",
    cephfs: "zcloud:storage:CephFsStorage",
    iscsi: "zcloud:storage:IscsiStorage",
};

export function urnOf(type: string, name: string, parentType?: string): string {
    const qualified = parentType ? `${parentType}$${type}` : type;
    return `urn:pulumi:dev::zcloud-storage::${qualified}::${name}`;
}

function resource(type: string, name: string, props: Record<string, unknown>, parentType?: string): PlannedResource {
    return { type, name, urn: urnOf(type, name, parentType), props };
}

/** The label command `<storage>-<node>-label` of a storage of `type` on `node` with its devices. */
export function nodeLabel(type: "lvm" | "cephfs" | "iscsi", storage: string, node: string, devices: string[]): PlannedResource {
    return resource(
        "command:local:Command",
        `${storage}-${node}-label`,
        { create: "kubectl apply", stdin: nodeManifest(node, { [`storage.zcloud.io/${type}`]: storage }, { [`storage.zcloud.io/${type}-devices`]: devices.join(",") }) },
        PARENT[type],
    );
}

/** The JSON Node a label command applies (its stdin). */
export function nodeManifest(node: string | undefined, labels: Record<string, string>, annotations: Record<string, string>): string {
    return JSON.stringify({ apiVersion: "v1", kind: "Node", metadata: { ...(node === undefined ? {} : { name: node }), labels, annotations } });
}

export interface ContainerSpec {
    name: string;
    image?: unknown;
    privileged?: boolean;
    env?: Array<Record<string, unknown>>;
}

function container(c: ContainerSpec): Record<string, unknown> {
    return {
        name: c.name,
        ...(c.image !== undefined ? { image: c.image } : {}),
        ...(c.privileged !== undefined ? { securityContext: { privileged: c.privileged } } : {}),
        ...(c.env ? { env: c.env } : {}),
    };
}

export interface PodOptions {
    namespace?: unknown;
    containers: ContainerSpec[];
    initContainers?: ContainerSpec[];
    ephemeralContainers?: ContainerSpec[];
    hostPID?: boolean;
    hostNetwork?: boolean;
}

function podSpec(o: PodOptions): Record<string, unknown> {
    return {
        ...(o.hostPID !== undefined ? { hostPID: o.hostPID } : {}),
        ...(o.hostNetwork !== undefined ? { hostNetwork: o.hostNetwork } : {}),
        containers: o.containers.map(container),
        ...(o.initContainers ? { initContainers: o.initContainers.map(container) } : {}),
        ...(o.ephemeralContainers ? { ephemeralContainers: o.ephemeralContainers.map(container) } : {}),
    };
}

type WorkloadKind = "DaemonSet" | "Deployment" | "StatefulSet" | "Job" | "Pod";

export function workload(kind: WorkloadKind, name: string, o: PodOptions): PlannedResource {
    const type = kind === "Job" ? "kubernetes:batch/v1:Job" : kind === "Pod" ? "kubernetes:core/v1:Pod" : `kubernetes:apps/v1:${kind}`;
    const metadata = o.namespace === undefined ? { name } : { name, namespace: o.namespace };
    const spec = kind === "Pod" ? podSpec(o) : { template: { metadata: {}, spec: podSpec(o) } };
    return resource(type, name, { metadata, spec });
}

export function configMap(name: string, data?: Record<string, unknown>, binaryData?: Record<string, unknown>): PlannedResource {
    return resource("kubernetes:core/v1:ConfigMap", name, {
        metadata: { name, namespace: "zcloud-storage" },
        ...(data ? { data } : {}),
        ...(binaryData ? { binaryData } : {}),
    });
}

export function storageClass(storage: string, isDefault: boolean | string | undefined): PlannedResource {
    const annotations =
        isDefault === undefined ? undefined : { "storageclass.kubernetes.io/is-default-class": String(isDefault) };
    return resource("kubernetes:storage.k8s.io/v1:StorageClass", `${storage}-storageclass`, {
        metadata: { name: storage, ...(annotations ? { annotations } : {}) },
        provisioner: "topolvm.io",
    });
}

/** The remote command beside a storage's label on a node: `-disks` (lvm, cephfs) or `-login` (iscsi). */
export function nodeCommand(storage: string, node: string, connection: unknown, type: "lvm" | "cephfs" | "iscsi" = "lvm"): PlannedResource {
    const role = type === "iscsi" ? "login" : "disks";
    return resource("command:remote:Command", `${storage}-${node}-${role}`, { connection, create: "sh -c ..." }, PARENT[type]);
}

/** The engine's marker for a string not known during preview. */
export const UNKNOWN_STRING = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
