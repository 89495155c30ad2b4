import { collectNodeClaims, Finding, listText, NodeClaim, PlannedResource } from "../model";

/**
 * storage-device-single-claim: a (node, device) pair is declared by at most one storage, read from
 * the `storage.zcloud.io/<type>-devices` annotations of all NodePatches of the node. Paths are
 * compared as declared: /dev/sdb and its /dev/disk/by-id name are not known to be one disk here
 * (the node script resolves and refuses that case on the node).
 */
export function checkDeviceSingleClaim(resources: PlannedResource[]): Finding[] {
    const byDevice = new Map<string, { node: string; device: string; claims: NodeClaim[] }>();
    for (const claim of collectNodeClaims(resources)) {
        for (const device of claim.devices) {
            const key = `${claim.node}\u0000${device}`;
            const entry = byDevice.get(key) ?? { node: claim.node, device, claims: [] };
            entry.claims.push(claim);
            byDevice.set(key, entry);
        }
    }

    const findings: Finding[] = [];
    for (const { node, device, claims } of byDevice.values()) {
        if (claims.length < 2) {
            continue;
        }
        const owners = listText(claims.map((c) => `${c.type} '${c.storage}'`));
        findings.push({
            urn: claims[claims.length - 1].urn,
            message:
                `${node} ${device} is claimed by ${owners}: a disk holds one LVM physical volume or one Ceph OSD, ` +
                "so the second storage's disk prep would either refuse it or, with wipe, destroy the first one's data. " +
                `List ${device} on ${node} under one storage only in the stack config.`,
        });
    }
    return findings;
}
