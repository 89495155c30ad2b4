import * as yaml from "js-yaml";

/**
 * Bounded YAML for stack files. js-yaml 4 keeps an alias as a shared reference, so loading an
 * alias bomb is cheap, but everything that walks the result afterwards (JSON.stringify, the
 * config parser) expands it. The document is therefore measured as if expanded, with a cache per
 * shared node, and refused above a budget; a duplicate key is an error (js-yaml's default outside
 * its `json` mode, kept explicit here).
 */

/** A stack file of 5000 nodes with 4 devices each is about 1 MB and 60 000 values. */
export const yamlLimits = { maxBytes: 16 * 1024 * 1024, maxValues: 2_000_000 } as const;

export class YamlError extends Error {}

/** Values the document holds once every alias is expanded; Infinity for a cycle. */
export function expandedSize(root: unknown, limit: number = yamlLimits.maxValues): number {
    const sizes = new Map<object, number>();
    const open = new Set<object>();
    const size = (value: unknown): number => {
        if (value === null || typeof value !== "object") {
            return 1;
        }
        const known = sizes.get(value);
        if (known !== undefined) {
            return known;
        }
        if (open.has(value)) {
            return Infinity;
        }
        open.add(value);
        let total = 1;
        for (const child of Object.values(value)) {
            total += size(child);
            if (total > limit) {
                break;
            }
        }
        open.delete(value);
        sizes.set(value, total);
        return total;
    };
    return size(root);
}

/**
 * A stack file's line with its values left out: indentation, list dashes and keys stay, every
 * value (and comment) becomes "…". A YAML error then shows where it is without quoting a secret
 * (a `secure:` ciphertext, a key pasted in clear) from the lines around it.
 */
export function lineStructure(line: string): string {
    if (line.trim() === "") {
        return "";
    }
    const m = /^(\s*(?:-\s+)*)(?:("[^"]*"|'[^']*'|[^\s#"'{}[\],&*!|>%@`-][^\s]*?|-\S+?):(?=\s|$))?(.*)$/.exec(line)!;
    const [, lead, key, rest] = m;
    const value = rest.trim() === "" ? "" : rest.trimStart().startsWith("#") && key === undefined ? "# …" : "…";
    return key === undefined ? `${lead}${value}` : `${lead}${key}:${value ? ` ${value}` : ""}`;
}

/** Lines js-yaml shows around an error (its snippet's defaults). */
const linesBefore = 3;
const linesAfter = 2;

/**
 * js-yaml's message with its snippet rebuilt from the lines' structure only (lineStructure); the
 * caret stays under the error's column, or under the "…" that stands for the value it is in.
 */
export function yamlErrorText(e: yaml.YAMLException, text: string): string {
    const mark = e.mark as { line?: number; column?: number } | undefined;
    if (typeof e.reason !== "string" || mark?.line === undefined || mark.column === undefined) {
        return "cannot be parsed";
    }
    const lines = text.split(/\r?\n/);
    if (lines.length > 1 && lines[lines.length - 1] === "" && mark.line < lines.length - 1) {
        lines.pop(); // the "line" after the final newline
    }
    const first = Math.max(0, mark.line - linesBefore);
    const last = Math.min(lines.length - 1, mark.line + linesAfter);
    const width = String(last + 1).length;
    const prefix = (n: number) => ` ${String(n + 1).padStart(width)} | `;
    const snippet: string[] = [];
    for (let n = first; n <= last; n++) {
        const shown = lineStructure(lines[n]);
        snippet.push(`${prefix(n)}${shown}`.trimEnd());
        if (n === mark.line) {
            snippet.push(`${"-".repeat(prefix(n).length + Math.max(0, Math.min(mark.column, shown.length - 1)))}^`);
        }
    }
    return `${e.reason} (${mark.line + 1}:${mark.column + 1}); values are not shown\n\n${snippet.join("\n")}`;
}

/**
 * js-yaml's default schema without the merge type: `<<` stays a key of its own, for
 * mergeKeyPaths to refuse by where it stands (the Pulumi CLI would merge it silently).
 */
const jsYamlTypes = (yaml as unknown as { types: Record<"timestamp" | "binary" | "omap" | "pairs" | "set", yaml.Type> }).types; // exported, not in its typings
const schemaWithoutMerge = yaml.CORE_SCHEMA.extend({
    implicit: [jsYamlTypes.timestamp],
    explicit: [jsYamlTypes.binary, jsYamlTypes.omap, jsYamlTypes.pairs, jsYamlTypes.set],
});

/** Where a document holds a `<<` key (`config.zcloud-storage:lvm[0]`), each shared node once. */
function mergeKeyPaths(root: unknown): string[] {
    const found: string[] = [];
    const seen = new Set<object>();
    const walk = (value: unknown, path: string) => {
        if (value === null || typeof value !== "object" || seen.has(value)) {
            return;
        }
        seen.add(value);
        for (const [k, v] of Object.entries(value)) {
            const here = Array.isArray(value) ? `${path}[${k}]` : path === "" ? k : `${path}.${k}`;
            if (k === "<<" && !Array.isArray(value)) {
                found.push(path === "" ? "the top level" : path);
            }
            walk(v, here);
        }
    };
    walk(root, "");
    return found;
}

/** Parses one YAML document within yamlLimits; `source` names the file in messages. */
export function loadBoundedYaml(text: string, source: string): unknown {
    const bytes = Buffer.byteLength(text, "utf8");
    if (bytes > yamlLimits.maxBytes) {
        throw new YamlError(`${source} is ${bytes} bytes; a stack file has at most ${yamlLimits.maxBytes}`);
    }
    let doc: unknown;
    try {
        doc = yaml.load(text, { json: false, schema: schemaWithoutMerge });
    } catch (e) {
        throw new YamlError(`${source} is not valid YAML: ${yamlErrorText(e as yaml.YAMLException, text)}`);
    }
    const merges = mergeKeyPaths(doc);
    if (merges.length > 0) {
        throw new YamlError(
            `${source}: a YAML merge key (<<) at ${merges.join(", ")} is refused: it pulls keys in from an anchor, so a reviewer reading or grepping the file does not see them (a wipe: true, say); write the keys out`,
        );
    }
    const values = expandedSize(doc);
    if (values === Infinity) {
        throw new YamlError(`${source}: an alias refers to itself (a YAML anchor used inside its own value)`);
    }
    if (values > yamlLimits.maxValues) {
        throw new YamlError(
            `${source}: aliases expand to more than ${yamlLimits.maxValues} values (an alias bomb?); write the values out or use fewer nested aliases`,
        );
    }
    return doc;
}
