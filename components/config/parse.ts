import { z } from "zod";
import { ConfigIssue, keyPath, pulumiCommand } from "./errors";
import { acceptKeyscanLines } from "./hostKeys";
import { Secrecy, isAtOrUnder, scrub, secureValueProblem, showValue } from "./secrets";
import { CephFsConfig, IscsiConfig, StackModel, defaultNamespace } from "./model";
import { AlertThresholds, AlertsInput, mergeThresholds, monitoringIssues, monitoringModel } from "./monitoring";
import { allRules, configWarnings } from "./rules";
import { SharableDriverType, sharingIssues, sharingWarnings } from "./sharing";
import { StackParsed, cephfsSchema, iscsiSchema, lvmSchema, nfsSchema, nodeSchema, stackSchema } from "./schema";
import { didYouMean } from "./suggest";

export interface ParseOptions {
    /**
     * Top-level keys whose value is a Pulumi secret (`secure:` somewhere inside). When given, a
     * secret leaf (ssh.privateKey, iscsi chap.password, ...) under a key that is not secret is an
     * error: it would sit in the stack file and the state in clear text.
     */
    secretKeys?: ReadonlySet<string>;
    /**
     * Key paths written as `secure:` values in the stack file (`ssh.privateKey`,
     * `iscsi[0].chap.password`). When given, each secret leaf is checked on its own: a clear one is
     * refused even when a sibling is a proper secret (the runtime only knows top-level keys).
     */
    securePaths?: readonly string[];
    /** The stack's name, for the fix commands messages give (`pulumi config set -s <stack>`). */
    stack?: string;
}

export interface ParseResult {
    /** Present only when there are no errors. */
    model?: StackModel;
    errors: ConfigIssue[];
    warnings: ConfigIssue[];
}

const listSchemas = { lvm: lvmSchema, cephfs: cephfsSchema, iscsi: iscsiSchema, nfs: nfsSchema } as const;
type ListKey = keyof typeof listSchemas;

/** Words for zod's type names in messages. */
const typeWords: Record<string, string> = {
    string: "a string",
    number: "a number",
    int: "a whole number",
    boolean: "true or false",
    array: "a list",
    object: "a map of keys",
    record: "a map of keys",
};

function describeValue(value: unknown, secret = false): string {
    const shown = showValue(value, secret);
    return value !== null && typeof value !== "object" && !secret ? `${typeof value} ${shown}` : shown;
}

const unknownKeysMarker = "\u0000unknown-keys:";

/** Messages for the issues zod words generically; rules with their own message keep it. */
const errorMap: z.core.$ZodErrorMap = (issue) => {
    if (issue.code === "invalid_type") {
        // The offending value is added by toIssues(), which knows whether its path is secret.
        return issue.input === undefined ? "is required" : `must be ${typeWords[issue.expected] ?? issue.expected}`;
    }
    if (issue.code === "unrecognized_keys") {
        // Carry the allowed keys to toIssues(), which words one issue per unknown key.
        const shape = (issue.inst as { _zod?: { def?: { shape?: object } } } | undefined)?._zod?.def?.shape ?? {};
        return unknownKeysMarker + JSON.stringify(Object.keys(shape));
    }
    return undefined;
};

function unknownKeyIssue(path: PropertyKey[], key: string, allowed: string[]): ConfigIssue {
    return {
        path: keyPath([...path, key]),
        message: `unknown key${didYouMean(key, allowed)} (known keys: ${allowed.join(", ")})`,
    };
}

/** A message about a plain value names it: `must be X` becomes `"v" is not X`, `must not be X` `"v" is X`. */
function withValue(message: string, input: unknown, secret: boolean): string {
    if (input === null || typeof input === "object" || input === undefined) {
        return message;
    }
    const [, not, rest] = /^must (not )?be (.*)$/s.exec(message) ?? [];
    return rest === undefined ? message : `${showValue(input, secret)} is ${not ? "" : "not "}${rest}`;
}

/**
 * One message per mistake: a misspelt key (`adress`) is reported as unknown with its did-you-mean,
 * not also as the missing key it stands for (`address: is required`).
 */
export function withoutMisspeltRequired(issues: ConfigIssue[]): ConfigIssue[] {
    const meant = new Set(
        issues.flatMap((i) => {
            const suggested = /^unknown key; did you mean "([^"]+)"\?/.exec(i.message)?.[1];
            return suggested === undefined ? [] : [keyPath([...parentPath(i.path), suggested])];
        }),
    );
    return issues.filter((i) => !(i.message === "is required" && meant.has(i.path)));
}

/** `nodes.n1.adress` -> the path parts of `nodes.n1` (as keyPath writes them). */
function parentPath(path: string): PropertyKey[] {
    const m = /^(.*?)(?:\.[^.[\]]+|\[\d+\])$/.exec(path);
    return m && m[1] ? [m[1]] : [];
}

function toIssues(error: z.ZodError, prefix: PropertyKey[], secrecy: Secrecy): ConfigIssue[] {
    return withoutMisspeltRequired(error.issues.flatMap((issue) => {
        const path = [...prefix, ...issue.path];
        if (issue.code === "unrecognized_keys" && issue.message.startsWith(unknownKeysMarker)) {
            const allowed = JSON.parse(issue.message.slice(unknownKeysMarker.length)) as string[];
            return issue.keys.map((key) => unknownKeyIssue(path, key, allowed));
        }
        const secret = secrecy.isSecret(keyPath(path));
        const input = (issue as { input?: unknown }).input;
        const message =
            issue.code === "invalid_type" && input !== undefined
                ? `${issue.message}, not ${describeValue(input, secret)}`
                : withValue(issue.message, input, secret);
        return [{ path: keyPath(path), message }];
    }));
}

function parseWith<T extends z.ZodType>(schema: T, value: unknown, prefix: PropertyKey[], ctx: ParseContext): z.output<T> | undefined {
    const result = schema.safeParse(value, { error: errorMap, reportInput: true });
    if (result.success) {
        return result.data;
    }
    ctx.issues.push(...toIssues(result.error, prefix, ctx.secrecy));
    return undefined;
}

interface ParseContext {
    issues: ConfigIssue[];
    secrecy: Secrecy;
}

/**
 * `__proto__` is an own key of a parsed stack file, yet zod's records and spread objects drop it
 * silently (it would set a prototype): a node named so would vanish from the plan. It is refused
 * where it stands; names such as `constructor` are plain names (see ownRecord).
 */
function protoKeyIssues(value: unknown, parts: PropertyKey[]): ConfigIssue[] {
    if (value === null || typeof value !== "object") {
        return [];
    }
    return Object.entries(value).flatMap(([k, v]) => {
        const here = [...parts, Array.isArray(value) ? Number(k) : k];
        return k === "__proto__"
            ? [{ path: keyPath(here), message: '"__proto__" is not a usable name: it is neither a Kubernetes node name nor a known key' }]
            : protoKeyIssues(v, here);
    });
}

/**
 * Parses sections and list items one by one, so one bad item does not hide the errors of the
 * others: cross-key rules then run over every item whose shape is valid.
 */
function parseSections(values: Record<string, unknown>, ctx: ParseContext): { parsed: StackParsed; declaredNodes: Set<string> } {
    const { issues } = ctx;
    const shape = stackSchema.shape;
    // configFiles is read (and removed) before validation (configFiles.ts); listed for did-you-mean.
    const allowed = [...Object.keys(shape), "configFiles"];
    for (const key of Object.keys(values)) {
        if (!Object.hasOwn(shape, key)) {
            issues.push(unknownKeyIssue([], key, allowed));
        }
    }
    const section = <K extends "namespace" | "imageRegistry" | "ssh" | "sharedResources" | "drivers" | "monitoring" | "leaderElection">(key: K) =>
        parseWith(shape[key] as z.ZodType, values[key], [key], ctx) as z.output<(typeof shape)[K]> | undefined;
    const nodes: StackParsed["nodes"] = ownRecord([]);
    // Every name under nodes, valid entry or not: an invalid entry is reported once, by itself.
    const declaredNodes = new Set<string>();
    const rawNodes = values.nodes ?? {};
    if (typeof rawNodes !== "object" || rawNodes === null || Array.isArray(rawNodes)) {
        issues.push({ path: "nodes", message: `must be a map of node name to { address }, not ${describeValue(rawNodes, ctx.secrecy.isSecret("nodes"))}` });
    } else {
        for (const [name, node] of Object.entries(rawNodes)) {
            declaredNodes.add(name);
            const parsed = name === "__proto__" ? undefined : parseWith(nodeSchema, node, ["nodes", name], ctx);
            if (parsed) {
                nodes[name] = parsed;
            }
        }
    }
    const lists = {} as { [K in ListKey]: z.output<(typeof listSchemas)[K]>[] };
    for (const key of Object.keys(listSchemas) as ListKey[]) {
        const raw = values[key] ?? [];
        if (!Array.isArray(raw)) {
            issues.push({ path: key, message: `must be a list of ${key} storages, not ${describeValue(raw, ctx.secrecy.isSecret(key))}` });
            lists[key] = [];
            continue;
        }
        // Invalid items leave holes, so the rules (forEach/map/flatMap skip holes) keep the
        // original indexes in their paths.
        const items: unknown[] = [];
        raw.forEach((item, i) => {
            const parsed = parseWith(listSchemas[key] as z.ZodType, item, [key, i], ctx);
            if (parsed !== undefined) {
                items[i] = parsed;
            }
        });
        lists[key] = items as never;
    }
    const parsed = {
        namespace: section("namespace") ?? defaultNamespace,
        imageRegistry: section("imageRegistry"),
        ssh: section("ssh"),
        nodes,
        ...lists,
        // Only when set: a stack without these keys parses to the same model as before they existed.
        ...present("sharedResources", section("sharedResources")),
        ...present("drivers", section("drivers")),
        ...present("monitoring", section("monitoring")),
        ...present("leaderElection", section("leaderElection")),
    };
    return { parsed, declaredNodes };
}

function present<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
    return value === undefined ? {} : ({ [key]: value } as Record<K, V>);
}

/**
 * A map keyed by names from the config, with no prototype: `hostKeys["constructor"]` is
 * undefined unless the config pins a key for a node named constructor.
 */
export function ownRecord<T>(entries: Iterable<readonly [string, T]>): Record<string, T> {
    const out = Object.create(null) as Record<string, T>;
    for (const [k, v] of entries) {
        out[k] = v;
    }
    return out;
}

/** Each secret leaf on its own: `secure:` itself or under a `secure:` value (or secret key). */
function secretLeafIssues(c: StackParsed, isSecure: (path: string) => boolean, stack?: string): ConfigIssue[] {
    const leaves = [
        ...(c.ssh?.privateKey !== undefined ? ["ssh.privateKey"] : []),
        ...(c.ssh?.bastion?.privateKey !== undefined ? ["ssh.bastion.privateKey"] : []),
        ...c.iscsi.flatMap((s, i) => (s.chap?.password !== undefined ? [`iscsi[${i}].chap.password`] : [])),
    ];
    return leaves
        .filter((path) => !isSecure(path))
        .map((path) => ({
            path,
            message: `is stored in clear text; set it as a secret: ${pulumiCommand("config set", stack, `--secret --path ${path}`)} (read the value from a file or stdin, not the command line)`,
        }));
}

/**
 * A storage's thresholds resolved (the stack's, then its own) while monitoring is on; with it off
 * no storage carries `alerts` (validation refuses them), so the model is as before monitoring.
 */
function resolveAlerts(stackAlerts: AlertThresholds | undefined) {
    return <T extends { alerts?: AlertsInput }>(s: T): Omit<T, "alerts"> & { alerts?: AlertThresholds } => {
        const { alerts: written, ...rest } = s;
        return stackAlerts ? { ...rest, alerts: mergeThresholds(stackAlerts, written) } : rest;
    };
}

function toModel(parsed: StackParsed): StackModel {
    const monitoring = parsed.monitoring && monitoringModel(parsed.monitoring);
    const c = { ...parsed, lvm: parsed.lvm.map(resolveAlerts(monitoring?.alerts)), cephfs: parsed.cephfs.map(resolveAlerts(monitoring?.alerts)), iscsi: parsed.iscsi.map(resolveAlerts(monitoring?.alerts)), nfs: parsed.nfs.map(resolveAlerts(monitoring?.alerts)) };
    const hosts = <T extends { hosts: Record<string, string[]> }>(s: T): T => ({ ...s, hosts: ownRecord(Object.entries(s.hosts)) });
    const cephfs: CephFsConfig[] = c.cephfs.map((s) => ({
        ...hosts(s),
        replicas: s.replicas ?? Math.min(3, Object.keys(s.hosts).length),
        replicasConfigured: s.replicas !== undefined,
    }));
    const iscsi: IscsiConfig[] = c.iscsi.map(({ chap, ...s }) => ({
        ...s,
        chap: chap?.username !== undefined && chap.password !== undefined ? { username: chap.username, password: chap.password } : undefined,
    }));
    const ssh = c.ssh && {
        ...c.ssh,
        hostKeys: ownRecord(Object.entries(c.ssh.hostKeys)),
        bastion: c.ssh.bastion && { ...c.ssh.bastion, user: c.ssh.bastion.user ?? c.ssh.user },
    };
    const { drivers, monitoring: _written, ...rest } = c;
    return {
        ...rest,
        ...present("drivers", drivers as SharableDriverType[] | undefined),
        ...present("monitoring", monitoring),
        nodes: ownRecord(Object.entries(c.nodes)),
        lvm: c.lvm.map(hosts),
        ssh,
        cephfs,
        iscsi,
    };
}

/**
 * Validates a stack config given as its `zcloud-storage:` keys without the prefix
 * (`{ nodes: {...}, lvm: [...] }`). Pure: no Pulumi objects, nothing registered.
 */
export function parseStackConfig(values: Record<string, unknown>, options: ParseOptions = {}): ParseResult {
    const { securePaths, secretKeys, stack } = options;
    const secrecy = new Secrecy(securePaths ?? [...(secretKeys ?? [])]);
    const protoIssues = protoKeyIssues(values, []);
    const ctx: ParseContext = { issues: [], secrecy };
    // A pasted ssh-keyscan line pins its key when its host part names the node.
    const keyscan = acceptKeyscanLines(values.ssh, values.nodes);
    ctx.issues.push(...keyscan.issues);
    const { parsed, declaredNodes } = parseSections(values.ssh === undefined ? values : { ...values, ssh: keyscan.ssh }, ctx);
    // A `__proto__` key is reported once, by protoKeyIssues, not again as an unknown key.
    const protoPaths = new Set(protoIssues.map((i) => i.path));
    const errors = [...protoIssues, ...ctx.issues.filter((i) => !protoPaths.has(i.path))];
    for (const rule of allRules) {
        errors.push(...rule(parsed, { declaredNodes, sshDeclared: values.ssh !== undefined, stack }));
    }
    errors.push(...sharingIssues(parsed));
    errors.push(...monitoringIssues(parsed, values.monitoring !== undefined));
    if (securePaths) {
        errors.push(...securePaths.flatMap((path) => {
            const message = secureValueProblem(path, stack);
            return message === undefined ? [] : [{ path, message }];
        }));
        errors.push(...secretLeafIssues(parsed, (path) => securePaths.some((p) => isAtOrUnder(path, p)), stack));
    } else if (secretKeys) {
        errors.push(...secretLeafIssues(parsed, (path) => secretKeys.has(path.replace(/[.[].*$/, "")), stack));
    }
    // Rules quote names and paths; none of them may carry a secret's text.
    const secrets = secrecy.secretStrings(values);
    const scrubbed = (issues: ConfigIssue[]) => issues.map((i) => ({ ...i, message: scrub(i.message, secrets) }));
    const warnings = scrubbed([...configWarnings(parsed), ...sharingWarnings(parsed)]);
    return errors.length > 0 ? { errors: scrubbed(errors), warnings } : { model: toModel(parsed), errors, warnings };
}
