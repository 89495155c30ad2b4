import { collectNodeClaims, Finding, listText, NodeClaim, PlannedResource } from "../model";

/**
 * storage-node-exclusive: a node serves at most one of lvm and cephfs, and at most one storage of
 * each type. One finding per node, on the NodePatch that completes the conflict.
 */
export function checkNodeExclusive(resources: PlannedResource[]): Finding[] {
    const byNode = new Map<string, NodeClaim[]>();
    for (const claim of collectNodeClaims(resources)) {
        const list = byNode.get(claim.node) ?? [];
        list.push(claim);
        byNode.set(claim.node, list);
    }

    const findings: Finding[] = [];
    for (const [node, claims] of byNode) {
        const lvm = claims.filter((c) => c.type === "lvm");
        const cephfs = claims.filter((c) => c.type === "cephfs");
        const crossType = lvm.length > 0 && cephfs.length > 0;
        const sameType = [...new Set(claims.map((c) => c.type))].filter(
            (t) => claims.filter((c) => c.type === t).length > 1,
        );
        if (!crossType && sameType.length === 0) {
            continue;
        }
        const conflicting = claims.filter(
            (c) => (crossType && (c.type === "lvm" || c.type === "cephfs")) || sameType.includes(c.type),
        );
        const reasons: string[] = [];
        if (crossType) {
            reasons.push("a node's disks must belong to one of them (a Ceph OSD and an LVM VG would compete for the node)");
        }
        for (const type of sameType) {
            reasons.push(
                `a node carries one label storage.zcloud.io/${type}, so it can serve one ${type} storage ` +
                    "(the storages would take the label from each other and one storage's daemons would leave the node)",
            );
        }
        const served = listText(conflicting.map((c) => `${c.type} '${c.storage}'`));
        const fix =
            conflicting.length === 2
                ? `Remove ${node} from one of them in the stack config.`
                : `Keep ${node} in at most one of lvm and cephfs, and in one storage per type, in the stack config.`;
        findings.push({
            urn: conflicting[conflicting.length - 1].urn,
            message: `${node} serves ${served}: ${reasons.join("; ")}. ${fix}`,
        });
    }
    return findings;
}
