import { formatIssue } from "./errors";
import { canonicalConfigKey, foldedKeyCollisions } from "./namespaces";
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

/** Replaces `secure:` ciphertexts by placeholders and lists their paths. */
function stripSecure(value: unknown, path: string, securePaths: string[]): unknown {
    if (Array.isArray(value)) {
        return value.map((v, i) => stripSecure(v, `${path}[${i}]`, securePaths));
    }
    if (isSecureValue(value)) {
        securePaths.push(path);
        return offlineSecret(path);
    }
    if (value !== null && typeof value === "object") {
        // defineProperty keeps a `__proto__` key an own key, for validation to refuse by name.
        const out: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(value)) {
            Object.defineProperty(out, k, { value: stripSecure(v, `${path}.${k}`, securePaths), enumerable: true, writable: true, configurable: true });
        }
        return out;
    }
    return value;
}

/** Parses a stack file's text; refuses a file without a `config:` map or with an empty one. */
export function readStackDocument(text: string, source: string): StackDocument {
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
        ...foldedKeyCollisions(Object.keys(config)).map(formatIssue),
        ...Object.entries(config).flatMap(([key, value]) => nonFiniteNumberIssues(value, canonicalConfigKey(key))),
    ];
    if (problems.length > 0) {
        throw new YamlError(problems.map((problem) => `${source}: ${problem}`).join("\n"));
    }
    const values: Record<string, unknown> = {};
    const secretKeys: string[] = [];
    const securePaths: string[] = [];
    for (const [key, raw] of Object.entries(config)) {
        const fullKey = canonicalConfigKey(key);
        const before = securePaths.length;
        values[fullKey] = stripSecure(raw, fullKey, securePaths);
        if (securePaths.length > before) {
            secretKeys.push(fullKey);
        }
    }
    return { values, secretKeys, securePaths };
}
