// The CrossGuard entry point: `pulumi preview --policy-pack policy`. This is the only place that
// constructs the PolicyPack (constructing it starts the policy server); the policies themselves
// are the pure functions of ./policies, shared with the offline plan.
import {
    PolicyPack,
    ResourceValidationPolicy,
    StackValidationPolicy,
    UnknownValueError,
} from "@pulumi/policy";

import { DEFAULT_NAMESPACE, namespaceParamProblem, PlannedResource, PolicyParams, UNKNOWN } from "./model";
import { PACK_NAME, POLICIES, PolicyDef } from "./policies";

/**
 * Copies the server's props (a proxy that throws on every value unknown during preview) into plain
 * data with the engine's unknown marker in those places, so one unknown field does not stop a
 * policy from checking the rest.
 */
function plain(value: unknown): unknown {
    if (value === null || typeof value !== "object") {
        return value;
    }
    const read = (get: () => unknown): unknown => {
        try {
            return plain(get());
        } catch (e) {
            if (e instanceof UnknownValueError) {
                return UNKNOWN;
            }
            throw e;
        }
    };
    if (Array.isArray(value)) {
        const out: unknown[] = [];
        for (let i = 0; i < value.length; i++) {
            out.push(read(() => value[i]));
        }
        return out;
    }
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
        out[key] = read(() => (value as Record<string, unknown>)[key]);
    }
    return out;
}

/** The pack's own config (--policy-pack-config, or the policy group's), never the stack's. */
function paramsFrom(config: { namespace?: unknown }): PolicyParams {
    if (config.namespace === undefined) {
        return { namespace: DEFAULT_NAMESPACE };
    }
    const problem = namespaceParamProblem(config.namespace);
    if (problem) {
        throw new Error(`storage-privileged-namespace.namespace: ${problem}`);
    }
    return { namespace: config.namespace as string };
}

function toCrossGuard(def: PolicyDef): ResourceValidationPolicy | StackValidationPolicy {
    const common = {
        name: def.name,
        description: def.description,
        enforcementLevel: def.enforcementLevel,
        ...(def.configSchema ? { configSchema: def.configSchema } : {}),
    };
    if (def.kind === "stack") {
        return {
            ...common,
            validateStack: (args, reportViolation) => {
                const resources: PlannedResource[] = args.resources.map((r) => ({
                    type: r.type,
                    name: r.name,
                    urn: r.urn,
                    props: plain(r.props) as Record<string, unknown>,
                }));
                for (const finding of def.check(resources, paramsFrom(args.getConfig()))) {
                    reportViolation(finding.message, finding.urn);
                }
            },
        };
    }
    return {
        ...common,
        validateResource: (args, reportViolation) => {
            const resource: PlannedResource = {
                type: args.type,
                name: args.name,
                urn: args.urn,
                props: plain(args.props) as Record<string, unknown>,
            };
            for (const message of def.check(resource, paramsFrom(args.getConfig()))) {
                reportViolation(message);
            }
        },
    };
}

new PolicyPack(PACK_NAME, {
    description: "zcloud-storage guard rails: node and disk exclusivity, pinned images, no secrets in clear, privileged pods confined to the storage namespace.",
    policies: POLICIES.map(toCrossGuard),
});
