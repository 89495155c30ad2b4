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
 * The names Kubernetes gives the fields the provider's inputs spell with underscores: the
 * JSONSchemaProps extensions `x_kubernetes_preserve_unknown_fields` and its siblings are sent to
 * the API server as `x-kubernetes-preserve-unknown-fields` etc. (the provider renames every such
 * key, at any depth, before it applies an object).
 */
export function toKubernetesFieldNames(value: unknown): unknown {
    if (Array.isArray(value)) {
        return value.map(toKubernetesFieldNames);
    }
    if (value === null || typeof value !== "object") {
        return value;
    }
    return Object.fromEntries(
        Object.entries(value).map(([key, inner]) => [
            key.startsWith("x_kubernetes_") ? key.replace(/_/g, "-") : key,
            toKubernetesFieldNames(inner),
        ]),
    );
}

/**
 * The Node a node label command applies (server-side, where `pulumi up` runs): the JSON object of
 * kind Node on its stdin. Undefined for any other resource.
 */
export function nodeLabelManifest(r: PlannedResource): Record<string, unknown> | undefined {
    const text = r.inputs.stdin;
    if (r.type !== "command:local:Command" || typeof text !== "string" || !text.startsWith("{")) {
        return undefined;
    }
    const node = JSON.parse(text) as Record<string, unknown>;
    return node.kind === "Node" ? node : undefined;
}

/**
 * The Kubernetes object a resource applies, as `kubectl apply` would take it. Patch resources
 * render as the object they patch, a node label command as the Node it applies. Undefined for
 * other resources.
 */
export function toManifest(r: PlannedResource): Record<string, unknown> | undefined {
    const label = nodeLabelManifest(r);
    if (label) {
        return label;
    }
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
    return { apiVersion: k.apiVersion, kind, ...(toKubernetesFieldNames(rest) as Record<string, unknown>) };
}

export function isNodeCommand(r: PlannedResource): boolean {
    return r.type === "command:remote:Command";
}
