import { ConfigIssue, pulumiCommand } from "./errors";
import { ParseOptions, ParseResult, parseStackConfig } from "./parse";
import { isKubeconfigContent } from "./formats";
import { offlineSecret } from "./secrets";
import { didYouMean } from "./suggest";

/**
 * Full config keys (`zcloud-storage:lvm`, `kubernetes:context`). The Pulumi CLI hands every key of
 * a stack to the program, whatever its namespace, so a typo (`zcloud-storge:lvm`) would make a
 * storage invisible and its deletion planned: the program refuses keys it does not know.
 */

/** The project's config namespace (`zcloud-storage:nodes`, ...). */
export const configNamespace = "zcloud-storage";

/**
 * Namespaces a stack may set and the keys each allows (`undefined`: any key). The command and
 * random providers take no config; `pulumi:` keys belong to the engine.
 */
export const knownConfigKeys: Readonly<Record<string, readonly string[] | undefined>> = {
    [configNamespace]: undefined, // checked key by key by the schema
    pulumi: undefined,
    // @pulumi/kubernetes provider config (ProviderArgs of the pinned version).
    kubernetes: [
        "alwaysRender", "cluster", "clusterIdentifier", "context", "deleteUnreachable", "enableConfigMapMutable",
        "enablePatchForce", "enableSecretMutable", "enableServerSideApply", "helmReleaseSettings", "kubeClientSettings",
        "kubeconfig", "namespace", "renderYamlToDirectory", "skipUpdateUnreachable", "suppressDeprecationWarnings",
        "suppressHelmHookWarnings", "upsertExistingObjects",
    ],
};

/**
 * A config key as Pulumi reads it. The CLI puts a key without a namespace in the project's (`lvm`
 * is `zcloud-storage:lvm`; `project` names another program's project), and both the CLI
 * (config.ParseKey) and the SDK (cleanKey in runtime/config) read the old form
 * `<namespace>:config:<name>` as `<namespace>:<name>`.
 */
export function canonicalConfigKey(key: string, project: string = configNamespace): string {
    const sep = key.indexOf(":");
    if (sep < 0) {
        return `${project}:${key}`;
    }
    const legacy = "config:";
    return sep > 0 && key.startsWith(legacy, sep + 1) ? `${key.slice(0, sep)}:${key.slice(sep + 1 + legacy.length)}` : key;
}

/**
 * Keys written differently that Pulumi reads as one (`zcloud-storage:config:lvm` and
 * `zcloud-storage:lvm`, `lvm` and `zcloud-storage:lvm`): one value silently replaces the other, so
 * a whole storage could vanish from the plan, or a clear secret hide behind a `secure:` twin.
 * Each pair is reported once, at the later key.
 */
export function foldedKeyCollisions(keys: readonly string[], project: string = configNamespace): ConfigIssue[] {
    const first = new Map<string, string>();
    const issues: ConfigIssue[] = [];
    for (const key of keys) {
        const canonical = canonicalConfigKey(key, project);
        const earlier = first.get(canonical);
        if (earlier === undefined) {
            first.set(canonical, key);
        } else {
            issues.push({
                path: key,
                message: `is the same key as ${earlier} (Pulumi reads both as ${canonical}), so one value would silently replace the other; keep only one of them`,
            });
        }
    }
    return issues;
}

function splitKey(fullKey: string): [string, string] {
    const sep = fullKey.indexOf(":");
    return sep < 0 ? ["", fullKey] : [fullKey.slice(0, sep), fullKey.slice(sep + 1)];
}

/** One issue per key outside knownConfigKeys, with the closest known key as a suggestion. */
export function unknownConfigKeys(fullKeys: readonly string[]): ConfigIssue[] {
    const namespaces = Object.keys(knownConfigKeys);
    return fullKeys.flatMap((fullKey) => {
        const [namespace, key] = splitKey(fullKey);
        if (!Object.hasOwn(knownConfigKeys, namespace)) {
            const guesses = namespaces.map((n) => `${n}:${key}`);
            return [
                {
                    path: fullKey,
                    message: `unknown config namespace "${namespace}"${didYouMean(fullKey, guesses)} (known namespaces: ${namespaces.join(", ")}); the program would ignore this key`,
                },
            ];
        }
        const keys = knownConfigKeys[namespace];
        if (keys === undefined || keys.includes(key)) {
            return [];
        }
        return [
            {
                path: fullKey,
                message: `unknown ${namespace} config key${didYouMean(key, keys).replace(/"(.+)"/, `"${namespace}:$1"`)} (known keys: ${keys.join(", ")})`,
            },
        ];
    });
}

/**
 * The storage types whose nodes get a label command (components/node/nodeLabel.ts: kubectl where
 * `pulumi up` runs), by their config key. CephFS's drains and gates run kubectl there too.
 */
export const kubectlStorageKeys = ["lvm", "cephfs", "iscsi"] as const;

/**
 * `kubernetes:` values the node label commands (and the CephFS drains and gates) hand to kubectl,
 * checked while a storage with nodes (lvm, cephfs, iscsi) exists: a secret context or kubeconfig
 * path would sit in their arguments (state, preview, ps), so they are refused as secrets (a secret
 * kubeconfig content travels in the commands' secret environment); `kubernetes:cluster`, which
 * kubectl is not given, is refused.
 */
function kubectlTargetIssues(all: Record<string, unknown>, isSecret: (fullKey: string) => boolean): ConfigIssue[] {
    const labelled = kubectlStorageKeys.some((k) => {
        const storages = all[`${configNamespace}:${k}`];
        return Array.isArray(storages) && storages.length > 0;
    });
    if (!labelled) {
        return [];
    }
    const issues: ConfigIssue[] = [];
    if (isSecret("kubernetes:context")) {
        issues.push({
            path: "kubernetes:context",
            message: "is a secure: value, but the node label commands (and the CephFS drains) pass the context to kubectl as --context in their arguments (state, preview, ps); a context name is not a credential, so set it in clear",
        });
    }
    // The provider's `cluster` overrides its context's cluster; kubectl where `pulumi up` runs
    // knows nothing of it: labels, gates and drains would act on the context's own cluster.
    const cluster = all["kubernetes:cluster"];
    if (cluster !== undefined && cluster !== "") {
        issues.push({
            path: "kubernetes:cluster",
            message: "is set, but the node label commands (and the CephFS gates and drains) run kubectl with kubernetes:context and kubernetes:kubeconfig only, so node labels could land on another cluster than the provider's; remove it and name the cluster with kubernetes:context (a context of that cluster) or kubernetes:kubeconfig",
        });
    }
    const kubeconfig = all["kubernetes:kubeconfig"];
    // Offline the ciphertext cannot be read: path or content is only known to the program itself.
    const known = typeof kubeconfig === "string" && kubeconfig !== offlineSecret("kubernetes:kubeconfig");
    if (isSecret("kubernetes:kubeconfig") && known && !isKubeconfigContent(kubeconfig)) {
        issues.push({
            path: "kubernetes:kubeconfig",
            message: "is a secure: value that names a file, but the node label commands (and the CephFS drains) pass a kubeconfig path to kubectl in their arguments (state, preview, ps); set the path in clear (a path is not a credential) or make the file's content the secret",
        });
    }
    return issues;
}

export interface FullParseOptions {
    /** Full keys whose value the runtime marks secret. */
    secretKeys?: ReadonlySet<string>;
    /** Full key paths of `secure:` values (`zcloud-storage:ssh.privateKey`), from the stack file. */
    securePaths?: readonly string[];
    /** Keys as the runtime was handed them, before the SDK folded `<ns>:config:<name>` ones. */
    rawKeys?: readonly string[];
    /** The stack's name, for the fix commands messages give (`pulumi config set -s <stack>`). */
    stack?: string;
}

const ownPrefix = `${configNamespace}:`;

/**
 * Validates every key of a stack (full keys, values as JSON-parsed): namespaces and provider keys
 * here, `zcloud-storage:` keys by parseStackConfig. A stack with no `zcloud-storage:` key at all
 * is refused: planning it would delete every storage the stack holds.
 */
export function parseFullConfig(all: Record<string, unknown>, options: FullParseOptions = {}): ParseResult {
    const keys = Object.keys(all);
    const isSecret = (fullKey: string) => (options.securePaths ?? [...(options.secretKeys ?? [])]).includes(fullKey);
    const issues = [...foldedKeyCollisions(options.rawKeys ?? []), ...unknownConfigKeys(keys), ...kubectlTargetIssues(all, isSecret)];
    const own = keys.filter((k) => k.startsWith(ownPrefix));
    if (own.length === 0) {
        issues.push({
            path: "",
            message: `the stack sets no ${ownPrefix} key, so the plan would delete every storage of the stack; check the stack file's config: map (to remove every storage on purpose, set ${ownPrefix}lvm: [] and the other types, or run ${pulumiCommand("destroy", options.stack)})`,
        });
    }
    const strip = (k: string) => k.slice(ownPrefix.length);
    const parseOptions: ParseOptions = {
        ...(options.secretKeys ? { secretKeys: new Set([...options.secretKeys].filter((k) => k.startsWith(ownPrefix)).map(strip)) } : {}),
        ...(options.securePaths ? { securePaths: options.securePaths.filter((k) => k.startsWith(ownPrefix)).map(strip) } : {}),
        ...(options.stack ? { stack: options.stack } : {}),
    };
    const result = parseStackConfig(Object.fromEntries(own.map((k) => [strip(k), all[k]])), parseOptions);
    return issues.length === 0 ? result : { errors: [...issues, ...result.errors], warnings: result.warnings };
}
