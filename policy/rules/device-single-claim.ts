import { claimsByMachine, Finding, listText, NodeClaim, PlannedResource } from "../model";

/**
 * storage-device-single-claim: a device of a machine is declared by at most one storage, read from
 * the `storage.zcloud.io/<type>-devices` annotations of all node label commands of the machine (a node
 * name, or the node names whose remote commands reach one SSH endpoint). Paths are compared as
 * declared: /dev/sdb and its /dev/disk/by-id name are not known to be one disk here (the node
 * script resolves and refuses that case on the node).
 */
export function checkDeviceSingleClaim(resources: PlannedResource[]): Finding[] {
    const findings: Finding[] = [];
    for (const machine of claimsByMachine(resources)) {
        const byDevice = new Map<string, NodeClaim[]>();
        for (const claim of machine.claims) {
            for (const device of claim.devices) {
                byDevice.set(device, [...(byDevice.get(device) ?? []), claim]);
            }
        }
        for (const [device, claims] of byDevice) {
            if (claims.length < 2) {
                continue;
            }
            const nodes = [...new Set(claims.map((c) => c.node))];
            const harm =
                "a disk holds one LVM physical volume or one Ceph OSD, so the second storage's disk prep would either " +
                "refuse it or, with wipe, destroy the first one's data.";
            const message =
                nodes.length === 1
                    ? `${nodes[0]} ${device} is claimed by ${listText(claims.map((c) => `${c.type} '${c.storage}'`))}: ${harm} ` +
                      `List ${device} on ${nodes[0]} under one storage only in the stack config.`
                    : `${device} of one machine reached as ${listText(nodes)} (all at ${machine.endpoints.join(" or ")}) is claimed by ` +
                      `${listText(claims.map((c) => `${c.type} '${c.storage}' on ${c.node}`))}: ${harm} ` +
                      `Give each of ${listText(nodes)} the address of its own machine in zcloud-storage:nodes, or list ${device} under one storage only, in the stack config.`;
            findings.push({ urn: claims[claims.length - 1].urn, message });
        }
    }
    return findings;
}
