// The zcloud-storage policy pack as pure functions: the policies, their metadata, the pack config,
// and `evaluatePolicies`, the entry point of the offline plan. Only policy/index.ts constructs the
// PolicyPack (constructing it starts a server); nothing here imports a value from @pulumi/policy.
import type { PolicyConfigSchema } from "@pulumi/policy";

import { FormatOptions, ViolationCause, formatViolationsWith } from "./format";
import {
    DEFAULT_NAMESPACE,
    DEFAULT_PARAMS,
    DEFAULT_PRODUCTION_STACKS,
    paramProblem,
    EnforcementLevel,
    Finding,
    PlannedResource,
    PolicyParams,
    Violation,
} from "./model";
import { checkDeviceSingleClaim } from "./rules/device-single-claim";
import { checkImagePinned } from "./rules/image-pinned";
import { checkMonitoringOn } from "./rules/monitoring-on";
import { checkNodeExclusive } from "./rules/node-exclusive";
import { checkNoSecretLiterals } from "./rules/no-secret-literals";
import { checkPrivilegedNamespace, privilegedNamespaceCause } from "./rules/privileged-namespace";
import { checkSingleDefaultClass } from "./rules/single-default-class";
import { checkSshHostKeyPinned, sshHostKeyCause } from "./rules/ssh-host-key-pinned";

export type { EnforcementLevel, Finding, PlannedResource, PolicyParams, Violation } from "./model";
export { checkDeviceSingleClaim } from "./rules/device-single-claim";
export { checkImagePinned, parseImage, unpinnedReason } from "./rules/image-pinned";
export { checkMonitoringOn, productionPattern, stackOfUrn } from "./rules/monitoring-on";
export { checkNodeExclusive } from "./rules/node-exclusive";
export { checkNoSecretLiterals } from "./rules/no-secret-literals";
export { checkPrivilegedNamespace, checkPrivilegedNamespaceObject } from "./rules/privileged-namespace";
export { checkSingleDefaultClass } from "./rules/single-default-class";
export { checkSshHostKeyPinned } from "./rules/ssh-host-key-pinned";
export { displayTypeName, splitUrn } from "./format";
export type { FormatOptions } from "./format";

/** Name of the pack (PolicyPack name) and its version (policy/package.json, checked by a test). */
export const PACK_NAME = "zcloud-storage-policy";
export const PACK_VERSION = "0.1.0";

export const POLICY_NAMES = [
    "storage-node-exclusive",
    "storage-device-single-claim",
    "storage-image-pinned",
    "storage-no-secret-literals",
    "storage-privileged-namespace",
    "storage-single-default-class",
    "storage-ssh-host-key-pinned",
    "storage-monitoring-on",
] as const;
export type PolicyName = (typeof POLICY_NAMES)[number];

interface PolicyBase {
    name: PolicyName;
    description: string;
    enforcementLevel: EnforcementLevel;
    configSchema?: PolicyConfigSchema;
}

/** Checks one resource (a CrossGuard validateResource); returns the messages. */
export interface ResourcePolicyDef extends PolicyBase {
    kind: "resource";
    check: (resource: PlannedResource, params: PolicyParams) => string[];
}

/** Checks all resources together (a CrossGuard validateStack). */
export interface StackPolicyDef extends PolicyBase {
    kind: "stack";
    check: (resources: PlannedResource[], params: PolicyParams) => Finding[];
}

export type PolicyDef = ResourcePolicyDef | StackPolicyDef;

const namespaceSchema: PolicyConfigSchema = {
    properties: {
        namespace: {
            type: "string",
            minLength: 1,
            default: DEFAULT_NAMESPACE,
            description:
                "The storage namespace (zcloud-storage:namespace): the only one where privileged, hostPID, hostIPC or hostNetwork pods may run, and the only privileged Namespace, so a stack that moves zcloud-storage:namespace fails until this is changed too. Set here, in the pack's config, never read from the stack the pack checks; not a system namespace.",
        },
    },
};

const productionStacksSchema: PolicyConfigSchema = {
    properties: {
        productionStacks: {
            type: "array",
            items: { type: "string", pattern: "^[A-Za-z0-9_.*-]{1,100}$" },
            default: [...DEFAULT_PRODUCTION_STACKS],
            description:
                "Stack names this policy counts as production; `*` stands for any characters (\"prod-*\"). Other stacks are not checked. An empty list turns the policy off everywhere.",
        },
    },
};

/** The pack, in the order the CLI and the plan report it. */
export const POLICIES: readonly PolicyDef[] = [
    {
        name: "storage-node-exclusive",
        kind: "stack",
        description: "A node serves at most one of lvm and cephfs, and at most one storage of each type.",
        enforcementLevel: "mandatory",
        check: (resources) => checkNodeExclusive(resources),
    },
    {
        name: "storage-device-single-claim",
        kind: "stack",
        description: "A device of a node is claimed by at most one storage.",
        enforcementLevel: "mandatory",
        check: (resources) => checkDeviceSingleClaim(resources),
    },
    {
        name: "storage-image-pinned",
        kind: "resource",
        description: "Every container image is pinned to a tag other than latest, or to a digest.",
        enforcementLevel: "mandatory",
        check: (resource) => checkImagePinned(resource),
    },
    {
        name: "storage-no-secret-literals",
        kind: "resource",
        description: "No key material or passwords in ConfigMaps, in literal env values, or in clear in a remote command (stdin, command line).",
        enforcementLevel: "mandatory",
        check: (resource) => checkNoSecretLiterals(resource),
    },
    {
        name: "storage-privileged-namespace",
        kind: "resource",
        description: "Privileged containers, host-namespace pods and privileged Namespaces only in the storage namespace (a move of it needs this policy's namespace parameter changed).",
        enforcementLevel: "mandatory",
        configSchema: namespaceSchema,
        check: (resource, params) => checkPrivilegedNamespace(resource, params),
    },
    {
        name: "storage-single-default-class",
        kind: "stack",
        description: "At most one StorageClass is the default.",
        enforcementLevel: "mandatory",
        check: (resources) => checkSingleDefaultClass(resources),
    },
    {
        name: "storage-ssh-host-key-pinned",
        kind: "resource",
        description: "Remote commands pin the node's SSH host key.",
        enforcementLevel: "advisory",
        check: (resource) => checkSshHostKeyPinned(resource),
    },
    {
        name: "storage-monitoring-on",
        kind: "stack",
        description: "A production stack that deploys storages deploys their alert rules (zcloud-storage:monitoring).",
        enforcementLevel: "advisory",
        configSchema: productionStacksSchema,
        check: (resources, params) => checkMonitoringOn(resources, params),
    },
];

export function policyByName(name: string): PolicyDef | undefined {
    return POLICIES.find((p) => p.name === name);
}

// ---- Pack config (mirrors `--policy-pack-config`) ------------------------------------------

/** Levels the CLI accepts; "remediate" has no remediation here and counts as mandatory. */
export type ConfigEnforcementLevel = EnforcementLevel | "remediate";
type PolicyConfigValue = ConfigEnforcementLevel | { enforcementLevel?: ConfigEnforcementLevel };

/**
 * The JSON given to `pulumi preview --policy-pack-config <file>`: "all" sets every policy's level,
 * a policy's own entry overrides it; parameters sit next to `enforcementLevel`.
 */
export interface PackConfig {
    all?: PolicyConfigValue;
    "storage-node-exclusive"?: PolicyConfigValue;
    "storage-device-single-claim"?: PolicyConfigValue;
    "storage-image-pinned"?: PolicyConfigValue;
    "storage-no-secret-literals"?: PolicyConfigValue;
    "storage-privileged-namespace"?:
        | ConfigEnforcementLevel
        | { enforcementLevel?: ConfigEnforcementLevel; namespace?: string };
    "storage-single-default-class"?: PolicyConfigValue;
    "storage-ssh-host-key-pinned"?: PolicyConfigValue;
    "storage-monitoring-on"?:
        | ConfigEnforcementLevel
        | { enforcementLevel?: ConfigEnforcementLevel; productionStacks?: string[] };
}

export interface ResolvedPackConfig {
    levels: Record<PolicyName, EnforcementLevel>;
    params: PolicyParams;
}

export class PackConfigError extends Error {
    constructor(readonly problems: string[]) {
        super(`invalid policy pack config:\n  ${problems.join("\n  ")}`);
        this.name = "PackConfigError";
    }
}

const LEVELS: ReadonlySet<string> = new Set(["mandatory", "advisory", "disabled", "remediate"]);

function toLevel(value: unknown, where: string, problems: string[]): EnforcementLevel | undefined {
    if (value === undefined) {
        return undefined;
    }
    if (typeof value !== "string" || !LEVELS.has(value)) {
        problems.push(`${where}: ${JSON.stringify(value)} is not an enforcement level (mandatory, advisory, disabled)`);
        return undefined;
    }
    return value === "remediate" ? "mandatory" : (value as EnforcementLevel);
}

/** Applies defaults, "all" and per-policy entries; throws PackConfigError listing every problem. */
export function resolvePackConfig(config: PackConfig | Record<string, unknown> = {}): ResolvedPackConfig {
    const problems: string[] = [];
    const levels = {} as Record<PolicyName, EnforcementLevel>;
    const params: PolicyParams = { ...DEFAULT_PARAMS };
    const entries = config as Record<string, unknown>;

    const levelOf = (key: string): EnforcementLevel | undefined => {
        const entry = entries[key];
        if (entry === undefined || typeof entry === "string") {
            return toLevel(entry, key, problems);
        }
        if (entry === null || typeof entry !== "object" || Array.isArray(entry)) {
            problems.push(`${key}: must be an enforcement level or an object`);
            return undefined;
        }
        return toLevel((entry as Record<string, unknown>).enforcementLevel, `${key}.enforcementLevel`, problems);
    };

    const all = levelOf("all");
    for (const key of Object.keys(entries)) {
        if (key !== "all" && !policyByName(key)) {
            problems.push(`${key}: no such policy in ${PACK_NAME} (policies: ${POLICY_NAMES.join(", ")})`);
        }
    }
    for (const policy of POLICIES) {
        levels[policy.name] = levelOf(policy.name) ?? all ?? policy.enforcementLevel;
        const entry = entries[policy.name];
        if (entry === null || typeof entry !== "object" || Array.isArray(entry)) {
            continue;
        }
        const allowed = Object.keys(policy.configSchema?.properties ?? {});
        for (const [param, value] of Object.entries(entry as Record<string, unknown>)) {
            if (param === "enforcementLevel") {
                continue;
            }
            if (!allowed.includes(param)) {
                problems.push(
                    `${policy.name}.${param}: unknown parameter` +
                        (allowed.length ? ` (parameters: ${allowed.join(", ")})` : " (this policy has none)"),
                );
            } else {
                const problem = paramProblem(param, value);
                if (problem) {
                    problems.push(`${policy.name}.${param}: ${problem}`);
                } else {
                    (params as unknown as Record<string, unknown>)[param] = value;
                }
            }
        }
    }
    if (problems.length > 0) {
        throw new PackConfigError(problems);
    }
    return { levels, params };
}

// ---- Evaluation ------------------------------------------------------------------------------

/**
 * Runs every enabled policy over the planned resources, as `pulumi preview --policy-pack policy`
 * would with the same config. Disabled policies report nothing; advisory ones report without
 * failing (see hasMandatoryViolations).
 */
export function evaluatePolicies(resources: PlannedResource[], config?: PackConfig): Violation[] {
    const { levels, params } = resolvePackConfig(config);
    const violations: Violation[] = [];
    for (const policy of POLICIES) {
        const enforcementLevel = levels[policy.name];
        if (enforcementLevel === "disabled") {
            continue;
        }
        if (policy.kind === "stack") {
            for (const f of policy.check(resources, params)) {
                violations.push({ policy: policy.name, enforcementLevel, ...(f.urn ? { urn: f.urn } : {}), message: f.message });
            }
        } else {
            for (const resource of resources) {
                for (const message of policy.check(resource, params)) {
                    violations.push({ policy: policy.name, enforcementLevel, urn: resource.urn, message });
                }
            }
        }
    }
    return violations;
}

/** True when a violation should fail the plan (exit code ≠ 0), as it fails `pulumi preview`. */
export function hasMandatoryViolations(violations: Violation[]): boolean {
    return violations.some((v) => v.enforcementLevel === "mandatory");
}

/**
 * Prints violations like the Pulumi CLI's "Policies:" block after `pulumi preview --policy-pack policy`
 * (each message preceded by its policy's description, as the policy server reports it).
 */
/** The shared cause of a violation, for the policies whose findings repeat one cause per resource. */
export function violationCause(v: Violation): ViolationCause | undefined {
    if (v.policy === "storage-ssh-host-key-pinned") return sshHostKeyCause(v.message);
    if (v.policy === "storage-privileged-namespace") return privilegedNamespaceCause(v.message);
    return undefined;
}

export function formatViolations(violations: Violation[], options: Partial<FormatOptions> = {}): string {
    return formatViolationsWith(
        violations,
        (name) => policyByName(name)?.description,
        { packName: PACK_NAME, packVersion: PACK_VERSION, ...options },
        violationCause,
    );
}
