import { containersOf, describe, dig, isUnknown, listText, PlannedResource, PolicyParams, podSpecOf, str } from "../model";

/**
 * storage-privileged-namespace: privileged containers, hostPID, hostIPC or hostNetwork pods only in
 * the storage namespace.
 */
export function checkPrivilegedNamespace(resource: PlannedResource, params: PolicyParams): string[] {
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
