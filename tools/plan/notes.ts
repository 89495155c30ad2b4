import { nfsDriverName } from "../../components/nfs/parameters";
import { diskCommandDevices, nodeCommandArgs, nodeOf, urnName } from "./describe";
import type { Change } from "./diff";

/**
 * Plain-language notes under a change in the diff, for changes whose effect the resource line
 * alone does not tell (what happens to data that already exists).
 */
export function changeNotes(c: Change): string[] {
    return [...nfsStorageClassNotes(c), ...diskWipeNotes(c)];
}

/** What a disk command's arguments say about its devices and their wipe licence. */
interface DiskArgs {
    devices: string[];
    /** `--wipe-on-create` (wipe: true): the devices of the node's first apply. */
    onCreate: boolean;
    /** `--wipe-device` values (the wipe map's devices for this node). */
    listed: string[];
}

function diskArgs(command: unknown): DiskArgs | undefined {
    // `<script name> apply ...`: lvm-reconcile and cephfs-disks carry --node, the iSCSI commands
    // (one LUN, wiped only by the run that creates its VG) do not.
    const words = nodeCommandArgs(command).split(" ");
    if (words[1] !== "apply" || !words.includes("--node")) {
        return undefined;
    }
    return {
        devices: diskCommandDevices(words),
        onCreate: words.includes("--wipe-on-create"),
        listed: words.filter((_, k) => words[k - 1] === "--wipe-device"),
    };
}

/**
 * One line per device that joins a storage on a node, saying whether the node will wipe it: a
 * reviewer sees in the PR which disks a merge licenses the node to erase.
 */
function diskWipeNotes(c: Change): string[] {
    if (c.resource.type !== "command:remote:Command" || (c.kind !== "create" && c.kind !== "update")) {
        return [];
    }
    const after = diskArgs((c.resource.inputs as { create?: unknown }).create);
    const node = nodeOf(c.resource);
    if (!after || !node) {
        return [];
    }
    const storage = urnName(c.resource.parent);
    const before = c.before ? diskArgs((c.before.inputs as { create?: unknown }).create) : undefined;
    const joining = after.devices.filter((d) => !before?.devices.includes(d));
    return joining.map((d) => {
        const head = `${node} ${d}: joins ${storage}`;
        if (after.listed.includes(d)) {
            return `${head}, will be wiped if it carries signatures (listed under wipe.${node})`;
        }
        if (after.onCreate && !before) {
            return `${head}, will be wiped if it carries signatures (wipe: true, ${node} is new in ${storage})`;
        }
        if (after.onCreate) {
            return `${head}, not wiped: wipe: true covers only the devices ${node} joined ${storage} with; refused if it carries signatures (list it under wipe.${node} to allow wiping)`;
        }
        return `${head}, not wiped: refused if it carries signatures`;
    });
}

type Params = Record<string, string | undefined>;

/** An NFS StorageClass replaced for a new server or path: existing volumes do not move. */
function nfsStorageClassNotes(c: Change): string[] {
    const after = c.resource.inputs as { provisioner?: string; parameters?: Params; metadata?: { name?: string } };
    if (c.kind !== "replace" || !c.resource.type.endsWith(":StorageClass") || after.provisioner !== nfsDriverName || !c.before) {
        return [];
    }
    const before = (c.before.inputs as { parameters?: Params }).parameters ?? {};
    const now = after.parameters ?? {};
    const where = (p: Params) => `${p.server?.includes(":") ? `[${p.server}]` : p.server}:${p.share}`;
    const notes: string[] = [];
    if (before.server !== now.server || before.share !== now.share) {
        notes.push(
            `existing volumes stay where they are: volumes of ${after.metadata?.name} already provisioned keep ${where(before)}; only new claims get directories on ${where(now)}. Nothing is moved or copied.`,
        );
    }
    if (before.onDelete !== now.onDelete) {
        notes.push(`existing volumes keep onDelete=${before.onDelete}; only new volumes get onDelete=${now.onDelete}.`);
    }
    return notes;
}
