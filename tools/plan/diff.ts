import { isDeepStrictEqual } from "util";
import { PlannedResource } from "./model";

export type ChangeKind = "create" | "update" | "replace" | "delete";

export interface Change {
    kind: ChangeKind;
    resource: PlannedResource;
    /** Changed input paths (`parameters.share`, `create`). */
    fields: string[];
    /** The fields that force the replacement. */
    replaceBecause: string[];
    /** The resource as planned before, for updates and replacements. */
    before?: PlannedResource;
}

/** Inputs Kubernetes cannot change in place: the provider replaces the object. */
const replaceOnChange: Array<{ type: RegExp; paths: string[] }> = [
    { type: /^kubernetes:/, paths: ["metadata.name", "metadata.namespace", "apiVersion", "kind"] },
    { type: /:StorageClass$/, paths: ["provisioner", "parameters", "reclaimPolicy", "volumeBindingMode", "allowedTopologies"] },
    { type: /:CSIDriver$/, paths: ["spec"] },
    { type: /:(Deployment|DaemonSet|StatefulSet)$/, paths: ["spec.selector"] },
];

/** Paths where two values differ, down to `depth` levels. */
function changedPaths(a: unknown, b: unknown, prefix: string, depth: number): string[] {
    if (isDeepStrictEqual(a, b)) {
        return [];
    }
    const isObj = (v: unknown) => v !== null && typeof v === "object" && !Array.isArray(v);
    if (depth === 0 || !isObj(a) || !isObj(b)) {
        return [prefix || "(all)"];
    }
    const ao = a as Record<string, unknown>;
    const bo = b as Record<string, unknown>;
    const keys = [...new Set([...Object.keys(ao), ...Object.keys(bo)])].sort();
    return keys.flatMap((k) => changedPaths(ao[k], bo[k], prefix ? `${prefix}.${k}` : k, depth - 1));
}

function replaceReasons(r: PlannedResource, fields: string[]): string[] {
    const rules = replaceOnChange.filter((rule) => rule.type.test(r.type)).flatMap((rule) => rule.paths);
    return fields.filter((f) => rules.some((p) => f === p || f.startsWith(`${p}.`) || p.startsWith(`${f}.`)));
}

/**
 * What `pulumi up` would do to go from `before` to `after`, by URN. Components appear only when
 * created or deleted (they have no inputs of their own).
 */
export function diffPlans(before: PlannedResource[], after: PlannedResource[]): Change[] {
    const old = new Map(before.map((r) => [r.urn, r]));
    const changes: Change[] = [];
    for (const r of after) {
        const prev = old.get(r.urn);
        if (!prev) {
            changes.push({ kind: "create", resource: r, fields: [], replaceBecause: [] });
            continue;
        }
        old.delete(r.urn);
        if (!r.custom) {
            continue;
        }
        const fields = changedPaths(prev.inputs, r.inputs, "", 3);
        if (fields.length === 0) {
            continue;
        }
        const replaceBecause = replaceReasons(r, fields);
        changes.push({ kind: replaceBecause.length ? "replace" : "update", resource: r, fields, replaceBecause, before: prev });
    }
    for (const r of old.values()) {
        changes.push({ kind: "delete", resource: r, fields: [], replaceBecause: [] });
    }
    return changes;
}
