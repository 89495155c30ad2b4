import { formatIssue } from "./errors";
import { canonicalConfigKey, configNamespace, foldedKeyCollisions } from "./namespaces";
import { offlineSecret } from "./secrets";
import { loadBoundedYaml, YamlError } from "./yaml";

/**
 * A stack file (`stacks/Pulumi.<stack>.yaml`) read as the Pulumi CLI hands it to the program,
 * plus what the CLI does not hand on: which leaves are `secure:` values (the runtime only marks
 * whole top-level keys secret).
 */
export interface StackDocument {
    /** Full keys (`zcloud-storage:nodes`) -> values; `secure:` leaves replaced by placeholders. */
    values: Record<string, unknown>;
    /** Full keys whose value holds a `secure:` leaf. */
    secretKeys: string[];
    /** Full key paths of the `secure:` leaves (`zcloud-storage:ssh.privateKey`). */
    securePaths: string[];
    /**
     * The `secure:` leaves that are placeholders, not ciphertexts (isPlaceholderCiphertext), each
     * as its full key and the path under it (`["zcloud-storage:iscsi", 0, "chap", "password"]`).
     */
    placeholders: PlaceholderSecret[];
}

/** A `secure:` leaf that holds a placeholder: the full key, then the keys and indexes under it. */
export type PlaceholderSecret = [string, ...Array<string | number>];

/**
 * What a stack file holds in place of a secret not set yet: the examples' and discover's
 * `v1:REPLACE-ME-WITH-pulumi-config-set-secret` (any text with REPLACE-ME in it, in any case), or
 * nothing at all. Neither decrypts, so `pulumi preview` fails on it; a real ciphertext (the
 * passphrase and cloud providers' `v1:<nonce>:<data>`, the Pulumi service's base64) never holds a
 * "-" and is never empty.
 */
export function isPlaceholderCiphertext(ciphertext: string): boolean {
    return ciphertext.trim() === "" || /replace-me/i.test(ciphertext);
}

export { offlineSecret };

export function isSecureValue(value: unknown): value is { secure: string } {
    return value !== null && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length === 1 && typeof (value as { secure?: unknown }).secure === "string";
}

/** Paths (under `path`) of the numbers in a value that JSON cannot hold (YAML's `.inf`, `-.inf`, `.nan`). */
export function nonFiniteLeaves(value: unknown, path: string): Array<{ path: string; value: number }> {
    if (typeof value === "number" && !Number.isFinite(value)) {
        return [{ path, value }];
    }
    if (value !== null && typeof value === "object") {
        return Object.entries(value).flatMap(([k, v]) => nonFiniteLeaves(v, Array.isArray(value) ? `${path}[${k}]` : `${path}.${k}`));
    }
    return [];
}

/**
 * YAML's `.inf`, `-.inf` and `.nan` are numbers JSON cannot hold, and Pulumi hands config to the
 * program as JSON: they would arrive as null (or stop the CLI), so they are refused by name.
 */
function nonFiniteNumberIssues(value: unknown, path: string): string[] {
    return nonFiniteLeaves(value, path).map((leaf) => {
        const spelled = Number.isNaN(leaf.value) ? ".nan (not a number)" : leaf.value > 0 ? ".inf (infinity)" : "-.inf (minus infinity)";
        return `${leaf.path}: ${spelled} is not a number a config value can hold (Pulumi passes config as JSON, which has no infinity or NaN); write a finite number`;
    });
}

/**
 * Replaces `secure:` ciphertexts by offline stand-ins and lists their paths (and, by their keys
 * and indexes, those that hold a placeholder).
 */
function stripSecure(value: unknown, path: string, securePaths: string[], at: PlaceholderSecret, placeholders: PlaceholderSecret[]): unknown {
    if (Array.isArray(value)) {
        return value.map((v, i) => stripSecure(v, `${path}[${i}]`, securePaths, [...at, i], placeholders));
    }
    if (isSecureValue(value)) {
        securePaths.push(path);
        if (isPlaceholderCiphertext(value.secure)) {
            placeholders.push(at);
        }
        return offlineSecret(path);
    }
    if (value !== null && typeof value === "object") {
        // defineProperty keeps a `__proto__` key an own key, for validation to refuse by name.
        const out: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(value)) {
            Object.defineProperty(out, k, { value: stripSecure(v, `${path}.${k}`, securePaths, [...at, k], placeholders), enumerable: true, writable: true, configurable: true });
        }
        return out;
    }
    return value;
}

/**
 * Parses a stack file's text; refuses a file without a `config:` map or with an empty one. A key
 * without a namespace is `project`'s, as the Pulumi CLI reads it (the offline plan of another
 * program's project, `--program`).
 */
export function readStackDocument(text: string, source: string, project: string = configNamespace): StackDocument {
    const doc = loadBoundedYaml(text, source);
    const config = (doc as { config?: unknown } | null)?.config;
    if (config === undefined || config === null) {
        throw new YamlError(`${source} has no config: map; a stack file holds its settings under config:`);
    }
    if (typeof config !== "object" || Array.isArray(config)) {
        throw new YamlError(`${source}: config must be a map of keys`);
    }
    if (Object.keys(config).length === 0) {
        throw new YamlError(`${source}: config is empty; a plan of it would delete every storage of the stack`);
    }
    const problems = [
        ...foldedKeyCollisions(Object.keys(config), project).map(formatIssue),
        ...Object.entries(config).flatMap(([key, value]) => nonFiniteNumberIssues(value, canonicalConfigKey(key, project))),
    ];
    if (problems.length > 0) {
        throw new YamlError(problems.map((problem) => `${source}: ${problem}`).join("\n"));
    }
    const values: Record<string, unknown> = {};
    const secretKeys: string[] = [];
    const securePaths: string[] = [];
    const placeholders: PlaceholderSecret[] = [];
    for (const [key, raw] of Object.entries(config)) {
        const fullKey = canonicalConfigKey(key, project);
        const before = securePaths.length;
        values[fullKey] = stripSecure(raw, fullKey, securePaths, [fullKey], placeholders);
        if (securePaths.length > before) {
            secretKeys.push(fullKey);
        }
    }
    return { values, secretKeys, securePaths, placeholders };
}
