import { z } from "zod";
import { ConfigIssue, keyPath } from "./errors";
import { CephFsConfig, IscsiConfig, StackModel, defaultNamespace } from "./model";
import { allRules, configWarnings } from "./rules";
import { StackParsed, cephfsSchema, iscsiSchema, lvmSchema, nfsSchema, nodeSchema, stackSchema } from "./schema";
import { didYouMean } from "./suggest";

export interface ParseOptions {
    /**
     * Top-level keys whose value is a Pulumi secret (`secure:` somewhere inside). When given, a
     * secret leaf (ssh.privateKey, iscsi chap.password, ...) under a key that is not secret is an
     * error: it would sit in the stack file and the state in clear text.
     */
    secretKeys?: ReadonlySet<string>;
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

function describeValue(value: unknown): string {
    if (value === null) {
        return "null";
    }
    if (Array.isArray(value)) {
        return "a list";
    }
    if (typeof value === "object") {
        return "a map";
    }
    return `${typeof value} ${JSON.stringify(value)}`;
}

const unknownKeysMarker = "\u0000unknown-keys:";

/** Messages for the issues zod words generically; rules with their own message keep it. */
const errorMap: z.core.$ZodErrorMap = (issue) => {
    if (issue.code === "invalid_type") {
        if (issue.input === undefined) {
            return "is required";
        }
        return `must be ${typeWords[issue.expected] ?? issue.expected}, not ${describeValue(issue.input)}`;
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

function toIssues(error: z.ZodError, prefix: PropertyKey[]): ConfigIssue[] {
    return error.issues.flatMap((issue) => {
        const path = [...prefix, ...issue.path];
        if (issue.code === "unrecognized_keys" && issue.message.startsWith(unknownKeysMarker)) {
            const allowed = JSON.parse(issue.message.slice(unknownKeysMarker.length)) as string[];
            return issue.keys.map((key) => unknownKeyIssue(path, key, allowed));
        }
        return [{ path: keyPath(path), message: issue.message }];
    });
}

function parseWith<T extends z.ZodType>(schema: T, value: unknown, prefix: PropertyKey[], issues: ConfigIssue[]): z.output<T> | undefined {
    const result = schema.safeParse(value, { error: errorMap });
    if (result.success) {
        return result.data;
    }
    issues.push(...toIssues(result.error, prefix));
    return undefined;
}

/**
 * Parses sections and list items one by one, so one bad item does not hide the errors of the
 * others: cross-key rules then run over every item whose shape is valid.
 */
function parseSections(values: Record<string, unknown>, issues: ConfigIssue[]): StackParsed {
    const shape = stackSchema.shape;
    const allowed = Object.keys(shape);
    for (const key of Object.keys(values)) {
        if (!(key in shape)) {
            issues.push(unknownKeyIssue([], key, allowed));
        }
    }
    const section = <K extends "namespace" | "imageRegistry" | "ssh">(key: K) =>
        parseWith(shape[key] as z.ZodType, values[key], [key], issues) as z.output<(typeof shape)[K]> | undefined;
    const nodes: StackParsed["nodes"] = {};
    const rawNodes = values.nodes ?? {};
    if (typeof rawNodes !== "object" || rawNodes === null || Array.isArray(rawNodes)) {
        issues.push({ path: "nodes", message: `must be a map of node name to { address }, not ${describeValue(rawNodes)}` });
    } else {
        for (const [name, node] of Object.entries(rawNodes)) {
            const parsed = parseWith(nodeSchema, node, ["nodes", name], issues);
            if (parsed) {
                nodes[name] = parsed;
            }
        }
    }
    const lists = {} as { [K in ListKey]: z.output<(typeof listSchemas)[K]>[] };
    for (const key of Object.keys(listSchemas) as ListKey[]) {
        const raw = values[key] ?? [];
        if (!Array.isArray(raw)) {
            issues.push({ path: key, message: `must be a list of ${key} storages, not ${describeValue(raw)}` });
            lists[key] = [];
            continue;
        }
        // Invalid items leave holes, so the rules (forEach/map/flatMap skip holes) keep the
        // original indexes in their paths.
        const items: unknown[] = [];
        raw.forEach((item, i) => {
            const parsed = parseWith(listSchemas[key] as z.ZodType, item, [key, i], issues);
            if (parsed !== undefined) {
                items[i] = parsed;
            }
        });
        lists[key] = items as never;
    }
    return {
        namespace: section("namespace") ?? defaultNamespace,
        imageRegistry: section("imageRegistry"),
        ssh: section("ssh"),
        nodes,
        ...lists,
    };
}

function secretLeafIssues(c: StackParsed, secretKeys: ReadonlySet<string>): ConfigIssue[] {
    const issues: ConfigIssue[] = [];
    const needSecret = (topKey: string, path: string, present: boolean) => {
        if (present && !secretKeys.has(topKey)) {
            issues.push({
                path,
                message: `is stored in clear text; set it as a secret: pulumi config set --secret --path ${path} (read the value from a file or stdin, not the command line)`,
            });
        }
    };
    needSecret("ssh", "ssh.privateKey", c.ssh?.privateKey !== undefined);
    needSecret("ssh", "ssh.bastion.privateKey", c.ssh?.bastion?.privateKey !== undefined);
    c.iscsi.forEach((s, i) => needSecret("iscsi", `iscsi[${i}].chap.password`, s.chap?.password !== undefined));
    return issues;
}

function toModel(c: StackParsed): StackModel {
    const cephfs: CephFsConfig[] = c.cephfs.map((s) => ({
        ...s,
        replicas: s.replicas ?? Math.min(3, Object.keys(s.hosts).length),
    }));
    const iscsi: IscsiConfig[] = c.iscsi.map(({ chap, ...s }) => ({
        ...s,
        chap: chap?.username !== undefined && chap.password !== undefined ? { username: chap.username, password: chap.password } : undefined,
    }));
    const ssh = c.ssh && {
        ...c.ssh,
        bastion: c.ssh.bastion && { ...c.ssh.bastion, user: c.ssh.bastion.user ?? c.ssh.user },
    };
    return { ...c, ssh, cephfs, iscsi };
}

/**
 * Validates a stack config given as its `zcloud-storage:` keys without the prefix
 * (`{ nodes: {...}, lvm: [...] }`). Pure: no Pulumi objects, nothing registered.
 */
export function parseStackConfig(values: Record<string, unknown>, options: ParseOptions = {}): ParseResult {
    const errors: ConfigIssue[] = [];
    const parsed = parseSections(values, errors);
    for (const rule of allRules) {
        errors.push(...rule(parsed));
    }
    if (options.secretKeys) {
        errors.push(...secretLeafIssues(parsed, options.secretKeys));
    }
    const warnings = configWarnings(parsed);
    return errors.length > 0 ? { errors, warnings } : { model: toModel(parsed), errors, warnings };
}
