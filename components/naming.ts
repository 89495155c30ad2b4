/**
 * Names shared by the program, the node scripts, the policy pack and the docs
 * (docs/conventions.md). Every resource name carries the storage, the node where there is one,
 * and the role, so a preview reads like a change request.
 */

export type NodeStorageType = "lvm" | "cephfs" | "iscsi";

export const labelDomain = "storage.zcloud.io";

/** Node label that marks a node ready for a storage; its DaemonSets select on it. */
export function storageLabelKey(type: NodeStorageType): string {
    return `${labelDomain}/${type}`;
}

/** Node annotation listing the declared devices a storage holds on the node. */
export function devicesAnnotationKey(type: NodeStorageType): string {
    return `${labelDomain}/${type}-devices`;
}

export function nodeResourceName(storage: string, node: string, role: string): string {
    return `${storage}-${node}-${role}`;
}

/** Volume group of an LVM storage on each of its nodes. */
export function lvmVolumeGroup(storage: string): string {
    return `zcloud-${storage}`;
}

/** Labels every object we create carries, so `kubectl get -l` finds them. */
export function commonLabels(component: string, storage?: string): Record<string, string> {
    return {
        "app.kubernetes.io/managed-by": "zcloud-storage",
        "app.kubernetes.io/part-of": "zcloud-storage",
        "app.kubernetes.io/component": component,
        ...(storage ? { [`${labelDomain}/storage`]: storage } : {}),
    };
}
