import { isDeepStrictEqual } from "util";
import { connectionChanges } from "./connection";
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
    /** A node command's connection changes, credentials left out (`connection: address a -> b`). */
    connection?: string[];
}

/**
 * The kubernetes provider's own replacement rules (pulumi-kubernetes, provider/pkg/provider:
 * forceNewProperties): a change under one of these input paths makes its Diff answer "replace";
 * every other change is an update, also where the API server will then refuse it (the program
 * marks such fields replaceOnChanges itself, e.g. a StorageClass's reclaimPolicy). Secrets and
 * ConfigMaps are replaced on a data change because the provider's enableSecretMutable and
 * enableConfigMapMutable default to false.
 */
const selector = ["spec.selector"];
const kubernetesForceNew: Record<string, string[]> = {
    "storage.k8s.io/v1/StorageClass": ["parameters", "provisioner"],
    "apps/v1/Deployment": selector,
    "apps/v1/DaemonSet": selector,
    "apps/v1/StatefulSet": [...selector, "spec.podManagementPolicy", "spec.revisionHistoryLimit", "spec.serviceName", "spec.volumeClaimTemplates"],
    "batch/v1/Job": [...selector, "spec.completions", "spec.parallelism", "spec.template"],
    "rbac.authorization.k8s.io/v1/RoleBinding": ["roleRef"],
    "rbac.authorization.k8s.io/v1/ClusterRoleBinding": ["roleRef"],
    "core/v1/Service": ["spec.clusterIP"],
    "core/v1/Secret": ["type", "data", "stringData"],
    "core/v1/ConfigMap": ["data", "binaryData"],
};

/** Input paths whose change replaces a resource of this type, as its provider decides. */
function providerReplacePaths(r: PlannedResource): string[] {
    const k8s = /^kubernetes:([^:]+):([^:]+)$/.exec(r.type);
    if (k8s) {
        return ["metadata.name", "metadata.namespace", ...(kubernetesForceNew[`${k8s[1]}/${k8s[2]}`] ?? [])];
    }
    // The random provider's resources are immutable: any input change makes a new value.
    if (r.type.startsWith("random:")) {
        return [""];
    }
    return [];
}

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

/** `triggers[*]` -> `triggers`: our changed paths name objects and fields, not list items. */
const fieldPath = (p: string) => p.replace(/\[[^\]]*\]/g, "");

function replaceReasons(r: PlannedResource, fields: string[]): string[] {
    const rules = [...providerReplacePaths(r), ...(r.replaceOnChanges ?? []).map(fieldPath)];
    const under = (f: string, p: string) => p === "" || f === p || f.startsWith(`${p}.`) || p.startsWith(`${f}.`) || f === "(all)";
    return fields.filter((f) => rules.some((p) => under(f, p)));
}

/**
 * A node command's connection is one secret input, "[secret]" on both sides, so the inputs alone
 * never show it changed; the engine sees the change (and runs the command again over the new
 * connection). `connection` is not a replaceOnChanges path of @pulumi/command (only `triggers`
 * is), so the usual rules make it an update.
 */
function withConnectionField(fields: string[], connection: string[]): string[] {
    return connection.length === 0 || fields.includes("connection") ? fields : [...fields, "connection"].sort();
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
        const connection = connectionChanges(prev, r);
        // The engine keeps an ignored input at its old value: no change, hence no replace.
        const ignored = (r.ignoreChanges ?? []).map(fieldPath);
        const changed = changedPaths(prev.inputs, r.inputs, "", 3).filter((f) => !ignored.some((p) => f === p || f.startsWith(`${p}.`)));
        const fields = withConnectionField(changed, connection);
        if (fields.length === 0) {
            continue;
        }
        const replaceBecause = replaceReasons(r, fields);
        changes.push({
            kind: replaceBecause.length ? "replace" : "update",
            resource: r,
            fields,
            replaceBecause,
            before: prev,
            ...(connection.length ? { connection } : {}),
        });
    }
    for (const r of old.values()) {
        changes.push({ kind: "delete", resource: r, fields: [], replaceBecause: [] });
    }
    return changes;
}
