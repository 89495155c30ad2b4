import { DeviceWipe } from "../config/model";
import { renderNodeCommand } from "../node/shipped";
import { nodeWipeArgs } from "../node/wipe";

/** The node scripts an LVM disk command ships, shared library first. */
export const lvmScriptFiles = ["lib.sh", "partition-guard.sh", "lvm-reconcile.sh"];

/** The name the script reports itself as ($0). */
export const lvmScriptName = "lvm-reconcile";

export interface LvmApplySpec {
    /** Volume group on the node, `zcloud-<storage>`. */
    vg: string;
    /** The node's name in the stack: its wipe licence, and the stamp on the VG people read. */
    node: string;
    /** Declared device paths on the node, in config order. */
    devices: string[];
    /** The storage's wipe setting; the node's share of it becomes the script's licence. */
    wipe: DeviceWipe;
    /** Optional thin pool `<vg>/<pool>` taking `percent` % of the VG. */
    thin?: { pool: string; percent: number };
}

export interface LvmReleaseSpec {
    vg: string;
}

/**
 * The create/update command of one (storage, node): makes the VG hold exactly `devices`.
 * Throws on specs the script would refuse anyway (no devices, bad thin percent), so such a
 * mistake shows up in the plan rather than on a node.
 */
export function lvmApplyCommand(spec: LvmApplySpec, sudo: boolean): string {
    if (spec.devices.length === 0) {
        throw new Error(`lvm apply for VG ${spec.vg}: no devices`);
    }
    const args = ["apply", "--vg", spec.vg, "--node", spec.node, ...nodeWipeArgs(spec.wipe, spec.node)];
    if (spec.thin) {
        const { pool, percent } = spec.thin;
        if (!Number.isInteger(percent) || percent < 1 || percent > 100) {
            throw new Error(`lvm apply for VG ${spec.vg}: thin percent must be an integer 1..100, got ${percent}`);
        }
        args.push("--thin-pool", pool, "--thin-percent", String(percent));
    }
    args.push(...spec.devices);
    return renderNodeCommand({ files: lvmScriptFiles, name: lvmScriptName, args, sudo });
}

/** The delete command of one (storage, node): removes the VG and wipes its PVs. */
export function lvmReleaseCommand(spec: LvmReleaseSpec, sudo: boolean): string {
    return renderNodeCommand({
        files: lvmScriptFiles,
        name: lvmScriptName,
        args: ["release", "--vg", spec.vg],
        sudo,
    });
}
