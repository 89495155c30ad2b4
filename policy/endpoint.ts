// SSH endpoints, spelled one way so that two spellings of one machine compare equal. Shared with
// the stack config's same-endpoint rule; it lives in the pack because the pack is published on its
// own and imports nothing from outside its folder. Pure: no DNS, no Pulumi.
import * as net from "net";

/** The port an SSH connection without one uses. */
export const DEFAULT_SSH_PORT = 22;

/**
 * One spelling per address, to compare endpoints: hostnames in lower case without a final dot,
 * IPv6 in its compressed form, IPv4-mapped IPv6 as IPv4. Names that resolve to one machine are
 * not resolved here (no DNS at plan time).
 */
export function canonicalAddress(address: string): string {
    if (net.isIPv6(address)) {
        // A zone (fe80::1%eth0) is not part of URL syntax: compress the address, keep the zone.
        const [ip, zone] = address.split("%");
        const compressed = new URL(`http://[${ip}]/`).hostname.slice(1, -1) + (zone === undefined ? "" : `%${zone}`);
        const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(compressed);
        if (mapped) {
            const [hi, lo] = [parseInt(mapped[1], 16), parseInt(mapped[2], 16)];
            return [hi >> 8, hi & 255, lo >> 8, lo & 255].join(".");
        }
        return compressed;
    }
    return address.toLowerCase().replace(/\.$/, "");
}

/**
 * `host:port` of a connection, the address canonical and an IPv6 one in brackets
 * (`[fe80::1%eth0]:22`); a bracketed address as some programs write it is read the same.
 */
export function sshEndpoint(host: string, port: number = DEFAULT_SSH_PORT): string {
    const bare = /^\[(.*)\]$/.exec(host.trim())?.[1] ?? host.trim();
    const address = canonicalAddress(bare);
    return `${net.isIPv6(address) ? `[${address}]` : address}:${port}`;
}
