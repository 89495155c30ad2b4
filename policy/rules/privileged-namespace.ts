import { containersOf, describe, dig, isUnknown, listText, PlannedResource, PolicyParams, podSpecOf, str } from "../model";

const NAMESPACE_TYPE = "kubernetes:core/v1:Namespace";
const ENFORCE_LABEL = "pod-security.kubernetes.io/enforce";

/**
 * storage-privileged-namespace: privileged containers, hostPID, hostIPC or hostNetwork pods only in
 * the storage namespace.
 */
export function checkPrivilegedNamespace(resource: PlannedResource, params: PolicyParams): string[] {
    if (resource.type === NAMESPACE_TYPE) {
        return checkPrivilegedNamespaceObject(resource, params);
    }
    const spec = podSpecOf(resource);
    if (!spec) {
        return [];
    }
    const powers: string[] = [];
    for (const c of containersOf(spec)) {
        if (dig(c.spec, "securityContext", "privileged") === true) {
            powers.push(`privileged ${c.role} '${c.name}'`);
        }
    }
    for (const field of ["hostPID", "hostIPC", "hostNetwork"]) {
        if (spec[field] === true) {
            powers.push(field);
        }
    }
    if (powers.length === 0) {
        return [];
    }

    const rawNamespace = dig(resource.props, "metadata", "namespace");
    if (isUnknown(rawNamespace)) {
        return []; // decided once the namespace is known
    }
    const namespace = str(rawNamespace);
    if (namespace === params.namespace) {
        return [];
    }
    const where =
        namespace === undefined || namespace === ""
            ? "has no namespace (the provider's default, usually 'default')"
            : `is in namespace '${namespace}'`;
    return [
        `${describe(resource)} ${where} and uses ${listText(powers)}: such pods can reach every disk and ` +
            `process of their node, so they belong only in the storage namespace '${params.namespace}', where ` +
            `who may create pods is restricted. Deploy it in '${params.namespace}' (zcloud-storage:namespace), ` +
            "or set this policy's namespace parameter to the storage namespace you use.",
    ];
}

/**
 * A Namespace that admits privileged pods (Pod Security `enforce: privileged`, as the storage
 * namespace does) other than the storage namespace of the pack's config. This is also how a move
 * of zcloud-storage:namespace shows: the pack cannot see the old state, but its config names the
 * namespace the stack runs in, so a move passes only once that parameter is changed on purpose.
 */
export function checkPrivilegedNamespaceObject(resource: PlannedResource, params: PolicyParams): string[] {
    const name = str(dig(resource.props, "metadata", "name"));
    const level = dig(resource.props, "metadata", "labels", ENFORCE_LABEL);
    if (name === undefined || level !== "privileged" || name === params.namespace) {
        return [];
    }
    return [
        `Namespace '${name}' admits privileged pods (${ENFORCE_LABEL}=privileged), but the storage namespace of this ` +
            `pack is '${params.namespace}'. If zcloud-storage:namespace was changed from '${params.namespace}' to '${name}', ` +
            `pulumi up replaces the Namespace: it deletes '${params.namespace}' with everything in it, including the ` +
            "Secrets that existing volumes use, and nothing recreates them there. Keep zcloud-storage:namespace " +
            `'${params.namespace}'; to move on purpose, set this policy's namespace parameter to '${name}' in the pack's config.`,
    ];
}
