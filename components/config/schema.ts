import { z } from "zod";
import * as f from "./formats";
import { defaultNamespace } from "./model";
import { alertsSchema, monitoringSchema } from "./monitoring";
import { leaderElectionSchema } from "./leaderElection";
import { driversSchema, sharedResourcesSchema } from "./sharing";
import { didYouMean } from "./suggest";

/**
 * The shape of every key of the stack config, with defaults and one message per rule.
 * Cross-key rules (node references, device claims, exclusivity) live in rules.ts.
 */

const check = (ok: (v: string) => boolean, message: string) => z.string().refine(ok, { message });

/** A string checked by a function that words its own problem. */
const described = (problem: (v: string) => string | undefined) =>
    z.string().superRefine((v, ctx) => {
        const message = problem(v);
        if (message !== undefined) {
            ctx.addIssue({ code: "custom", message });
        }
    });


export const storageName = check(
    f.isDnsLabel,
    "must be a lowercase RFC 1123 name (a-z, 0-9 and '-', starting and ending with a letter or digit, at most 63 characters), e.g. local-fast",
);

/**
 * What is wrong with an address that is IPv4, IPv6 or a hostname by form, or undefined: the
 * unspecified address names no machine (a connection to it reaches the local host), and a zone
 * names an interface of one machine, which ssh_config (discover, status) cannot take.
 */
function reachableAddressProblem(address: string): string | undefined {
    if (f.isUnspecifiedAddress(address)) {
        return `${JSON.stringify(address)} is the unspecified address, which names no machine (a connection to it reaches whichever host makes it); give the machine's own address`;
    }
    const zone = f.ipv6Zone(address);
    if (zone !== undefined) {
        return `${JSON.stringify(address)} carries an IPv6 zone (%${zone}): a zone names a network interface of one machine, so it does not hold for every machine that uses the address; use a global or unique-local address, or a hostname`;
    }
    return undefined;
}

/** What is wrong with a node or bastion address, or undefined when it is fine. */
export function addressProblem(address: string): string | undefined {
    return f.isAddress(address) ? reachableAddressProblem(address) : "must be an IPv4 or IPv6 address or a hostname, e.g. 10.0.0.11";
}

const address = described(addressProblem);

const port = z
    .number()
    .refine(f.isPort, { message: "must be a TCP port, a whole number from 1 to 65535" });

/** What is wrong with a device path, or undefined when it is fine. */
export function devicePathProblem(path: string): string | undefined {
    const bytes = Buffer.byteLength(path, "utf8");
    if (bytes > f.pathMax) {
        return `is ${bytes} bytes long; a path has at most ${f.pathMax} (PATH_MAX)`;
    }
    if (f.longestComponentBytes(path) > f.nameMax) {
        return `has a name of ${f.longestComponentBytes(path)} bytes between slashes; a file name has at most ${f.nameMax} (NAME_MAX)`;
    }
    if (/[\s,]/.test(path)) {
        return `${JSON.stringify(path)} contains a blank or a comma, which separate devices in the node's device list; use the disk's /dev/disk/by-id or /dev/disk/by-path link`;
    }
    if (!f.isDevicePath(path)) {
        return "must be an absolute device path under /dev, e.g. /dev/disk/by-id/wwn-0x5000c500a1b2c3d4";
    }
    const linkDir = f.contentLinkDir(path);
    if (linkDir !== undefined) {
        return `${JSON.stringify(path)} is a /dev/disk/${linkDir} link, which names what is on the disk, not the disk: it vanishes when the device is wiped and every later apply would fail; use the disk's /dev/disk/by-id or /dev/disk/by-path link`;
    }
    return undefined;
}

const secretText = z.string().min(1, { message: "must not be empty" });

const sshPublicKey = check(
    f.isSshPublicKey,
    "must be an OpenSSH public key line, e.g. \"ssh-ed25519 AAAA...\" (ssh-keyscan -t ed25519 <node> prints it)",
);

const userName = check(f.isUserName, "must be a POSIX user name, e.g. root or ops");

const hosts = z
    .record(z.string(), z.array(described(devicePathProblem)).min(1, { message: "must list at least one device" }))
    .refine((h) => Object.keys(h).length > 0, { message: "must name at least one node with its devices" });

const isDefault = z.boolean().default(false);
/** iSCSI: one LUN, wiped (if at all) only by the run that creates the storage's VG on it. */
const wipe = z.boolean().default(false);
/**
 * lvm, cephfs: `true` licenses the devices of a node's first apply; a map names, per node, the
 * declared devices that may be wiped whenever they join (rules.ts checks they are declared).
 */
const deviceWipe = z
    .union([z.boolean(), z.record(z.string(), z.array(described(devicePathProblem)).min(1, { message: "must list at least one device (or leave the node out)" }))], {
        error: (issue) =>
            issue.code === "invalid_union"
                ? "must be true, false or a map of node to the declared devices that may be wiped, e.g. { node2: [/dev/sdc] }"
                : undefined,
    })
    .default(false);

const bastion = z.strictObject({
    host: address,
    port: port.default(22),
    user: userName.optional(),
    privateKey: secretText.optional(),
    hostKey: sshPublicKey.optional(),
});

export const sshSchema = z.strictObject({
    user: userName.default("root"),
    port: port.default(22),
    /** The key as a Pulumi secret; or `agent: true` (rules.ts: exactly one of the two). */
    privateKey: secretText.optional(),
    /** The key is in the ssh-agent of whoever runs pulumi (SSH_AUTH_SOCK): no key in the state. */
    agent: z.boolean({ error: "must be true (the key is in ssh-agent) or false" }).default(false),
    hostKeys: z.record(z.string(), sshPublicKey).default({}),
    bastion: bastion.optional(),
});

export const nodeSchema = z.strictObject({
    address,
    port: port.optional(),
    user: userName.optional(),
});

const thinSchema = z.strictObject({
    overprovisionRatio: z
        .number()
        .min(1, { message: "must be at least 1 (1 means no overprovisioning)" })
        .max(100, { message: "must be at most 100" })
        .default(4),
    poolPercent: z
        .number()
        .int({ message: "must be a whole number of percent" })
        .min(1, { message: "must be from 1 to 100 (percent of the volume group)" })
        .max(100, { message: "must be from 1 to 100 (percent of the volume group)" })
        .default(90),
    snapshots: z.boolean().default(false),
});

export const lvmSchema = z.strictObject({
    name: storageName,
    default: isDefault,
    hosts,
    wipe: deviceWipe,
    thin: thinSchema.optional(),
    alerts: alertsSchema.optional(),
});

export const cephfsSchema = z.strictObject({
    name: storageName,
    default: isDefault,
    hosts,
    replicas: z
        .number()
        .int({ message: "must be a whole number" })
        .min(1, { message: "must be at least 1" })
        .optional(),
    wipe: deviceWipe,
    keys: z
        .enum(["aes256"], { message: 'must be "aes256" (new AES-256 keys for the storage, docs/cephfs.md "Key rotation"), or left out' })
        .optional(),
    csiKey: z
        .enum(["aes256"], {
            message: 'must be "aes256" (an AES-256 key for the CSI user, read only by Linux 7.0 and later on every node that mounts the volumes, docs/cephfs.md "Keys on Ceph 20"), or left out (AES-128)',
        })
        .optional(),
    alerts: alertsSchema.optional(),
});

const portal = described((v) => {
    const parsed = f.parsePortal(v);
    return parsed === undefined ? "must be host:port or [ipv6]:port, e.g. 10.0.0.50:3260" : reachableAddressProblem(parsed.host);
});

const chapSchema = z.strictObject({
    username: check(
        f.isChapUserName,
        "must be a CHAP user name: 1 to 255 printable characters without blanks or line breaks (a line break would add lines to the node's iSCSI record)",
    ).optional(),
    password: secretText
        .refine((v) => v === "" || !/[\x00-\x1f\x7f]/.test(v), {
            message: "must be one line without control characters (a line break would cut it short, or add lines to the node's iSCSI record)",
        })
        .optional(),
});

export const iscsiSchema = z.strictObject({
    name: storageName,
    default: isDefault,
    portals: z.array(portal).min(1, { message: "must list at least one portal, e.g. [10.0.0.50:3260]" }),
    iqn: check(
        f.isIscsiName,
        "must be an iSCSI name (RFC 3720): iqn.YYYY-MM.reverse.domain[:identifier] of lowercase letters, digits, '-', '.' and ':' without '..' (e.g. iqn.2003-01.org.linux-iscsi.san:sn.1234), eui.<16 hex digits> or naa.<16 or 32 hex digits>",
    ),
    lun: z
        .number()
        .int({ message: "must be a whole number" })
        .min(0, { message: "must be from 0 to 16383" })
        .max(16383, { message: "must be from 0 to 16383" })
        .default(0),
    chap: chapSchema.optional(),
    initiators: z.array(z.string()).min(1, { message: "must list at least one node that logs in to the target" }),
    wipe,
    alerts: alertsSchema.optional(),
});

/** What is wrong with one NFS mount option, or undefined when it is fine. */
export function nfsMountOptionProblem(option: string): string | undefined {
    const m = /^([a-z_]+)(?:=([^\s,=]+))?$/.exec(option);
    if (!m) {
        return `"${option}" is not a mount option: write one option per item as name or name=value, without spaces or commas`;
    }
    const [, name, value] = m;
    if (!f.knownNfsMountOptions.has(name)) {
        return `unknown NFS mount option "${name}"${didYouMean(name, [...f.knownNfsMountOptions])}`;
    }
    if ((name === "nfsvers" || name === "vers") && (value === undefined || !f.nfsVersions.has(value))) {
        return `${name} must be one of ${[...f.nfsVersions].join(", ")}`;
    }
    return undefined;
}

/** What is wrong with an NFS server address, or undefined when it is fine. */
export function nfsServerProblem(server: string): string | undefined {
    if (f.isAddress(server)) {
        return reachableAddressProblem(server);
    }
    const bracketed = /^\[(.*)\]$/.exec(server);
    if (bracketed && f.isAddress(bracketed[1])) {
        return `write the IPv6 address without brackets: ${bracketed[1]}`;
    }
    return "must be an IPv4 or IPv6 address or a hostname, e.g. 10.0.0.60";
}

/** What is wrong with an export path, or undefined when it is fine. */
export function nfsPathProblem(path: string): string | undefined {
    if (!f.isAbsolutePath(path)) {
        return "must be an absolute path on the server, e.g. /exports/k8s";
    }
    if (path.includes("#")) {
        return '"#" cannot appear in an NFS path: csi-driver-nfs separates server, path and directory with # in volume IDs';
    }
    return undefined;
}

export const nfsSchema = z.strictObject({
    name: storageName,
    default: isDefault,
    server: described(nfsServerProblem),
    path: described(nfsPathProblem),
    onDelete: z
        .enum(["delete", "retain", "archive"], {
            message: "must be one of delete, retain, archive (archive keeps the data in an archived- directory)",
        })
        .default("archive"),
    mountOptions: z.array(described(nfsMountOptionProblem)).default([]),
    alerts: alertsSchema.optional(),
});

const namespace = storageName.refine((v) => !f.systemNamespaces.includes(v), {
    message: `must not be a system namespace (${f.systemNamespaces.join(", ")}): the storage's privileged pods and keys need a namespace of their own, e.g. ${defaultNamespace}`,
});

export const stackSchema = z.strictObject({
    namespace: namespace.default(defaultNamespace),
    imageRegistry: check(
        f.isImageRegistry,
        "must be a registry host with optional port and path, without scheme, e.g. registry.local:5000 or registry.local/mirror",
    ).optional(),
    ssh: sshSchema.optional(),
    nodes: z.record(z.string(), nodeSchema).default({}),
    lvm: z.array(lvmSchema).default([]),
    cephfs: z.array(cephfsSchema).default([]),
    iscsi: z.array(iscsiSchema).default([]),
    nfs: z.array(nfsSchema).default([]),
    sharedResources: sharedResourcesSchema.optional(),
    drivers: driversSchema.optional(),
    monitoring: monitoringSchema.optional(),
    leaderElection: leaderElectionSchema.optional(),
});

export type StackInput = z.input<typeof stackSchema>;
export type StackParsed = z.output<typeof stackSchema>;
