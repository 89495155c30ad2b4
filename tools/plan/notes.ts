import { nfsDriverName } from "../../components/nfs/parameters";
import { endpointMoved } from "./connection";
import { alertNotes } from "./alertNotes";
import { diskNotes } from "./diskNotes";
import type { Change } from "./diff";

/**
 * Plain-language notes under a change in the diff, for changes whose effect the resource line
 * alone does not tell (what happens to data that already exists).
 */
export function changeNotes(c: Change): string[] {
    return [...nfsStorageClassNotes(c), ...diskNotes(c), ...connectionNotes(c), ...namespaceMoveNotes(c), ...namespaceDeleteNotes(c), ...secretNamespaceNotes(c), ...alertNotes(c)];
}

type Meta = { metadata?: { name?: string } };

/** The storage Namespace replaced under a new name (zcloud-storage:namespace changed). */
function namespaceMoveNotes(c: Change): string[] {
    const before = (c.before?.inputs as Meta | undefined)?.metadata?.name;
    const after = (c.resource.inputs as Meta).metadata?.name;
    if (c.kind !== "replace" || c.resource.type !== "kubernetes:core/v1:Namespace" || before === after) {
        return [];
    }
    return [
        `zcloud-storage:namespace moves from ${before} to ${after}: pulumi up creates ${after} and deletes ${before} with everything in it, including the Secrets that existing volumes use; nothing is moved or copied. The policy pack refuses this until its storage-privileged-namespace namespace parameter names ${after}.`,
    ];
}

/**
 * The storage Namespace deleted (the stack's storages all removed, or sharedResources: external
 * set on the stack that owns it): Kubernetes deletes everything in it, whichever stack made it.
 */
function namespaceDeleteNotes(c: Change): string[] {
    if (c.kind !== "delete" || c.resource.type !== "kubernetes:core/v1:Namespace") {
        return [];
    }
    const name = (c.resource.inputs as Meta).metadata?.name;
    return [
        `pulumi up deletes the Namespace ${name} with everything in it, including the daemons and Secrets of storages that other stacks deploy there (sharedResources: external); remove those storages first, and never set sharedResources: external on the stack that owns the Namespace (docs/splitting-stacks.md).`,
    ];
}

/**
 * A CSI StorageClass whose secret references move to another namespace: a PersistentVolume keeps
 * the references it was provisioned with, so volumes made so far still point at the old namespace.
 */
function secretNamespaceNotes(c: Change): string[] {
    if (!c.resource.type.endsWith(":StorageClass") || !c.before) {
        return [];
    }
    const before = (c.before.inputs as { parameters?: Params }).parameters ?? {};
    const now = c.resource.inputs as { parameters?: Params } & Meta;
    const moved = Object.keys(before).filter((k) => k.endsWith("-secret-namespace") && before[k] !== now.parameters?.[k]);
    if (moved.length === 0) {
        return [];
    }
    const old = [...new Set(moved.map((k) => before[k]))].join(", ");
    return [
        `volumes of ${now.metadata?.name} provisioned so far keep their secret references in ${old} (${moved.join(", ")}): once those Secrets are deleted there, the volumes can no longer be mounted, expanded or deleted until the Secrets exist in ${old} again.`,
    ];
}

/**
 * A node command whose connection changed. @pulumi/command updates it in place: its Update runs
 * the command's `update` script (or `create` where there is none; here both are the idempotent
 * apply) over the new connection; nothing runs over the old one (only a delete would).
 */
function connectionNotes(c: Change): string[] {
    if (!c.connection?.length || c.kind !== "update") {
        return [];
    }
    if (c.resource.type === "command:remote:CopyToRemote") {
        // @pulumi/command 1.2.1 copies again on an update only when the source or remotePath changed.
        return ["pulumi up updates this copy in place and copies nothing (the file it copied is unchanged)."];
    }
    const notes = ["pulumi up updates this command in place: it runs the apply script again over the new connection and runs nothing over the old one."];
    if (endpointMoved(c.connection)) {
        notes.push(
            "if the new endpoint is another machine, its devices get prepared there and the old machine keeps its volume group and data as they are; to move a node's storage, remove the node from the storage first (its disks are released), then add it back.",
        );
    }
    return notes;
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
