import { cephMajorRelease, images } from "../images";
import { nameCollisions } from "./collisions";
import { ConfigIssue, pulumiCommand } from "./errors";
import * as f from "./formats";
import { StackParsed } from "./schema";
import { didYouMean } from "./suggest";

/**
 * Rules across keys of a shape-valid config. Each returns its issues; none stops the others, so a
 * config's errors are reported together.
 */

export interface RuleContext {
    /** Every name under nodes, including entries that failed their own checks. */
    declaredNodes: ReadonlySet<string>;
    /** The config has an `ssh` key, valid or not (an invalid one is reported by itself). */
    sshDeclared?: boolean;
    /** The stack's name, for the fix commands messages give (`pulumi config set -s <stack>`). */
    stack?: string;
}

type Rule = (c: StackParsed, ctx: RuleContext) => ConfigIssue[];

interface StorageRef {
    type: "lvm" | "cephfs" | "iscsi" | "nfs";
    index: number;
    name: string;
    default: boolean;
}

const nodeTypes = ["lvm", "cephfs"] as const;

function storages(c: StackParsed): StorageRef[] {
    return (["lvm", "cephfs", "iscsi", "nfs"] as const).flatMap((type) =>
        c[type].map((s, index) => ({ type, index, name: s.name, default: s.default })),
    );
}

const label = (s: { type: string; index: number; name: string }) => `${s.type}[${s.index}] (${s.name})`;

export const uniqueStorageNames: Rule = (c) => {
    const seen = new Map<string, StorageRef>();
    const issues: ConfigIssue[] = [];
    for (const s of storages(c)) {
        const first = seen.get(s.name);
        if (first) {
            issues.push({
                path: `${s.type}[${s.index}].name`,
                message: `"${s.name}" is already used by ${first.type}[${first.index}]; StorageClass names must be unique across all storage types`,
            });
        } else {
            seen.set(s.name, s);
        }
    }
    return issues;
};

export const singleDefault: Rule = (c) => {
    const defaults = storages(c).filter((s) => s.default);
    return defaults.slice(1).map((s) => ({
        path: `${s.type}[${s.index}].default`,
        message: `only one StorageClass can be the default and ${label(defaults[0])} already is; set default: false on one of them`,
    }));
};

export const nodeNames: Rule = (c) =>
    Object.keys(c.nodes)
        .filter((n) => !f.isDnsSubdomain(n))
        .map((n) => ({
            path: `nodes.${n}`,
            message: "must be the Kubernetes node name (lowercase RFC 1123: a-z, 0-9, '-' and '.'), as `kubectl get nodes` shows it",
        }));

function unknownNode(c: StackParsed, ctx: RuleContext, path: string, node: string): ConfigIssue[] {
    // An entry that failed its own checks is reported there, not again as missing.
    if (Object.hasOwn(c.nodes, node) || ctx.declaredNodes.has(node)) {
        return [];
    }
    return [
        {
            path,
            message: `${node} is not in zcloud-storage:nodes${didYouMean(node, Object.keys(c.nodes))}; add it there with its SSH address`,
        },
    ];
}

export const knownNodes: Rule = (c, ctx) => [
    ...nodeTypes.flatMap((type) =>
        c[type].flatMap((s, i) => Object.keys(s.hosts).flatMap((n) => unknownNode(c, ctx, `${type}[${i}].hosts.${n}`, n))),
    ),
    ...c.iscsi.flatMap((s, i) => s.initiators.flatMap((n, j) => unknownNode(c, ctx, `iscsi[${i}].initiators[${j}]`, n))),
    ...Object.keys(c.ssh?.hostKeys ?? {}).flatMap((n) => unknownNode(c, ctx, `ssh.hostKeys.${n}`, n)),
];

export const sshWhenNodesAreUsed: Rule = (c, ctx) => {
    const users = (["lvm", "cephfs", "iscsi"] as const).filter((t) => c[t].length > 0);
    if (c.ssh || ctx.sshDeclared || users.length === 0) {
        return [];
    }
    return [
        {
            path: "ssh",
            message: `is required because ${users.join(", ")} storages prepare nodes over SSH; set ssh.privateKey with: ${pulumiCommand("config set", ctx.stack, "--secret --path ssh.privateKey < key")} (or ssh.agent: true when the key is in ssh-agent)`,
        },
    ];
};

const keySources = (stack: string | undefined) =>
    `set exactly one of ssh.privateKey (the key as a Pulumi secret: ${pulumiCommand("config set", stack, "--secret --path ssh.privateKey < key")}) and ssh.agent: true (the key in the ssh-agent of whoever runs pulumi)`;

/** The SSH key comes from exactly one place: the stack's secret, or the agent. */
export const sshKeySource: Rule = (c, ctx) => {
    if (!c.ssh || (c.ssh.privateKey !== undefined) !== c.ssh.agent) {
        return [];
    }
    return c.ssh.agent
        ? [{ path: "ssh.agent", message: `is true and ssh.privateKey is set too; ${keySources(ctx.stack)}` }]
        : [{ path: "ssh.privateKey", message: `is required unless ssh.agent is true; ${keySources(ctx.stack)}` }];
};

/** A device is claimed once per node across all storages, and never twice in one list. */
export const devicesClaimedOnce: Rule = (c) => {
    const claims = new Map<string, string>();
    const issues: ConfigIssue[] = [];
    for (const type of nodeTypes) {
        c[type].forEach((s, i) => {
            for (const [node, devices] of Object.entries(s.hosts)) {
                devices.forEach((device, j) => {
                    const key = `${node}\0${device}`;
                    const owner = claims.get(key);
                    const here = `${type}[${i}] (${s.name})`;
                    if (owner) {
                        issues.push({
                            path: `${type}[${i}].hosts.${node}[${j}]`,
                            message:
                                owner === here
                                    ? `${device} is listed twice for ${node}`
                                    : `${device} on ${node} is already claimed by ${owner}; a device belongs to one storage`,
                        });
                    } else {
                        claims.set(key, here);
                    }
                });
            }
        });
    }
    return issues;
};

/**
 * A disk and a partition of it on one node (in one storage or two): preparing the disk wipes
 * its partition table, and the partition with it, so the run would fail halfway.
 */
export const noDiskWithItsPartition: Rule = (c) => {
    const claims = new Map<string, string>();
    for (const type of nodeTypes) {
        c[type].forEach((s, i) => {
            for (const [node, devices] of Object.entries(s.hosts)) {
                devices.forEach((device, j) => claims.set(`${node}\0${device}`, `${type}[${i}].hosts.${node}[${j}]`));
            }
        });
    }
    const issues: ConfigIssue[] = [];
    for (const [key, where] of claims) {
        const [node, device] = key.split("\0");
        const disk = f.diskOfPartition(device);
        const diskWhere = disk === undefined ? undefined : claims.get(`${node}\0${disk}`);
        if (diskWhere) {
            issues.push({
                path: where,
                message: `${device} is a partition of ${disk}, which ${diskWhere} claims on ${node} too; preparing the disk would wipe its partition table and this partition with it, so list either the disk or its partitions`,
            });
        }
    }
    return issues;
};

/**
 * Two iSCSI storages on one LUN of one target (whatever portals or IQN case they write) would
 * each create, adopt or wipe the shared volume group on it.
 */
export const iscsiLunsClaimedOnce: Rule = (c) => {
    const owner = new Map<string, string>();
    const issues: ConfigIssue[] = [];
    c.iscsi.forEach((s, i) => {
        const key = f.iscsiLunKey(s.iqn, s.lun);
        const earlier = owner.get(key);
        if (earlier) {
            issues.push({
                path: `iscsi[${i}].lun`,
                message: `LUN ${s.lun} of ${f.canonicalIscsiName(s.iqn)} is already the LUN of ${earlier}; two storages on one LUN would each create, adopt or wipe its shared volume group, so give each storage its own LUN`,
            });
        } else {
            owner.set(key, `iscsi[${i}] (${s.name})`);
        }
    });
    return issues;
};

/**
 * A device several machines can see (an iSCSI or FC LUN, a multipath map, a world-wide name)
 * belongs to one node of one lvm or cephfs storage, and never to a LUN an iscsi storage manages:
 * a second node would adopt the first one's volume group, or wipe it.
 */
export const sharedDevicesClaimedOnce: Rule = (c) => {
    const owner = new Map<string, { claim: string; node?: string }>();
    c.iscsi.forEach((s, i) => owner.set(f.iscsiLunKey(s.iqn, s.lun), { claim: `iscsi[${i}] (${s.name}) holds its shared volume group on` }));
    const issues: ConfigIssue[] = [];
    for (const type of nodeTypes) {
        c[type].forEach((s, i) => {
            for (const [node, devices] of Object.entries(s.hosts)) {
                devices.forEach((device, j) => {
                    const shared = f.sharedDevice(device);
                    const path = `${type}[${i}].hosts.${node}[${j}]`;
                    const earlier = shared && owner.get(shared.key);
                    if (!shared) {
                        return;
                    } else if (!earlier) {
                        owner.set(shared.key, { claim: `${path} already claims on ${node}`, node });
                    } else if (earlier.node !== node) {
                        // The same node twice is devicesClaimedOnce's to report.
                        issues.push({
                            path,
                            message: `${device} is ${shared.what}, which ${earlier.claim}; a device that several machines see belongs to one node's volume group or OSD, or this node would adopt or wipe that data (an iscsi storage shares a LUN between nodes safely)`,
                        });
                    }
                });
            }
        });
    }
    return issues;
};

/** A node serves at most one of lvm/cephfs, and at most one storage of each type. */
export const nodeExclusive: Rule = (c) => {
    const issues: ConfigIssue[] = [];
    const diskOwner = new Map<string, string>();
    for (const type of nodeTypes) {
        c[type].forEach((s, i) => {
            for (const node of Object.keys(s.hosts)) {
                const owner = diskOwner.get(node);
                if (owner) {
                    issues.push({
                        path: `${type}[${i}].hosts.${node}`,
                        message: owner.startsWith(`${type} `)
                            ? `${node} already serves ${owner}; a node is in at most one ${type} storage`
                            : `${node} already serves ${owner}; a node serves at most one of lvm and cephfs (an LVM volume group and Ceph OSDs would compete for its disks)`,
                    });
                } else {
                    diskOwner.set(node, `${type} storage ${s.name}`);
                }
            }
        });
    }
    const initiatorOwner = new Map<string, string>();
    c.iscsi.forEach((s, i) => {
        s.initiators.forEach((node, j) => {
            const owner = initiatorOwner.get(node);
            if (owner === s.name) {
                issues.push({ path: `iscsi[${i}].initiators[${j}]`, message: `${node} is listed twice` });
            } else if (owner) {
                issues.push({
                    path: `iscsi[${i}].initiators[${j}]`,
                    message: `${node} already serves iscsi storage ${owner}; a node is in at most one iscsi storage`,
                });
            } else {
                initiatorOwner.set(node, s.name);
            }
        });
    });
    return issues;
};

/**
 * Two node entries that reach one SSH endpoint are one machine under two names: each storage
 * would see "its own" node, so one disk could be claimed twice and node exclusivity bypassed.
 */
export const distinctSshEndpoints: Rule = (c) => {
    const seen = new Map<string, string>();
    const issues: ConfigIssue[] = [];
    for (const [name, node] of Object.entries(c.nodes)) {
        const port = node.port ?? c.ssh?.port ?? 22;
        const endpoint = `${f.canonicalAddress(node.address)} port ${port}`;
        const earlier = seen.get(endpoint);
        if (earlier) {
            issues.push({
                path: `nodes.${name}.address`,
                message: `${node.address} reaches the same SSH endpoint as nodes.${earlier} (${endpoint}); one machine under two node names could have one disk claimed twice, so give each node its own address`,
            });
        } else {
            seen.set(endpoint, name);
        }
    }
    return issues;
};

export const cephReplicas: Rule = (c) =>
    c.cephfs.flatMap((s, i) => {
        const hostCount = Object.keys(s.hosts).length;
        if (s.replicas === undefined || s.replicas <= hostCount) {
            return [];
        }
        return [
            {
                path: `cephfs[${i}].replicas`,
                message: `${s.replicas} replicas need ${s.replicas} hosts but ${hostCount} ${hostCount === 1 ? "is" : "are"} listed; Ceph places replicas on different hosts, so add hosts or lower replicas`,
            },
        ];
    });

/** `keys: aes256` and `csiKey: aes256` need a Ceph image that knows AES-256 keys (Tentacle 20 or later). */
export function cephKeysForImage(image: string): Rule {
    return (c) =>
        cephMajorRelease(image) >= 20
            ? []
            : c.cephfs.flatMap((s, i) =>
                  (["keys", "csiKey"] as const)
                      .filter((k) => s[k] !== undefined)
                      .map((k) => ({ path: `cephfs[${i}].${k}`, message: `aes256 needs Ceph 20 or later, but the program ships ${image}, whose Ceph knows only AES-128 keys` })),
              );
}

/** `ceph-<name>-mon-<id>` Services (DNS-1035 labels, 63 characters at most) leave 52 for the name. */
export const cephfsNameLength: Rule = (c) =>
    c.cephfs.flatMap((s, i) =>
        s.name.length <= 52
            ? []
            : [
                  {
                      path: `cephfs[${i}].name`,
                      message: `is ${s.name.length} characters; a cephfs name has at most 52, because its mon Services are named ceph-<name>-mon-<id> (at most 63)`,
                  },
              ],
    );

export const chapPairs: Rule = (c) =>
    c.iscsi.flatMap((s, i) => {
        if (!s.chap || (s.chap.username !== undefined) === (s.chap.password !== undefined)) {
            return [];
        }
        const missing = s.chap.username === undefined ? "username" : "password";
        return [
            {
                path: `iscsi[${i}].chap.${missing}`,
                message: `is missing; CHAP needs both username and password (or leave chap out for a target without authentication)`,
            },
        ];
    });

/** A wipe map names only devices the storage declares on that node: it can never widen a claim. */
export const wipeDevicesDeclared: Rule = (c) =>
    nodeTypes.flatMap((type) =>
        c[type].flatMap((s, i) => {
            if (typeof s.wipe === "boolean") {
                return [];
            }
            return Object.entries(s.wipe).flatMap(([node, devices]): ConfigIssue[] => {
                if (!Object.hasOwn(s.hosts, node)) {
                    return [{ path: `${type}[${i}].wipe.${node}`, message: `${node} is not under ${type}[${i}].hosts; wipe names only devices the storage declares` }];
                }
                return devices.flatMap((device, j) =>
                    s.hosts[node].includes(device)
                        ? []
                        : [{ path: `${type}[${i}].wipe.${node}[${j}]`, message: `${device} is not declared under ${type}[${i}].hosts.${node}; wipe names only devices the storage declares` }],
                );
            });
        }),
    );

export const allRules: readonly Rule[] = [
    uniqueStorageNames,
    singleDefault,
    nodeNames,
    knownNodes,
    sshWhenNodesAreUsed,
    sshKeySource,
    devicesClaimedOnce,
    noDiskWithItsPartition,
    iscsiLunsClaimedOnce,
    sharedDevicesClaimedOnce,
    nodeExclusive,
    cephReplicas,
    cephfsNameLength,
    cephKeysForImage(images.ceph),
    chapPairs,
    distinctSshEndpoints,
    nameCollisions,
    wipeDevicesDeclared,
];

/** Advice that does not stop a run. */
export function configWarnings(c: StackParsed): ConfigIssue[] {
    const warnings: ConfigIssue[] = [];
    for (const type of nodeTypes) {
        c[type].forEach((s, i) => {
            for (const [node, devices] of Object.entries(s.hosts)) {
                devices.forEach((device, j) => {
                    if (f.isUnstableDeviceName(device)) {
                        warnings.push({
                            path: `${type}[${i}].hosts.${node}[${j}]`,
                            message: `${device} is a kernel name that can change across reboots; the node command reports its /dev/disk/by-id name, prefer that in the config`,
                        });
                    }
                });
            }
        });
    }
    const usedNodes = new Set([...nodeTypes.flatMap((t) => c[t].flatMap((s) => Object.keys(s.hosts))), ...c.iscsi.flatMap((s) => s.initiators)]);
    if (c.ssh) {
        for (const node of usedNodes) {
            if (Object.hasOwn(c.nodes, node) && !Object.hasOwn(c.ssh.hostKeys, node)) {
                warnings.push({
                    path: `ssh.hostKeys.${node}`,
                    message: `not pinned: the SSH connection to ${node} accepts any host key; pin it with the output of ssh-keyscan -t ed25519 ${c.nodes[node].address}`,
                });
            }
        }
    }
    return warnings;
}
