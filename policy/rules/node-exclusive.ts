import { claimsByMachine, Finding, listText, Machine, NodeClaim, PlannedResource } from "../model";

/**
 * storage-node-exclusive: a machine serves at most one of lvm and cephfs, and at most one storage
 * of each type. A machine is a node name, or several node names whose remote commands reach one
 * SSH endpoint. One finding per machine, on the label command that completes the conflict.
 */
export function checkNodeExclusive(resources: PlannedResource[]): Finding[] {
    const findings: Finding[] = [];
    for (const machine of claimsByMachine(resources)) {
        const finding = conflictOn(machine);
        if (finding) {
            findings.push(finding);
        }
    }
    return findings;
}

function conflictOn(machine: Machine): Finding | undefined {
    const { claims } = machine;
    const crossType = claims.some((c) => c.type === "lvm") && claims.some((c) => c.type === "cephfs");
    const sameType = [...new Set(claims.map((c) => c.type))].filter((t) => claims.filter((c) => c.type === t).length > 1);
    if (!crossType && sameType.length === 0) {
        return undefined;
    }
    const conflicting = claims.filter((c) => (crossType && (c.type === "lvm" || c.type === "cephfs")) || sameType.includes(c.type));
    if (machine.nodes.length > 1) {
        return machineConflict(machine, conflicting, crossType, sameType);
    }
    const node = machine.nodes[0];
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
    return { urn: conflicting[conflicting.length - 1].urn, message: `${node} serves ${served}: ${reasons.join("; ")}. ${fix}` };
}

/** One machine reached under several node names: the storages would share its disks unseen. */
function machineConflict(machine: Machine, conflicting: NodeClaim[], crossType: boolean, sameType: string[]): Finding {
    const reasons: string[] = [];
    if (crossType) {
        reasons.push("a machine's disks must belong to one of them (a Ceph OSD and an LVM VG would compete for the machine)");
    }
    for (const type of sameType) {
        reasons.push(`a machine serves one ${type} storage, as a node does`);
    }
    const served = listText(conflicting.map((c) => `${c.type} '${c.storage}' on ${c.node}`));
    const names = listText(machine.nodes);
    return {
        urn: conflicting[conflicting.length - 1].urn,
        message:
            `${names} are one machine (all reach ${machine.endpoints.join(" or ")}) and it serves ${served}: ${reasons.join("; ")}. ` +
            `Give each of ${names} the address of its own machine in zcloud-storage:nodes, or keep the machine in one storage, in the stack config.`,
    };
}
