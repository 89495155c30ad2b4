import { BlockList, isIPv6 } from "net";
import { connectionOf } from "./connection";
import { nodeOf } from "./describe";
import { PlannedResource } from "./model";

const loopbackRanges = new BlockList();
loopbackRanges.addSubnet("127.0.0.0", 8, "ipv4");
loopbackRanges.addAddress("::1", "ipv6");

/**
 * 127.0.0.0/8, ::1 (any spelling, IPv4-mapped forms included), `localhost` and names under
 * `.localhost` (RFC 6761: they always resolve to loopback).
 */
export function isLoopbackAddress(address: string): boolean {
    const name = address.toLowerCase().replace(/\.$/, "");
    if (name === "localhost" || name.endsWith(".localhost")) {
        return true;
    }
    const ip = name.replace(/^\[(.*)\]$/, "$1").replace(/%.*$/, "");
    try {
        return loopbackRanges.check(ip, isIPv6(ip) ? "ipv6" : "ipv4");
    } catch {
        return false; // not an IP address: a host name
    }
}

/**
 * One advisory per node that a node command reaches at a loopback address. Not an error: a
 * test sandbox runs its nodes' sshd on loopback with distinct ports. In production it means the
 * disk commands run on the machine that runs `pulumi up` (or, through a bastion, on the bastion).
 */
export function loopbackAdvisories(resources: PlannedResource[]): string[] {
    const lines = new Set<string>();
    for (const r of resources) {
        // Every node has a command named after it (disks, login); an iSCSI VG command reuses its
        // anchor node's login connection.
        const node = nodeOf(r);
        const host = connectionOf(r)?.host;
        if (node && typeof host === "string" && isLoopbackAddress(host)) {
            lines.add(
                `node ${node} is reached at ${host}, a loopback address: its disk commands run on the machine that runs pulumi up (through a bastion: on the bastion), not on a cluster node; right only for a test sandbox`,
            );
        }
    }
    return [...lines].sort();
}
