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

/** The topology key csi-sanlock-lvm's NodeGetInfo reports, its value the node's sanlock host id. */
export const sanlockTopologyKey = "csi-sanlock-lvm/topology";

/**
 * The StorageClass's allowedTopologies for a storage's initiators: the driver's own key, one value
 * per initiator's host id. external-provisioner's requisite terms come from allowedTopologies and
 * must contain the selected node's topology, which is the driver's key only (a node label key
 * there fails every CreateVolume: "topology ... from selected node ... is not in requisite").
 * Undefined when an address is not IPv4 (no host id to name): the provisioner then takes the
 * topology of every node that runs the driver.
 */
export function sanlockAllowedTopologies(addresses: string[]): { matchLabelExpressions: { key: string; values: string[] }[] }[] | undefined {
    const ids = addresses.map(sanlockHostId);
    if (ids.length === 0 || ids.some((id) => id === undefined)) {
        return undefined;
    }
    const values = [...new Set(ids as number[])].sort((a, b) => a - b).map(String);
    return [{ matchLabelExpressions: [{ key: sanlockTopologyKey, values }] }];
}
