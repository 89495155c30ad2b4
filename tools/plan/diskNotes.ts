import { diskCommandDevices, nodeCommandArgs, nodeOf, urnName } from "./describe";
import type { Change } from "./diff";
import type { PlannedResource } from "./model";

/**
 * `--diff` in disk terms: what a change does to the devices and the data on them, one plain line
 * per device that joins or leaves a storage on a node, per node that leaves, per OSD drain, per
 * iSCSI LUN and per storage removed. Each line says what the node scripts do (their headers in
 * components/node), so a reviewer sees in the PR which disks a merge licenses a node to erase.
 */
export function diskNotes(c: Change): string[] {
    return [...diskWipeNotes(c), ...wipeLicenceNotes(c), ...deviceLeaveNotes(c), ...nodeLeaveNotes(c), ...osdDrainNotes(c), ...monLeaveNotes(c), ...iscsiNotes(c), ...storageRemovalNotes(c)];
}

/**
 * The mark of a note on a change that can destroy data (a wipe, a release, a drain, a storage's
 * data deleted): rendered as its own word instead of `note:`, so it stands apart from harmless notes.
 */
export const destructiveMark = "DESTRUCTIVE: ";
const destructive = (text: string) => `${destructiveMark}${text}`;

/** What a disk command's arguments say about its devices and their wipe licence. */
interface DiskArgs {
    /** `lvm-reconcile` or `cephfs-disks`. */
    script: string;
    devices: string[];
    /** `--vg` (LVM). */
    vg?: string;
    /** `--wipe-on-create` (wipe: true): the devices of the node's first apply. */
    onCreate: boolean;
    /** `--wipe-device` values (the wipe map's devices for this node). */
    listed: string[];
}

const valueOf = (words: string[], option: string) => words[words.indexOf(option) + 1];

function diskArgs(command: unknown): DiskArgs | undefined {
    // `<script name> apply ...`: lvm-reconcile and cephfs-disks carry --node, the iSCSI commands
    // (one LUN, wiped only by the run that creates its VG) do not.
    const words = nodeCommandArgs(command).split(" ");
    if (words[1] !== "apply" || !words.includes("--node")) {
        return undefined;
    }
    return {
        script: words[0],
        devices: diskCommandDevices(words),
        ...(words.includes("--vg") ? { vg: valueOf(words, "--vg") } : {}),
        onCreate: words.includes("--wipe-on-create"),
        listed: words.filter((_, k) => words[k - 1] === "--wipe-device"),
    };
}

const createOf = (r: PlannedResource | undefined) => (r?.inputs as { create?: unknown } | undefined)?.create;
const isRemoteCommand = (r: PlannedResource) => r.type === "command:remote:Command";

/**
 * One line per device that joins a storage on a node, saying whether the node will wipe it.
 */
function diskWipeNotes(c: Change): string[] {
    if (!isRemoteCommand(c.resource) || (c.kind !== "create" && c.kind !== "update")) {
        return [];
    }
    const after = diskArgs(createOf(c.resource));
    const node = nodeOf(c.resource);
    if (!after || !node) {
        return [];
    }
    const storage = urnName(c.resource.parent);
    const before = c.before ? diskArgs(createOf(c.before)) : undefined;
    const joining = after.devices.filter((d) => !before?.devices.includes(d));
    return joining.map((d) => {
        const head = `${node} ${d}: joins ${storage}`;
        if (after.listed.includes(d)) {
            return destructive(`${head}, will be wiped if it carries signatures (listed under wipe.${node})`);
        }
        if (after.onCreate && !before) {
            return destructive(`${head}, will be wiped if it carries signatures (wipe: true, ${node} is new in ${storage})`);
        }
        if (after.onCreate) {
            return `${head}, not wiped: wipe: true covers only the devices ${node} joined ${storage} with; refused if it carries signatures (list it under wipe.${node} to allow wiping)`;
        }
        return `${head}, not wiped: refused if it carries signatures`;
    });
}

/** An updated disk command's arguments before and after, its node and storage; undefined for any other change. */
function updatedDiskCommand(c: Change): { before: DiskArgs; after: DiskArgs; node: string; storage: string } | undefined {
    if (!isRemoteCommand(c.resource) || c.kind !== "update" || !c.before) {
        return undefined;
    }
    const after = diskArgs(createOf(c.resource));
    const before = diskArgs(createOf(c.before));
    const node = nodeOf(c.resource);
    return after && before && node ? { before, after, node, storage: urnName(c.resource.parent) } : undefined;
}

/**
 * One line per device already in a storage on a node that the change newly licenses the node to
 * wipe: listed under wipe.<node> now, or `wipe: true` added (it covers the devices of the node's
 * first apply: a node whose earlier apply was refused, its storage not made yet). The change a
 * node's refusal asks for, so the reviewer sees which disks it lets the node erase.
 */
function wipeLicenceNotes(c: Change): string[] {
    const u = updatedDiskCommand(c);
    if (!u) {
        return [];
    }
    const { before, after, node, storage } = u;
    return after.devices
        .filter((d) => before.devices.includes(d))
        .flatMap((d) => {
            if (after.listed.includes(d) && !before.listed.includes(d)) {
                return [destructive(`${node} ${d}: may now be wiped if it carries signatures (newly listed under wipe.${node})`)];
            }
            if (after.onCreate && !before.onCreate && !before.listed.includes(d)) {
                return [destructive(`${node} ${d}: may now be wiped if it carries signatures (wipe: true added: if ${storage} is not yet made on ${node}, e.g. its last apply was refused)`)];
            }
            return [];
        });
}

/** One line per device that leaves a storage on a node that stays in it: released, its data gone. */
function deviceLeaveNotes(c: Change): string[] {
    const u = updatedDiskCommand(c);
    if (!u) {
        return [];
    }
    const { before, after, node, storage } = u;
    return before.devices
        .filter((d) => !after.devices.includes(d))
        .map((d) =>
            destructive(
                after.script === "lvm-reconcile"
                    ? `${node} ${d}: leaves ${storage}, released: taken out of VG ${after.vg}, its PV removed and wiped; its data is gone (refused while it holds allocated extents: move or delete the volumes on it first)`
                    : `${node} ${d}: leaves ${storage}, released: its OSD is drained, purged and the device zapped (its drain); its data is gone once Ceph holds it on other OSDs (the OSD is kept if the disk is still declared on ${node} under another path)`,
            ),
        );
}

/** A node's disk command deleted: the node leaves the storage and its devices are released. */
function nodeLeaveNotes(c: Change): string[] {
    if (!isRemoteCommand(c.resource) || (c.kind !== "delete" && c.kind !== "replace")) {
        return [];
    }
    const args = diskArgs(createOf(c.kind === "replace" ? c.before : c.resource));
    const node = nodeOf(c.resource);
    if (!args || !node) {
        return [];
    }
    const storage = urnName(c.resource.parent);
    const devices = args.devices.join(", ");
    const head = c.kind === "delete" ? `${node} leaves ${storage}` : `${node} is released from ${storage} before its devices are prepared again`;
    return [
        destructive(
            args.script === "lvm-reconcile"
                ? `${head}, released: VG ${args.vg} removed, PVs ${devices} removed and wiped; the data on them is gone (refused while the VG holds logical volumes: delete the node's volumes first)`
                : `${head}, released: the OSDs on ${devices} are drained, purged and their devices zapped first (their drains), then the node is released (refused while a device still carries an OSD); the data on them is gone once Ceph holds it on other OSDs`,
        ),
    ];
}

/** The delete step of an OSD's drain (cephfs-osd-remove.sh), in plain words. */
function osdDrainNotes(c: Change): string[] {
    if (c.resource.type !== "command:local:Command" || c.kind !== "delete" || !/-osd-.+-drain$/.test(c.resource.name)) {
        return [];
    }
    const words = nodeCommandArgs((c.resource.inputs as { delete?: unknown }).delete).split(" ");
    const node = valueOf(words, "--node");
    const device = valueOf(words, "--device");
    return [
        destructive(
            `drains the OSD on ${node} ${device}: marks it out and waits (bounded) until Ceph can lose it safely, stops its daemon, purges it and zaps the device; a refusal or timeout stops pulumi up with nothing zapped`,
        ),
    ];
}

/** The delete step of a mon's leave (cephfs-mon-remove.sh), in plain words. */
function monLeaveNotes(c: Change): string[] {
    if (c.resource.type !== "command:local:Command" || c.kind !== "delete" || !/-mon-[a-z]+-leave$/.test(c.resource.name)) {
        return [];
    }
    const words = nodeCommandArgs((c.resource.inputs as { delete?: unknown }).delete).split(" ");
    const mon = valueOf(words, "--mon");
    return [
        `mon.${mon} leaves the monmap (ceph mon remove) before its workload and Service are deleted, after this change's OSD drains, and only while the mons that stay hold a quorum without it (else refused, nothing removed)`,
    ];
}

/** What an iSCSI command's arguments say: its script, target, LUN, portals, and the VG's wipe licence. */
function iscsiArgs(command: unknown): { script: string; lun: string; vg: string; wipe: boolean } | undefined {
    const words = nodeCommandArgs(command).split(" ");
    if (!words[0].startsWith("iscsi-") || words[1] !== "apply" || !words.includes("--target")) {
        return undefined;
    }
    const portals = words.filter((_, k) => words[k - 1] === "--portal");
    return { script: words[0], lun: `${valueOf(words, "--target")} lun ${valueOf(words, "--lun")} via ${portals.join(", ")}`, vg: valueOf(words, "--vg"), wipe: words.includes("--wipe") };
}

/** iSCSI: the LUN a storage's VG is made on, initiators that log in or out, a LUN moved. */
function iscsiNotes(c: Change): string[] {
    if (!isRemoteCommand(c.resource)) {
        return [];
    }
    const now = iscsiArgs(createOf(c.resource));
    const was = c.before ? iscsiArgs(createOf(c.before)) : undefined;
    if (!now) {
        return [];
    }
    const storage = urnName(c.resource.parent);
    const node = nodeOf(c.resource);
    if (now.script === "iscsi-vg") {
        if (c.kind === "create") {
            const text = `${now.lun}: joins ${storage}, VG ${now.vg} made on it (or adopted if the LUN holds it): ${now.wipe ? "will be wiped if it carries signatures (wipe: true), never if it holds logical volumes" : "not wiped: refused if it carries signatures"}`;
            return [now.wipe ? destructive(text) : text];
        }
        if (c.kind === "delete") {
            return [`VG ${now.vg} of ${storage} stays on ${now.lun} with its data: its release never removes it (refused while it holds volumes)`];
        }
        if (was && was.lun !== now.lun) {
            return [`${storage} names another LUN: ${now.lun} (was ${was.lun}); the VG command refuses a LUN other than the one it made VG ${now.vg} on, and the VG and its data stay there`];
        }
        return [];
    }
    if (c.kind === "create") {
        return [`${node} logs in to ${now.lun} (the LUN of ${storage}, shared by its initiators)`];
    }
    if (c.kind === "delete") {
        return [`${node} leaves ${storage}: logs out of ${now.lun} (refused while a volume is active on ${node}); the LUN and its data stay on the target`];
    }
    if (was && was.lun !== now.lun) {
        return [`${node} logs in to ${now.lun} instead of ${was.lun}: refused while the VG on the current LUN holds volumes; nothing on either LUN is wiped`];
    }
    return [];
}

/** A storage removed from the stack, in plain words per type. */
function storageRemovalNotes(c: Change): string[] {
    if (c.kind !== "delete" || c.resource.custom) {
        return [];
    }
    const name = c.resource.name;
    switch (c.resource.type) {
        case "zcloud:storage:LvmStorage":
            return [destructive(`storage ${name} is removed: every node's devices are released (the lines above: data gone, refused while volumes exist), its StorageClass and lvmd are deleted`)];
        case "zcloud:storage:CephFsStorage":
            return [
                destructive(
                    `storage ${name} is removed: its Ceph cluster (monitors, keys, OSDs) and StorageClass are deleted and every volume in it is gone; its drains refuse while Ceph cannot lose an OSD safely, so delete its volumes first`,
                ),
            ];
        case "zcloud:storage:IscsiStorage":
            return [`storage ${name} is removed: its initiators log out and its StorageClass is deleted; the VG and the volumes' data stay on the LUN`];
        case "zcloud:storage:NfsStorage":
            return [`storage ${name} is removed: its StorageClass is deleted; volumes already provisioned and their data stay on the NFS server`];
        default:
            return [];
    }
}

/** Option words whose value the disk-terms lines tell (devices, wipe licences, LUN). */
const toldOptions = new Set(["--wipe-device", "--target", "--lun", "--portal"]);

/** A node command's phase without what the disk-terms lines tell: devices and the options above. */
function untoldWords(command: unknown): string {
    const words = nodeCommandArgs(command).split(" ");
    const sudo = typeof command === "string" && command.startsWith("sudo -n ") ? "sudo " : "";
    return sudo + words.filter((w, k) => !toldOptions.has(w) && !toldOptions.has(words[k - 1]) && !(w.startsWith("/dev/") && !words[k - 1]?.startsWith("--"))).join(" ");
}

/**
 * The node command's phase changes (create/update/delete) that its disk-terms lines tell in full:
 * each changed phase differs only in devices, wipe licences or LUN, and there is a line. The
 * diff then shows no raw "create changed" for them.
 */
export function phasesToldInDiskTerms(c: Change): string[] {
    if (c.kind !== "update" || !c.before || !isRemoteCommand(c.resource) || diskNotes(c).length === 0) {
        return [];
    }
    const before = c.before;
    const phases = c.fields.filter((f) => f === "create" || f === "update" || f === "delete");
    return phases.every((f) => nodeCommandArgs(c.resource.inputs[f]) !== "" && untoldWords(before.inputs[f]) === untoldWords(c.resource.inputs[f])) ? phases : [];
}
