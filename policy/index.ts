// The CrossGuard entry point: `pulumi preview --policy-pack policy`. This is the only place that
// constructs the PolicyPack (constructing it starts the policy server); the policies themselves
// are the pure functions of ./policies, shared with the offline plan.
import {
    PolicyPack,
    ResourceValidationPolicy,
    StackValidationPolicy,
    UnknownValueError,
} from "@pulumi/policy";

import { DEFAULT_PARAMS, paramProblem, PlannedResource, PolicyParams, UNKNOWN } from "./model";
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

/**
 * One policy's parameters from the pack's own config (--policy-pack-config, or the policy
 * group's), never the stack's; the others keep their defaults.
 */
function paramsFrom(policy: string, config: Record<string, unknown>): PolicyParams {
    const params: Record<string, unknown> = { ...DEFAULT_PARAMS };
    for (const name of Object.keys(DEFAULT_PARAMS)) {
        if (config[name] === undefined) continue;
        const problem = paramProblem(name, config[name]);
        if (problem) {
            throw new Error(`${policy}.${name}: ${problem}`);
        }
        params[name] = config[name];
    }
    return params as unknown as PolicyParams;
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
                for (const finding of def.check(resources, paramsFrom(def.name, args.getConfig()))) {
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
            for (const message of def.check(resource, paramsFrom(def.name, args.getConfig()))) {
                reportViolation(message);
            }
        },
    };
}

new PolicyPack(PACK_NAME, {
    description: "zcloud-storage guard rails: node and disk exclusivity, pinned images, no secrets in clear, privileged pods confined to the storage namespace, monitoring on in production.",
    policies: POLICIES.map(toCrossGuard),
});
