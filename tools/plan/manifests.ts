import { PlannedResource, secretMarker } from "./model";

/** `kubernetes:apps/v1:DaemonSet` -> { apiVersion: "apps/v1", kind: "DaemonSet" }. */
export function kubernetesKind(type: string): { apiVersion: string; kind: string } | undefined {
    const m = /^kubernetes:([^:]+):([^:]+)$/.exec(type);
    if (!m) {
        return undefined;
    }
    const [, groupVersion, kind] = m;
    return { apiVersion: groupVersion.startsWith("core/") ? groupVersion.slice(5) : groupVersion, kind };
}

/**
 * The Kubernetes object a resource applies, as `kubectl apply` would take it. Patch resources
 * (NodePatch) render as the object they patch. Undefined for non-Kubernetes resources.
 */
export function toManifest(r: PlannedResource): Record<string, unknown> | undefined {
    const k = kubernetesKind(r.type);
    if (!k || !r.custom || r.type.startsWith("pulumi:providers:")) {
        return undefined;
    }
    const kind = k.kind.endsWith("Patch") ? k.kind.slice(0, -"Patch".length) : k.kind;
    const { apiVersion: _a, kind: _k, ...rest } = r.inputs;
    // The provider makes a Secret's whole data/stringData secret: show its keys (not secret,
    // known from the policy view), every value as the secret marker.
    for (const field of ["data", "stringData"]) {
        const opened = r.policyInputs?.[field];
        if (rest[field] === secretMarker && opened && typeof opened === "object" && !Array.isArray(opened)) {
            rest[field] = Object.fromEntries(Object.keys(opened).map((key) => [key, secretMarker]));
        }
    }
    return { apiVersion: k.apiVersion, kind, ...rest };
}

export function isNodeCommand(r: PlannedResource): boolean {
    return r.type === "command:remote:Command";
}
