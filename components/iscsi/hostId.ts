import * as net from "net";

/**
 * The sanlock host id csi-sanlock-lvm's lock daemon derives from a node's IPv4 address
 * (`--lock-host-addr`): the low 11 bits, modulo 1999, plus one. Two initiators with the same id
 * would take each other's leases, so a plan refuses them.
 */
export function sanlockHostId(address: string): number | undefined {
    if (net.isIPv4(address)) {
        const n = address.split(".").reduce((acc, part) => (acc << 8) | Number(part), 0) >>> 0;
        return ((n & 0x7ff) % 1999) + 1;
    }
    return undefined;
}

/** Node pairs whose addresses give one sanlock host id, as messages; [] when all differ. */
export function hostIdClashes(addresses: Record<string, string>): string[] {
    const byId = new Map<number, string>();
    const clashes: string[] = [];
    for (const [node, address] of Object.entries(addresses)) {
        const id = sanlockHostId(address);
        if (id === undefined) {
            continue;
        }
        const other = byId.get(id);
        if (other) {
            clashes.push(`${other} and ${node} get the same sanlock host id ${id} from their addresses`);
        } else {
            byId.set(id, node);
        }
    }
    return clashes;
}
