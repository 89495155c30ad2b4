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
 * Kubernetes' own field names for the JSON schema extensions of a CRD. The kubernetes SDK spells
 * `x-kubernetes-preserve-unknown-fields` as `x_kubernetes_preserve_unknown_fields` (a dash is no
 * identifier character) and the provider maps it back; a manifest must carry the API's name.
 * Keys directly under `properties` are the CRD's own field names and stay as they are.
 */
export function kubernetesSchemaNames(value: unknown, underProperties = false): unknown {
    if (Array.isArray(value)) {
        return value.map((v) => kubernetesSchemaNames(v));
    }
    if (value === null || typeof value !== "object") {
        return value;
    }
    return Object.fromEntries(
        Object.entries(value).map(([key, v]) => [
            !underProperties && /^x_kubernetes_[a-z_]+$/.test(key) ? key.replace(/_/g, "-") : key,
            kubernetesSchemaNames(v, !underProperties && (key === "properties" || key === "patternProperties")),
        ]),
    );
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
    // A secret value is shown as the marker; under stringData it is still a valid object.
    if (kind === "Secret" && rest.data !== undefined && rest.stringData === undefined && isMarkedMap(rest.data)) {
        rest.stringData = rest.data;
        delete rest.data;
    }
    if (kind === "CustomResourceDefinition") {
        rest.spec = kubernetesSchemaNames(rest.spec);
    }
    return { apiVersion: k.apiVersion, kind, ...rest };
}

/** A map whose every value is the secret marker. */
function isMarkedMap(v: unknown): boolean {
    return typeof v === "object" && v !== null && !Array.isArray(v) && Object.values(v).every((x) => x === secretMarker);
}

export function isNodeCommand(r: PlannedResource): boolean {
    return r.type === "command:remote:Command";
}
