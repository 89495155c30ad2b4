/**
 * Pure helpers of a CephFS storage (no Pulumi objects): key encoding, monitor count and placement,
 * replica counts, ceph.conf and ceph-csi config rendering, names. Unit-tested without mocks.
 */
import { cephMajorRelease } from "../images";
import { MonPlacement } from "../naming";

/**
 * Ceph's key types by secret length: 16 bytes AES-128 (CEPH_CRYPTO_AES, type 1, `AQ...==`, 40
 * characters), 32 bytes AES-256 (CEPH_CRYPTO_AES256KRB5, `aes256k`, type 2, `Ag...=`, 60
 * characters; Ceph 20 Tentacle's default, what its `ceph-authtool --gen-print-key` prints).
 */
const cephKeyTypes: Record<number, number> = { 16: 1, 32: 2 };

/**
 * The fixed creation time written into every key we encode, so a key is a pure function of its
 * random bytes (Ceph reads the time but never checks it).
 */
export const cephKeyCreated = { seconds: 0, nanoseconds: 0 };

/**
 * The CSI user's key type (`cephfs[].csiKey`): "aes" (AES-128, the default) is read by every
 * kernel CephFS client; "aes256" (AES-256, `aes256k`) only by Linux 7.0 and later, which must
 * then run on every node that mounts the storage's volumes (docs/cephfs.md "Keys on Ceph 20").
 */
export type CsiKeyType = "aes" | "aes256";

/**
 * How many random bytes a new key of an entity gets with a Ceph image. Daemon and admin keys
 * (mon., client.admin, client.bootstrap-osd): 32 (AES-256) from Tentacle (20) on, whose mons
 * refuse AES-128 keys on a new cluster unless allowed; 16 (AES-128) before, as older releases
 * know no other. The CSI user's key (`client.csi`, mounted by the nodes' kernel client): 16
 * unless `csiKey` is "aes256" (32; the config rules allow that only with Ceph 20 or later).
 */
export function cephKeyBytes(image: string, entity: GeneratedKey, csiKey: CsiKeyType = "aes"): 16 | 32 {
    const release = cephMajorRelease(image);
    if (entity === "csi") {
        return csiKey === "aes256" ? 32 : 16;
    }
    return release >= 20 ? 32 : 16;
}

/**
 * Whether an entity's key comes from its second, 32-byte `RandomBytes` (`<s>-key-<entity>-aes256`):
 * the CSI user's with `csiKey: aes256`, the others with `keys: aes256` (the rotation).
 */
export function usesAes256Bytes(entity: GeneratedKey, flags: { keys?: "aes256"; csiKey?: "aes256" }): boolean {
    return entity === "csi" ? flags.csiKey === "aes256" : flags.keys === "aes256";
}

/**
 * Whether a new cluster's first monmap must allow AES-128 (`aes`) keys beside Ceph 20's
 * `aes256k`: with Ceph 20 or later and an AES-128 CSI key (`ceph-mon-init.sh --allow-aes-keys`).
 * Older releases allow only `aes` anyway and their monmaptool has no cipher option.
 */
export function monmapAllowsAesKeys(image: string, csiKey: CsiKeyType = "aes"): boolean {
    return cephMajorRelease(image) >= 20 && cephKeyBytes(image, "csi", csiKey) === 16;
}

/**
 * A Ceph secret key from 16 or 32 random bytes given as base64: base64 of le16 type (1 = AES-128,
 * 2 = AES-256), le32 created seconds, le32 created nanoseconds, le16 length, then the secret.
 */
export function cephKey(secretBase64: string): string {
    const secret = Buffer.from(secretBase64, "base64");
    const type = cephKeyTypes[secret.length];
    if (type === undefined || secret.toString("base64") !== secretBase64.replace(/\s+/g, "")) {
        throw new Error(`a Ceph key needs exactly 16 (AES-128) or 32 (AES-256) secret bytes in base64, got ${secret.length} bytes`);
    }
    const record = Buffer.alloc(12 + secret.length);
    record.writeUInt16LE(type, 0);
    record.writeUInt32LE(cephKeyCreated.seconds, 2);
    record.writeUInt32LE(cephKeyCreated.nanoseconds, 6);
    record.writeUInt16LE(secret.length, 10);
    secret.copy(record, 12);
    return record.toString("base64");
}

/** The secret bytes of a Ceph key (base64), checking its header: the inverse of cephKey. */
export function cephKeySecret(key: string): string {
    const record = Buffer.from(key, "base64");
    const len = record.length - 12;
    if (len < 0 || cephKeyTypes[len] === undefined || record.readUInt16LE(0) !== cephKeyTypes[len] || record.readUInt16LE(10) !== len) {
        throw new Error("not a Ceph AES-128 or AES-256 key");
    }
    return record.subarray(12).toString("base64");
}

// Object names and the daemon ids they carry live below both this folder and the config's
// collision check (components/naming.ts); re-exported for this folder's modules.
export { MonPlacement, cephNames, deviceSlug, mdsIds, mgrIds, monCount, monPlacement } from "../naming";

/** The entities whose keys the program generates once and keeps in state (as secrets). */
export const generatedKeys = ["mon", "admin", "bootstrap-osd", "csi"] as const;
export type GeneratedKey = (typeof generatedKeys)[number];

/** The Ceph user ceph-csi provisions and mounts with (least privilege, caps of role `csi`). */
export const csiCephUser = "csi";


/**
 * The mons that may start a new cluster (`ceph-mon-init.sh --initial`): the first mon in
 * placement order, alone. Every other mon only ever joins a quorum that answers, so a mon added
 * later (two hosts grown to three) can never make a second cluster with the same fsid; on a new
 * three-host storage b and c join once a is up (their init retries until then).
 */
export function initialMonIds(placement: MonPlacement[]): string[] {
    if (placement.length === 0) {
        throw new Error("a CephFS storage needs at least one mon");
    }
    return [placement[0].id];
}

/** The arguments of a mon's init step: its id, every mon of the config, the initial mons, whether a new monmap allows AES-128 keys. */
export function monInitArgs(id: string, mons: MonAddress[], initial: string[], allowAesKeys = false): string[] {
    return ["--id", id, ...mons.flatMap((m) => ["--mon", `${m.id}=${m.ip}`]), "--initial", initial.join(","), ...(allowAesKeys ? ["--allow-aes-keys"] : [])];
}


/** Pool size: the configured replicas, else min(3, hosts); never more than the hosts. */
export function poolReplicas(hosts: number, replicas?: number): number {
    const size = replicas ?? Math.min(3, hosts);
    if (!Number.isInteger(size) || size < 1 || size > hosts) {
        throw new Error(`replicas ${size} must be an integer from 1 to the number of hosts (${hosts})`);
    }
    return size;
}

export interface MonAddress {
    id: string;
    /** The mon Service's ClusterIP: fixed for the Service's life, so mon addresses never change. */
    ip: string;
}

function bracketed(ip: string): string {
    return ip.includes(":") ? `[${ip}]` : ip;
}

/** `[v2:<ip>:3300,v1:<ip>:6789]` per mon, comma separated (ceph.conf mon_host). */
export function monHost(mons: MonAddress[]): string {
    return mons.map((m) => `[v2:${bracketed(m.ip)}:3300,v1:${bracketed(m.ip)}:6789]`).join(",");
}

/** min_size for a pool of `size` copies: 2 from three copies, else 1 (as ceph-fs.sh sets it). */
export function poolMinSize(size: number): number {
    return size >= 3 ? 2 : 1;
}

/**
 * ceph.conf for daemons and tools: identity, mon addresses and the storage's pool size, never a
 * key. The pool defaults matter for the pools Ceph makes itself (the mgr's `.mgr`): with Ceph's
 * default of 3 copies a one- or two-host storage would keep that pool undersized (one host:
 * inactive), and no OSD could ever be drained (its copies would need 3 hosts).
 */
export function renderCephConf(a: { fsid: string; mons: MonAddress[]; replicas: number }): string {
    return [
        "[global]",
        `fsid = ${a.fsid}`,
        `mon_host = ${monHost(a.mons)}`,
        "auth_cluster_required = cephx",
        "auth_service_required = cephx",
        "auth_client_required = cephx",
        // Clients must prove their global_id on reconnect (CVE-2021-20288); otherwise a new
        // cluster stays in HEALTH_WARN (AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED).
        "auth_allow_insecure_global_id_reclaim = false",
        // Containers log to stderr; pods' logs are the daemons' logs.
        "log_to_file = false",
        "log_to_stderr = true",
        "mon_cluster_log_to_file = false",
        "mon_cluster_log_to_stderr = true",
        // Replicas are placed on distinct hosts (the crush host is the Kubernetes node).
        "osd_crush_chooseleaf_type = 1",
        `osd_pool_default_size = ${a.replicas}`,
        `osd_pool_default_min_size = ${poolMinSize(a.replicas)}`,
        "mon_allow_pool_size_one = true",
        "",
    ].join("\n");
}

export interface CsiCluster {
    /** clusterID the StorageClass names: the cluster's fsid. */
    clusterID: string;
    mons: MonAddress[];
    /** The subvolume group ceph-fs.sh creates and ceph-csi provisions into. */
    subvolumeGroup: string;
}

/** ceph-csi's config.json: one entry per cluster with its msgr1 monitor addresses. */
export function renderCsiConfig(clusters: CsiCluster[]): string {
    const entries = [...clusters]
        .sort((a, b) => a.clusterID.localeCompare(b.clusterID))
        .map((c) => ({
            clusterID: c.clusterID,
            monitors: c.mons.map((m) => `${bracketed(m.ip)}:6789`),
            cephFS: { subvolumeGroup: c.subvolumeGroup },
        }));
    return JSON.stringify(entries, null, 2) + "\n";
}

/** The ceph.conf ceph-csi's pods read: cephx everywhere, no cluster-specific value, no key. */
export const csiCephConf = ["[global]", "auth_cluster_required = cephx", "auth_service_required = cephx", "auth_client_required = cephx", ""].join("\n");

