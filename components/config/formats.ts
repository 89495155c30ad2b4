import * as net from "net";
import { canonicalAddress } from "../../policy/endpoint";

/** Formats of single values, as pure predicates; messages live next to the schema. */

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** RFC 1123 label: what a StorageClass, namespace and our resource names need. */
export function isDnsLabel(value: string): boolean {
    return value.length <= 63 && dnsLabel.test(value);
}

/**
 * Namespaces every cluster has and shares with other workloads: never the storage namespace,
 * whose privileged pods and Ceph keys need one of their own (the policy pack keeps the same list).
 */
export const systemNamespaces: readonly string[] = ["default", "kube-node-lease", "kube-public", "kube-system"];

/** Kubernetes node names are RFC 1123 subdomains. */
export function isDnsSubdomain(value: string): boolean {
    return value.length <= 253 && value.split(".").every(isDnsLabel);
}

const hostnameLabel = /^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?$/;

/** A Kubernetes label value: empty, or up to 63 of [A-Za-z0-9_.-], alphanumeric at both ends. */
export function isLabelValue(value: string): boolean {
    return value === "" || (value.length <= 63 && /^[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$/.test(value));
}

/** A Kubernetes label key: an optional DNS subdomain prefix and `/`, then a name like a label value. */
export function isLabelKey(value: string): boolean {
    const slash = value.lastIndexOf("/");
    const [prefix, name] = slash < 0 ? [undefined, value] : [value.slice(0, slash), value.slice(slash + 1)];
    return name !== "" && isLabelValue(name) && (prefix === undefined || isDnsSubdomain(prefix));
}

export function isHostname(value: string): boolean {
    if (value.length === 0 || value.length > 253) {
        return false;
    }
    const labels = value.replace(/\.$/, "").split(".");
    // A name made only of digits and dots is a mistyped IPv4 address, not a hostname.
    if (labels.every((l) => /^[0-9]+$/.test(l))) {
        return false;
    }
    return labels.every((l) => l.length <= 63 && hostnameLabel.test(l));
}

/** IPv4, IPv6 (bare, not bracketed) or a hostname. */
export function isAddress(value: string): boolean {
    return net.isIP(value) !== 0 || isHostname(value);
}

/** Endpoint spelling, shared with the policy pack (which is published on its own). */
export { canonicalAddress };

/** `0.0.0.0`, `::` in any spelling, `::ffff:0.0.0.0`: an address that names no machine. */
export function isUnspecifiedAddress(address: string): boolean {
    return net.isIP(address) !== 0 && ["0.0.0.0", "::"].includes(canonicalAddress(address));
}

/** The zone of a scoped IPv6 address (`eth0` of `fe80::1%eth0`), or undefined. */
export function ipv6Zone(address: string): string | undefined {
    return net.isIPv6(address) && address.includes("%") ? address.slice(address.indexOf("%") + 1) : undefined;
}

/**
 * An absolute path under /dev with no empty, `.` or `..` segments, of characters a device link
 * uses; no blank or comma (the node's device list, a node annotation the OSD drain reads,
 * separates devices with commas).
 */
export function isDevicePath(value: string): boolean {
    if (!value.startsWith("/dev/") || value.endsWith("/")) {
        return false;
    }
    const segments = value.slice(1).split("/");
    return segments.every((s) => s !== "" && s !== "." && s !== ".." && /^[A-Za-z0-9._:@+=-]+$/.test(s));
}

/** Linux limits: a file name (NAME_MAX) and a path without its final NUL (PATH_MAX - 1), in bytes. */
export const nameMax = 255;
export const pathMax = 4095;

/**
 * udev links that name a filesystem or partition, not the disk: a wipe removes what they name,
 * so the link vanishes and every later apply fails to find the device.
 */
export const contentLinkDirs: readonly string[] = ["by-uuid", "by-label", "by-partuuid", "by-partlabel"];

/** The content link directory of a device path (`by-uuid`), or undefined. */
export function contentLinkDir(value: string): string | undefined {
    return contentLinkDirs.find((dir) => value.startsWith(`/dev/disk/${dir}/`));
}

/** The longest `/`-separated component of a path, in bytes. */
export function longestComponentBytes(value: string): number {
    return Math.max(...value.split("/").map((s) => Buffer.byteLength(s, "utf8")));
}

/**
 * A CHAP user name as open-iscsi stores it: printable, without blanks (a line break would add
 * lines such as `node.session.auth.authmethod = None` to the node's iSCSI record), at most 255.
 */
export function isChapUserName(value: string): boolean {
    return value.length >= 1 && value.length <= 255 && !/[\s\x00-\x1f\x7f-\x9f]/.test(value);
}

/** Kernel names like /dev/sdb or /dev/nvme0n1 change across reboots; by-id names do not. */
export function isUnstableDeviceName(value: string): boolean {
    return /^\/dev\/(sd[a-z]+|vd[a-z]+|xvd[a-z]+|hd[a-z]+|nvme\d+n\d+)$/.test(value);
}

/**
 * The whole disk a partition's path names by the kernel's and udev's naming, or undefined for a
 * path that names no partition by its name: `/dev/sdb1` -> `/dev/sdb`, `/dev/nvme0n1p2` ->
 * `/dev/nvme0n1`, `/dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part1` -> its disk's link. Two names
 * of one disk (`/dev/sdb` and a by-id link) are not related here: the node scripts compare
 * devices by number.
 */
export function diskOfPartition(path: string): string | undefined {
    // udev's links: `<disk link>-part<N>`; a multipath map's partitions the same (kpartx)
    const link = /^(\/dev\/(?:disk\/by-[^/]+|mapper)\/.+)-part[1-9]\d*$/.exec(path);
    if (link) {
        return link[1];
    }
    // kernel names: a digit after a disk name ending in a letter, `p<N>` after one ending in a digit
    const byLetter = /^(\/dev\/(?:sd|vd|xvd|hd)[a-z]+)[1-9]\d*$/.exec(path);
    const byDigit = /^(\/dev\/(?:nvme\d+n\d+|mmcblk\d+|loop\d+|md\d+|nbd\d+|rbd\d+|zd\d+))p[1-9]\d*$/.exec(path);
    return (byLetter ?? byDigit)?.[1];
}

/** An absolute POSIX path without `.`/`..` segments or doubled slashes. */
export function isAbsolutePath(value: string): boolean {
    if (!value.startsWith("/")) {
        return false;
    }
    if (value === "/") {
        return true;
    }
    const segments = value.slice(1).replace(/\/$/, "").split("/");
    return segments.every((s) => s !== "" && s !== "." && s !== ".." && !/[\s,]/.test(s));
}

/**
 * iSCSI names (RFC 3720): `iqn.YYYY-MM.reverse.domain[:identifier]`, `eui.` + 16 hex digits,
 * `naa.` + 16 or 32 hex digits.
 */
export function isIscsiName(value: string): boolean {
    // RFC 3720 3.2.6.2: after stringprep, lowercase letters, digits, '-', '.' and ':' only. A
    // name becomes a directory under /etc/iscsi/nodes and a script argument: no '..', '/', '$'.
    return (
        (/^iqn\.\d{4}-(0[1-9]|1[0-2])\.[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:[a-z0-9.:-]+)?$/.test(value) && !value.includes("..")) ||
        /^eui\.[0-9A-Fa-f]{16}$/.test(value) ||
        /^naa\.([0-9A-Fa-f]{16}|[0-9A-Fa-f]{32})$/.test(value)
    ) && value.length <= 223;
}

export interface Portal {
    host: string;
    port: number;
}

/** `host:port` or `[ipv6]:port`; undefined when malformed. */
export function parsePortal(value: string): Portal | undefined {
    const match = /^\[([^\]]+)\]:(\d+)$/.exec(value) ?? /^([^:[\]]+):(\d+)$/.exec(value);
    if (!match) {
        return undefined;
    }
    const [, host, portText] = match;
    const port = Number(portText);
    const bracketed = value.startsWith("[");
    const hostOk = bracketed ? net.isIPv6(host) : net.isIPv4(host) || isHostname(host);
    return hostOk && isPort(port) ? { host, port } : undefined;
}

export function isPort(value: number): boolean {
    return Number.isInteger(value) && value >= 1 && value <= 65535;
}

/** OpenSSH public key line: `<type> <base64>[ comment]`. */
export function isSshPublicKey(value: string): boolean {
    return /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]+={0,3}( .*)?$/.test(
        value.trim(),
    );
}

/** A POSIX user name as useradd accepts it. */
export function isUserName(value: string): boolean {
    return /^[a-z_][a-z0-9_-]{0,31}\$?$/.test(value);
}

/** `host[:port][/path]` of a registry mirror, without scheme or trailing slash. */
export function isImageRegistry(value: string): boolean {
    const [hostPort, ...path] = value.split("/");
    const m = /^([^:]+)(?::(\d+))?$/.exec(hostPort);
    if (!m || !(isHostname(m[1]) || net.isIPv4(m[1])) || (m[2] !== undefined && !isPort(Number(m[2])))) {
        return false;
    }
    return path.every((p) => /^[a-z0-9]+([._-][a-z0-9]+)*$/.test(p));
}

/** NFS mount options csi-driver-nfs passes to mount.nfs; unknown names are likely typos. */
export const knownNfsMountOptions: ReadonlySet<string> = new Set([
    "nfsvers", "vers", "minorversion", "proto", "port", "mountport", "mountproto", "timeo", "retrans",
    "rsize", "wsize", "hard", "soft", "softerr", "intr", "nointr", "ac", "noac", "actimeo", "acregmin",
    "acregmax", "acdirmin", "acdirmax", "sec", "lookupcache", "lock", "nolock", "local_lock", "resvport",
    "noresvport", "nconnect", "fsc", "nofsc", "cto", "nocto", "sharecache", "nosharecache", "tcp", "udp",
    "rdma", "max_connect", "clientaddr", "retry", "bg", "fg", "ro", "rw", "noatime", "nodiratime",
    "relatime", "nosuid", "nodev", "noexec", "xprtsec", "write",
]);

/** Values a versioned option may take. */
export const nfsVersions: ReadonlySet<string> = new Set(["3", "4", "4.0", "4.1", "4.2"]);

/**
 * kubernetes:kubeconfig as the Kubernetes provider reads it: the file's content when it looks like
 * a kubeconfig (several lines, JSON, or an apiVersion line), else the path of the file.
 */
export function isKubeconfigContent(kubeconfig: string): boolean {
    return /\n/.test(kubeconfig) || /^\s*[{]/.test(kubeconfig) || /^\s*apiVersion\s*:/.test(kubeconfig);
}

/** An iSCSI name as initiators compare it (RFC 3722 stringprep folds case). */
export function canonicalIscsiName(name: string): string {
    return name.toLowerCase();
}

/** One LUN of one target, whatever portal reaches it: `iscsi <iqn> lun <n>`. */
export function iscsiLunKey(iqn: string, lun: number): string {
    return `iscsi ${canonicalIscsiName(iqn)} lun ${lun}`;
}

export interface SharedDevice {
    /** One key per device, whichever node or path names it. */
    key: string;
    /** What it is, for messages: `LUN 0 of iSCSI target iqn...`, `a device-mapper (multipath) device`. */
    what: string;
}

/**
 * A device path that names a device several machines can see (a SAN LUN, a multipath map, a
 * world-wide name), or undefined for a path that names a node's own disk. Such a path on two
 * nodes is one device: the second node would adopt or wipe the first one's volume group. A
 * partition of a LUN counts as the LUN. A node-local device-mapper device goes by its
 * `/dev/disk/by-id/dm-uuid-...` link, which differs between nodes.
 */
export function sharedDevice(path: string): SharedDevice | undefined {
    const iscsi = /^\/dev\/disk\/by-path\/.*-iscsi-(.+)-lun-(\d+)(?:-part\d+)?$/.exec(path);
    if (iscsi) {
        return { key: iscsiLunKey(iscsi[1], Number(iscsi[2])), what: `LUN ${Number(iscsi[2])} of iSCSI target ${canonicalIscsiName(iscsi[1])}` };
    }
    const fc = /^\/dev\/disk\/by-path\/.*-fc-(0x[0-9a-fA-F]+)-lun-(\d+)(?:-part\d+)?$/.exec(path);
    if (fc) {
        return { key: `fc ${fc[1].toLowerCase()} lun ${Number(fc[2])}`, what: `LUN ${Number(fc[2])} of Fibre Channel port ${fc[1].toLowerCase()}` };
    }
    // Not /dev/dm-N: kernel numbers are per node, so one on two nodes is two devices.
    if (/^\/dev\/(mapper\/|disk\/by-id\/dm-)/.test(path)) {
        return { key: `path ${path}`, what: "a device-mapper (multipath) device" };
    }
    if (/^\/dev\/disk\/by-id\/(wwn-|scsi-3|nvme-eui\.)/.test(path)) {
        return { key: `path ${path.toLowerCase()}`, what: "a device with a world-wide name" };
    }
    return undefined;
}
