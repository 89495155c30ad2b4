/**
 * Names shared by the program, the node scripts, the policy pack and the docs
 * (docs/conventions.md). Every resource name carries the storage, the node where there is one,
 * and the role, so a preview reads like a change request.
 */

import { createHash } from "crypto";

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

// CephFS: which daemons a storage runs and the names of its objects. The program registers them,
// and config validation (components/config/collisions.ts) checks that no two storages or devices
// derive one name.

/** Monitors: one for one or two hosts (two cannot outvote a failure), three from three hosts. */
export function monCount(hosts: number): number {
    if (!Number.isInteger(hosts) || hosts < 1) {
        throw new Error(`a CephFS storage needs at least one host, got ${hosts}`);
    }
    return hosts >= 3 ? 3 : 1;
}

export interface MonPlacement {
    /** Mon id: a, b, c (stable; the store and Service are named after it). */
    id: string;
    /** The node the mon is pinned to; its store lives there. */
    node: string;
}

/**
 * Which nodes hold the mons: the first hosts in name order. Name order, not config order, so
 * reordering the config never moves a mon (its store is on its node).
 */
export function monPlacement(hosts: string[]): MonPlacement[] {
    const sorted = [...new Set(hosts)].sort();
    return sorted.slice(0, monCount(sorted.length)).map((node, i) => ({ id: String.fromCharCode(97 + i), node }));
}

/** Manager daemons: active + standby where there are two hosts, else one. */
export function mgrIds(hosts: number): string[] {
    return hosts >= 2 ? ["a", "b"] : ["a"];
}

/** Metadata servers: one active, one standby. */
export const mdsIds = ["a", "b"];

/** Names of the Kubernetes objects of one storage (metadata names, in the storage namespace). */
export function cephNames(storage: string) {
    const base = `ceph-${storage}`;
    return {
        conf: `${base}-conf`,
        keys: `${base}-keys`,
        osdKeys: `${base}-osd-keys`,
        csiSecret: `${base}-csi`,
        mon: (id: string) => `${base}-mon-${id}`,
        mgr: (id: string) => `${base}-mgr-${id}`,
        mds: (id: string) => `${base}-mds-${id}`,
        admin: `${base}-admin`,
        filesystem: `${base}-fs`,
        /** Monitoring on: the Job that turns the managers' prometheus module on, and the managers' metrics Service. */
        metrics: `${base}-metrics`,
        /**
         * OSD workload of (node, device): keyed by the declared path, so removing any device
         * removes exactly its workload. A renamed path is a new workload; its old drain keeps
         * the OSD when the disk is still declared (cephfs-osd-remove.sh).
         */
        osd: (node: string, device: string) => `${base}-osd-${node}-${deviceSlug(device)}`.slice(0, 63).replace(/-+$/, ""),
        /** The prepare Job of (node, device)'s OSD (osds.ts): the workload's name with `prep-`. */
        osdPrepare: (node: string, device: string) => `${base}-osd-prep-${node}-${deviceSlug(device)}`.slice(0, 63).replace(/-+$/, ""),
        /** Host directory of the storage's daemon state. */
        hostDir: `/var/lib/zcloud/ceph/${storage}`,
    };
}

/** A device path as a name part: `/dev/disk/by-id/wwn-0x5000c5` -> `wwn-0x5000c5`, `/dev/sdb` -> `sdb`. */
export function deviceSlug(device: string): string {
    const last = device.split("/").filter((p) => p !== "").pop() ?? device;
    const slug = last.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "");
    if (slug.length <= 24) {
        return slug;
    }
    // Long by-id names keep their end (the serial) and a hash of the whole path: still unique.
    return `${slug.slice(-17).replace(/^-+/, "")}-${createHash("sha256").update(device).digest("hex").slice(0, 6)}`;
}
