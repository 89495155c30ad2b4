/**
 * The node disk commands a stack config plans: what each `<storage>-<node>-disks` remote
 * command would run on create, update and delete.
 *
 * TEMPORARY: until the offline plan (tools/plan.ts --json) lands, this reads the lvm section of
 * the stack file itself and assembles the commands with components/lvm/commands.ts, the same
 * functions the LvmStorage component calls. It must be switched to the plan's JSON output
 * (resources of type `command:remote:Command`, inputs.create/update/delete) so the node tier
 * runs exactly what the program plans. Only what the node tier uses is read here: ssh.user,
 * nodes[].user, lvm[].name/hosts/wipe; a `thin` block is rejected rather than guessed.
 */
import * as yaml from "js-yaml";
import { lvmApplyCommand, lvmReleaseCommand } from "../../components/lvm/commands";

export interface PlannedNodeCommand {
    /** Pulumi logical name, `<storage>-<node>-disks`. */
    name: string;
    /** Kubernetes node name. */
    node: string;
    create: string;
    update: string;
    delete: string;
}

interface RawLvm {
    name: string;
    hosts: Record<string, string[]>;
    wipe?: boolean;
    thin?: unknown;
}

export async function plannedNodeCommands(stackYaml: string): Promise<PlannedNodeCommand[]> {
    const doc = yaml.load(stackYaml) as { config?: Record<string, unknown> } | undefined;
    const config = doc?.config ?? {};
    const ssh = (config["zcloud-storage:ssh"] ?? {}) as { user?: string };
    const nodes = (config["zcloud-storage:nodes"] ?? {}) as Record<string, { user?: string }>;
    const lvm = (config["zcloud-storage:lvm"] ?? []) as RawLvm[];
    const planned: PlannedNodeCommand[] = [];
    for (const storage of lvm) {
        if (storage.thin !== undefined) {
            throw new Error(`planned.ts (pre-plan stand-in): lvm ${storage.name}: thin is not supported until tools/plan.ts is used`);
        }
        for (const [node, devices] of Object.entries(storage.hosts)) {
            const user = nodes[node]?.user ?? ssh.user ?? "root";
            const sudo = user !== "root";
            const vg = `zcloud-${storage.name}`;
            const apply = lvmApplyCommand({ vg, devices, wipe: storage.wipe ?? false }, sudo);
            planned.push({
                name: `${storage.name}-${node}-disks`,
                node,
                create: apply,
                update: apply,
                delete: lvmReleaseCommand({ vg }, sudo),
            });
        }
    }
    return planned;
}
