import { kubernetesKind, nodeLabelManifest } from "./manifests";
import { PlannedResource } from "./model";

/** The last part of a URN: the resource's name. */
export const urnName = (urn: string) => urn.slice(urn.lastIndexOf("::") + 2);

function str(v: unknown): string {
    return typeof v === "string" ? v : JSON.stringify(v);
}

/**
 * The script name and arguments of a node command: `lvm-reconcile apply --vg zcloud-x /dev/sdb`.
 * The script (inline in older plans) or the bundle stub is the single-quoted word after `sh -c`; a
 * stub's bundle words (staged path and sha256) are left out, so both forms read the same.
 */
export function nodeCommandArgs(command: unknown): string {
    if (typeof command !== "string") {
        return "";
    }
    const m = /sh -c '(?:[^']|'"'"')*' (.*)$/s.exec(command);
    if (!m) {
        return "";
    }
    return m[1].replace(/^(\S+) \S+\.sh [0-9a-f]{64}( |$)/, "$1$2");
}

/** Options of the disk scripts that take a value (a `--wipe-device` value is no extra device). */
const valueOptions = new Set(["--vg", "--node", "--wipe-device", "--fsid", "--thin-pool", "--thin-percent"]);

/** The declared devices among a disk command's argument words: `/dev/...` words that are no option's value. */
export function diskCommandDevices(words: string[]): string[] {
    return words.filter((w, k) => w.startsWith("/dev/") && !valueOptions.has(words[k - 1]));
}

/** `local-fast-node3-disks` (or its script copy `local-fast-node3-disks-scripts`) with parent `local-fast` -> node3. */
export function nodeOf(r: PlannedResource): string | undefined {
    const storage = urnName(r.parent);
    const m = new RegExp(`^${storage.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}-(.+)-(disks|label|login)(-scripts)?$`).exec(r.name);
    return m?.[1];
}

/**
 * What a node label command's stdin change is, in words: a label command carries the storage's
 * Node (its label and devices annotation) on stdin, so `stdin` alone would not tell a reviewer
 * which. `["devices annotation"]`, `["label"]`, both, or `["Node"]` for any other difference.
 */
export function labelStdinChange(before: PlannedResource, after: PlannedResource): string[] {
    type Node = { metadata?: { labels?: unknown; annotations?: unknown } };
    const old = nodeLabelManifest(before) as Node | undefined;
    const now = nodeLabelManifest(after) as Node | undefined;
    if (!old || !now) {
        return ["Node"];
    }
    const same = (a: unknown, b: unknown) => JSON.stringify(a ?? {}) === JSON.stringify(b ?? {});
    const words = [...(same(old.metadata?.labels, now.metadata?.labels) ? [] : ["label"]), ...(same(old.metadata?.annotations, now.metadata?.annotations) ? [] : ["devices annotation"])];
    return words.length ? words : ["Node"];
}

/**
 * A node command in a line, by what its create does (`local-fast prepare node3 [/dev/sdb]`) or,
 * for its delete, what that undoes (`local-fast release node3 [/dev/sdb]`, `san logout node1 [...]`).
 */
function describeNodeCommand(r: PlannedResource, phase: "create" | "delete"): string {
    const args = nodeCommandArgs((r.inputs as { create?: unknown }).create).split(" ");
    const storage = urnName(r.parent);
    const target = args.indexOf("--target");
    if (target >= 0) {
        const portals = args.filter((_, k) => args[k - 1] === "--portal");
        const lun = `${args[target + 1]} lun ${args[args.indexOf("--lun") + 1]} via ${portals.join(", ")}`;
        const node = nodeOf(r);
        const vg = args[args.indexOf("--vg") + 1];
        if (phase === "delete") {
            return node ? `${storage} logout ${node} [${lun}]` : `${storage} leave shared VG ${vg} [${lun}]`;
        }
        return node ? `${storage} login ${node} [${lun}]` : `${storage} shared VG ${vg} [${lun}]`;
    }
    const devices = diskCommandDevices(args);
    return `${storage} ${phase === "delete" ? "release" : "prepare"} ${nodeOf(r) ?? "?"} [${devices.join(", ")}]`;
}

/** What a resource's delete does, in a line: a node command's release (logout, VG left), else `deletes <what it is>`. */
export function describeDelete(r: PlannedResource): string {
    return r.type === "command:remote:Command" ? describeNodeCommand(r, "delete") : `deletes ${describe(r)}`;
}

/** One line that says what a resource is, as a reviewer wants to read it in a PR. */
export function describe(r: PlannedResource): string {
    const i = r.inputs as Record<string, any>;
    if (r.type === "command:remote:Command") {
        return describeNodeCommand(r, "create");
    }
    if (r.type === "command:remote:CopyToRemote") {
        const sha256 = String(i.source?.sha256 ?? "");
        return `${urnName(r.parent)} copy script set ${sha256.slice(0, 12)} to ${nodeOf(r) ?? "the VG's node"}`;
    }
    const node = nodeLabelManifest(r) as { metadata?: { name?: string; labels?: Record<string, unknown> } } | undefined;
    if (node) {
        const labels = Object.entries(node.metadata?.labels ?? {}).map(([k, v]) => `${k}=${str(v)}`);
        return `label node ${node.metadata?.name} ${labels.join(" ")}`;
    }
    if (r.type === "kubernetes:storage.k8s.io/v1:StorageClass") {
        const params = Object.entries(i.parameters ?? {}).map(([k, v]) => `${k}=${str(v)}`);
        const isDefault = i.metadata?.annotations?.["storageclass.kubernetes.io/is-default-class"] === "true";
        return `StorageClass ${i.metadata?.name}${isDefault ? " (default)" : ""} ${i.provisioner} ${params.join(" ")}`;
    }
    const k = kubernetesKind(r.type);
    if (k) {
        const ns = i.metadata?.namespace ? `${i.metadata.namespace}/` : "";
        return `${k.kind} ${ns}${i.metadata?.name ?? r.name}`;
    }
    return `${r.type.split(":").pop()} ${r.name}`;
}
