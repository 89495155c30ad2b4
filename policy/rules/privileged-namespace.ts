import { containersOf, describe, dig, isUnknown, listText, PlannedResource, PolicyParams, podSpecOf, str } from "../model";

const NAMESPACE_TYPE = "kubernetes:core/v1:Namespace";
const ENFORCE_LABEL = "pod-security.kubernetes.io/enforce";

/**
 * storage-privileged-namespace: privileged containers, hostPID, hostIPC or hostNetwork pods only in
 * the storage namespace.
 */
export function checkPrivilegedNamespace(resource: PlannedResource, params: Pick<PolicyParams, "namespace">): string[] {
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
export function checkPrivilegedNamespaceObject(resource: PlannedResource, params: Pick<PolicyParams, "namespace">): string[] {
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

/** The pack config that makes `namespace` the storage namespace of this policy, as one JSON line. */
export function namespaceFix(namespace: string): string {
    return JSON.stringify({ "storage-privileged-namespace": { namespace } });
}

/**
 * The cause of a message of this policy: the namespace the stack's privileged objects are in,
 * other than the pack's. A namespace move reports the Namespace and every privileged workload; the
 * plan prints it once, with the pack config that allows the move on purpose.
 */
export function privilegedNamespaceCause(message: string): { key: string; message: (names: string[]) => string } | undefined {
    const ns = /^Namespace '([^']+)' admits privileged pods/.exec(message)?.[1] ?? / is in namespace '([^']+)' and uses /.exec(message)?.[1];
    const pack = /storage namespace of this pack is '([^']+)'/.exec(message)?.[1] ?? /belong only in the storage namespace '([^']+)'/.exec(message)?.[1];
    if (ns === undefined || pack === undefined) {
        return undefined;
    }
    return {
        key: `${ns} ${pack}`,
        message: (names) =>
            `${names.length} resources (${names.join(", ")}) put privileged pods in namespace '${ns}', but the storage ` +
            `namespace of this pack is '${pack}'. If zcloud-storage:namespace was changed from '${pack}' to '${ns}', ` +
            `pulumi up replaces the Namespace: it deletes '${pack}' with everything in it, including the Secrets that ` +
            `existing volumes use. Keep zcloud-storage:namespace '${pack}'; to move on purpose, give the pack ` +
            `this config (a file passed with --policy-pack-config, to npm run plan and to pulumi preview/up --policy-pack policy):\n` +
            `  ${namespaceFix(ns)}`,
    };
}
