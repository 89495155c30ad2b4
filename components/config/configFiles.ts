import * as fs from "fs";
import * as path from "path";
import { ConfigIssue, keyPath } from "./errors";
import { canonicalConfigKey, configNamespace, foldedKeyCollisions } from "./namespaces";
import { isSecureValue, nonFiniteLeaves } from "./stackDocument";
import { loadBoundedYaml, yamlLimits, YamlError } from "./yaml";

/**
 * `zcloud-storage:configFiles`: more of a stack's config, kept in YAML files beside its stack file.
 * Pulumi hands the stack file's config to the program (and to a policy pack) in one environment
 * variable, which Linux caps at 128 KiB (docs/splitting-stacks.md): a fleet's inventory (nodes,
 * host keys, each storage's hosts) outgrows it at a few hundred nodes. Files listed here are read
 * by the program itself, so they do not count. They hold no secrets (those stay encrypted in the
 * stack file) and add keys or map entries only: a value set in two places is refused, never
 * silently overridden.
 */
export const configFilesKey = `${configNamespace}:configFiles`;

/** How many files one stack may list (a guard against a generated list gone wrong). */
export const maxConfigFiles = 64;

/** Reads a listed file by its path as written (relative to the stack file's directory). */
export type ConfigFileReader = (file: string) => string;

export interface ExpandedConfig {
    /** The stack's values with every listed file's keys merged in, and without configFiles. */
    values: Record<string, unknown>;
    /** The files read, as listed (normalized: `a/../b.yaml` is `b.yaml`). */
    files: string[];
    /** Problems of the list, of a file, or of a merge; values are not usable when there is one. */
    issues: ConfigIssue[];
}

const listPath = (i: number) => `${configFilesKey}[${i}]`;

function isMap(value: unknown): value is Record<string, unknown> {
    return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Why a listed path is refused, if it is: relative, inside the stack file's directory, a .yaml file. */
export function configFilePathProblem(file: unknown): string | undefined {
    if (typeof file !== "string" || file.trim() === "") {
        return "must be the path of a YAML file, relative to the stack file's directory";
    }
    if (path.isAbsolute(file) || /^[A-Za-z]:|\\/.test(file)) {
        return `${JSON.stringify(file)} must be relative to the stack file's directory (with / between folders), so the stack reads the same file on every machine`;
    }
    const normal = path.posix.normalize(file);
    if (normal === ".." || normal.startsWith("../")) {
        return `${JSON.stringify(file)} leads out of the stack file's directory; keep a stack's config files beside it (or in a folder below it), where its reviewers find them`;
    }
    if (!/\.ya?ml$/.test(normal)) {
        return `${JSON.stringify(file)} must name a .yaml or .yml file`;
    }
    return undefined;
}

/** The listed paths, or the issues of the list itself. */
function listedFiles(list: unknown): { files: Array<[number, string]>; issues: ConfigIssue[] } {
    if (!Array.isArray(list)) {
        return { files: [], issues: [{ path: configFilesKey, message: "must be a list of YAML files (paths relative to the stack file's directory)" }] };
    }
    const issues: ConfigIssue[] = [];
    if (list.length > maxConfigFiles) {
        issues.push({ path: configFilesKey, message: `lists ${list.length} files; a stack lists at most ${maxConfigFiles}` });
    }
    const files: Array<[number, string]> = [];
    const seen = new Map<string, number>();
    list.forEach((file, i) => {
        const problem = configFilePathProblem(file);
        if (problem) {
            issues.push({ path: listPath(i), message: problem });
            return;
        }
        const normal = path.posix.normalize(file as string);
        const earlier = seen.get(normal);
        if (earlier !== undefined) {
            issues.push({ path: listPath(i), message: `lists ${JSON.stringify(file)} again (as ${listPath(earlier)}); list each file once` });
            return;
        }
        seen.set(normal, i);
        files.push([i, normal]);
    });
    return { files, issues };
}

/** Paths of `secure:` values in a file's value (`zcloud-storage:ssh.privateKey`). */
function securePaths(value: unknown, at: string): string[] {
    if (isSecureValue(value)) {
        return [at];
    }
    if (value !== null && typeof value === "object") {
        return Object.entries(value).flatMap(([k, v]) => securePaths(v, Array.isArray(value) ? `${at}[${k}]` : `${at}.${k}`));
    }
    return [];
}

/** A listed file's `config:` map by full key, or the issues that refuse it. */
function readConfigFile(text: string, file: string, at: string): { values: Record<string, unknown>; issues: ConfigIssue[] } {
    let doc: unknown;
    try {
        doc = loadBoundedYaml(text, file);
    } catch (e) {
        return { values: {}, issues: [{ path: at, message: e instanceof YamlError ? e.message : String(e) }] };
    }
    const config = isMap(doc) ? doc.config : undefined;
    if (!isMap(doc) || Object.keys(doc).some((k) => k !== "config") || !isMap(config)) {
        return { values: {}, issues: [{ path: at, message: `${file} must hold one config: map, as a stack file does (config:\\n  zcloud-storage:nodes: ...)` }] };
    }
    if (Object.keys(config).length === 0) {
        return { values: {}, issues: [{ path: at, message: `${file} has an empty config: map; a plan without the keys it held would delete what they declared (take it out of configFiles to drop it on purpose)` }] };
    }
    const issues: ConfigIssue[] = foldedKeyCollisions(Object.keys(config)).map((i) => ({ path: at, message: `${file}: ${i.path} ${i.message}` }));
    const values: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(config)) {
        const fullKey = canonicalConfigKey(key);
        if (!fullKey.startsWith(`${configNamespace}:`)) {
            issues.push({ path: at, message: `${file}: ${key} is not a ${configNamespace}: key; provider and engine keys (kubernetes:, pulumi:) stay in the stack file, where Pulumi reads them` });
        } else if (fullKey === configFilesKey) {
            issues.push({ path: at, message: `${file}: a config file cannot list more config files; list every file in the stack file` });
        } else {
            for (const secret of securePaths(value, fullKey)) {
                issues.push({ path: at, message: `${file}: ${secret} is a secure: value; secrets stay in the stack file, encrypted by the stack's secrets provider (pulumi config set --secret)` });
            }
            for (const { path: bad } of nonFiniteLeaves(value, fullKey)) {
                issues.push({ path: at, message: `${file}: ${bad} is not a finite number (Pulumi config is JSON, which has no infinity or NaN)` });
            }
            // defineProperty keeps a `__proto__` key an own key, for validation to refuse by name.
            Object.defineProperty(values, fullKey, { value, enumerable: true, writable: true, configurable: true });
        }
    }
    return { values, issues };
}

/**
 * Merges `addition` (from `source`) into `into` at `at`: maps key by key, anything else (a value, a
 * list) only where nothing is set yet. `origin` remembers which source set each path.
 */
function mergeInto(into: Record<string, unknown>, addition: Record<string, unknown>, at: readonly string[], source: string, origin: Map<string, string>, issues: ConfigIssue[]): void {
    for (const [key, value] of Object.entries(addition)) {
        const here = [...at, key];
        if (!Object.hasOwn(into, key)) {
            Object.defineProperty(into, key, { value, enumerable: true, writable: true, configurable: true });
            origin.set(here.join("\0"), source);
            continue;
        }
        const existing = into[key];
        if (isMap(existing) && isMap(value)) {
            // Copy before merging: the stack's own value is not changed in place.
            const merged: Record<string, unknown> = { ...existing };
            mergeInto(merged, value, here, source, origin, issues);
            into[key] = merged;
            continue;
        }
        // The value here came in whole with this path or with one of its parents.
        const setBy = here.map((_, n) => origin.get(here.slice(0, here.length - n).join("\0"))).find((s) => s !== undefined);
        issues.push({
            path: keyPath(here),
            message: `is set in ${setBy} and again in ${source}; a config file adds keys, it does not override them: keep the value in one place`,
        });
    }
}

/**
 * The stack's values with its configFiles merged in (pure but for `read`). `stackSource` names the
 * stack file in messages. Values without configFiles come back as they are.
 */
export function expandConfigFiles(values: Record<string, unknown>, read: ConfigFileReader, stackSource = "the stack file"): ExpandedConfig {
    if (!Object.hasOwn(values, configFilesKey)) {
        return { values, files: [], issues: [] };
    }
    const { files, issues } = listedFiles(values[configFilesKey]);
    const merged: Record<string, unknown> = {};
    const origin = new Map<string, string>();
    const own = Object.fromEntries(Object.entries(values).filter(([k]) => k !== configFilesKey));
    mergeInto(merged, own, [], stackSource, origin, issues);
    for (const [i, file] of files) {
        let text: string;
        try {
            text = read(file);
        } catch (e) {
            issues.push({ path: listPath(i), message: readProblem(file, e) });
            continue;
        }
        const parsed = readConfigFile(text, file, listPath(i));
        issues.push(...parsed.issues);
        if (parsed.issues.length === 0) {
            mergeInto(merged, parsed.values, [], file, origin, issues);
        }
    }
    return { values: merged, files: files.map(([, f]) => f), issues };
}

function readProblem(file: string, e: unknown): string {
    const code = (e as NodeJS.ErrnoException).code;
    switch (code) {
        case "ENOENT":
            return `${file} does not exist (paths are relative to the stack file's directory)`;
        case "ELOOP":
            return `${file} is a symbolic link; list the file itself, so that what reviewers read is what the stack uses`;
        case "EISDIR":
            return `${file} is a directory; list YAML files`;
        case "EACCES":
            return `${file} cannot be read (permission denied)`;
        case "NOTREGULAR":
            return `${file} is not a regular file (a FIFO, device or socket); list YAML files`;
        case "LINKEDDIR":
            return `${file} is reached through ${(e as Error).message}, a symbolic link; keep config files in real folders beside the stack file, so that what reviewers read is what the stack uses`;
        case "TOOLARGE":
            return `${file} is larger than ${yamlLimits.maxBytes} bytes, the most a config file may hold`;
        default:
            return `${file} cannot be read: ${(e as Error).message}`;
    }
}

/** A read refused before any byte is read: `code` says why (readProblem words it). */
class RefusedRead extends Error {
    constructor(
        readonly code: "NOTREGULAR" | "LINKEDDIR" | "TOOLARGE",
        message: string,
    ) {
        super(message);
    }
}

/**
 * A regular file's text, never through a link as the file itself (ELOOP), never blocking on a
 * FIFO or reading a device (NOTREGULAR, checked on the opened file), at most the YAML size limit
 * (TOOLARGE).
 */
export function readNoFollow(file: string): string {
    const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    try {
        const st = fs.fstatSync(fd);
        if (st.isDirectory()) {
            throw Object.assign(new Error(`${file} is a directory`), { code: "EISDIR" });
        }
        if (!st.isFile()) {
            throw new RefusedRead("NOTREGULAR", `${file} is not a regular file`);
        }
        if (st.size > yamlLimits.maxBytes) {
            throw new RefusedRead("TOOLARGE", `${file} is ${st.size} bytes`);
        }
        return fs.readFileSync(fd, "utf8");
    } finally {
        fs.closeSync(fd);
    }
}

/**
 * Reads listed files from `dir` (the stack file's directory): no directory on the way may be a
 * symbolic link (it could lead out of the stack's directory), nor the file itself (readNoFollow).
 */
export function configFileReader(dir: string): ConfigFileReader {
    return (file) => {
        const parts = file.split("/");
        for (let n = 1; n < parts.length; n++) {
            const sub = parts.slice(0, n).join("/");
            if (fs.lstatSync(path.join(dir, sub), { throwIfNoEntry: false })?.isSymbolicLink()) {
                throw new RefusedRead("LINKEDDIR", sub);
            }
        }
        return readNoFollow(path.join(dir, file));
    };
}
