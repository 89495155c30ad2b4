/**
 * The typed model of a stack config (DESIGN "Stack config contract"), after validation and defaults.
 * Plain data: no Pulumi objects, so validation is testable without mocks. Secret leaves are plain
 * strings here; the program wraps them with pulumi.secret before they reach any resource.
 */

import type { LeaderElectionConfig } from "./leaderElection";
import type { AlertThresholds, MonitoringConfig } from "./monitoring";
import type { SharableDriverType, SharedResources } from "./sharing";

export type StorageType = "lvm" | "cephfs" | "iscsi" | "nfs";

/** Node name -> device paths exactly as declared. */
export type HostDevices = Record<string, string[]>;

export interface BastionConfig {
    host: string;
    port: number;
    user: string;
    /** Defaults to the node key when absent. Secret. */
    privateKey?: string;
    hostKey?: string;
}

export interface SshConfig {
    user: string;
    port: number;
    /** Secret. Absent when `agent` is true. */
    privateKey?: string;
    /**
     * The key is in the ssh-agent of whoever runs pulumi (the provider reads SSH_AUTH_SOCK): no
     * connection carries a private key. Exactly one of `privateKey` and `agent`.
     */
    agent: boolean;
    /** Node name -> pinned host public key (`ssh-ed25519 AAAA...`). */
    hostKeys: Record<string, string>;
    bastion?: BastionConfig;
}

export interface NodeConfig {
    address: string;
    /** Overrides ssh.port for this node. */
    port?: number;
    /** Overrides ssh.user for this node. */
    user?: string;
}

interface StorageBase {
    /** StorageClass name; unique across all types. */
    name: string;
    default: boolean;
    /** The storage's alert thresholds, resolved; present only while monitoring is on. */
    alerts?: AlertThresholds;
}

export interface ThinConfig {
    overprovisionRatio: number;
    /** Share of the VG the thin pool takes, in percent. */
    poolPercent: number;
    /** Create a VolumeSnapshotClass (needs the snapshot CRDs and controller in the cluster). */
    snapshots: boolean;
}

/**
 * Which devices of an lvm or cephfs storage may be wiped when they carry signatures: `true`, the
 * devices of a node's first apply (the run that creates the storage on that node); a map, per
 * node, the declared devices named, whenever they join; `false`, none.
 */
export type DeviceWipe = boolean | HostDevices;

export interface LvmConfig extends StorageBase {
    hosts: HostDevices;
    wipe: DeviceWipe;
    thin?: ThinConfig;
}

export interface CephFsConfig extends StorageBase {
    hosts: HostDevices;
    /** By hosts, never by disks: default min(3, number of hosts). */
    replicas: number;
    /**
     * The config sets replicas itself. Only then may a change lower an existing pool's copies:
     * the default falls when hosts are removed, and that is refused (docs/cephfs.md "Shrinking").
     */
    replicasConfigured: boolean;
    wipe: DeviceWipe;
    /**
     * "aes256": the storage's keys are new AES-256 ones (a stack made before Ceph 20 has AES-128
     * keys; the rotation is docs/cephfs.md "Key rotation"). Left out: the keys it has.
     */
    keys?: "aes256";
    /**
     * "aes256": the CSI user's key (`client.csi`, the one the nodes' kernel client mounts with) is
     * AES-256 too; every node that mounts the storage's volumes must run Linux 7.0 or later. Left
     * out: AES-128, which every kernel client reads (docs/cephfs.md "Keys on Ceph 20").
     */
    csiKey?: "aes256";
}

export interface ChapConfig {
    username: string;
    /** Secret. */
    password: string;
}

export interface IscsiConfig extends StorageBase {
    portals: string[];
    iqn: string;
    lun: number;
    chap?: ChapConfig;
    initiators: string[];
    wipe: boolean;
}

export type NfsOnDelete = "delete" | "retain" | "archive";

export interface NfsConfig extends StorageBase {
    server: string;
    path: string;
    onDelete: NfsOnDelete;
    mountOptions: string[];
}

export interface StackModel {
    namespace: string;
    /** Absent: owned, the stack deploys the Namespace and the drivers of its types (docs/splitting-stacks.md). */
    sharedResources?: SharedResources;
    /** Types whose driver an owning stack deploys even without a storage of the type. */
    drivers?: SharableDriverType[];
    imageRegistry?: string;
    ssh?: SshConfig;
    nodes: Record<string, NodeConfig>;
    lvm: LvmConfig[];
    cephfs: CephFsConfig[];
    iscsi: IscsiConfig[];
    nfs: NfsConfig[];
    /** Absent: monitoring is off and nothing of it is deployed (docs/monitoring.md). */
    monitoring?: MonitoringConfig;
    /** Absent: every leader-elected controller keeps its own lease timings (README "Stack config"). */
    leaderElection?: LeaderElectionConfig;
}

export const defaultNamespace = "zcloud-storage";
