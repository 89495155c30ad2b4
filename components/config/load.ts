import * as fs from "fs";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import { configFileReader, configFilesKey, expandConfigFiles } from "./configFiles";
import { ConfigValidationError, formatIssue } from "./errors";
import { StackModel } from "./model";
import { parseFullConfig } from "./namespaces";
import { readStackDocument } from "./stackDocument";
import { loadBoundedYaml } from "./yaml";

export { configNamespace } from "./namespaces";

/** Set by the offline plan, which read the stack file itself (and may have none on disk). */
let declaredSecurePaths: readonly string[] | undefined;

/** The offline plan tells the program which leaves of its config are `secure:` values. */
export function declareSecurePaths(paths: readonly string[] | undefined): void {
    declaredSecurePaths = paths;
}

/**
 * Under the CLI the program runs in the project directory: its stack file is
 * `<stackConfigDir>/Pulumi.<stack>.yaml` there. Undefined without a Pulumi.yaml (config from
 * elsewhere, e.g. an inline Automation API program run from another directory).
 */
function stackFileOfProgram(): { dir: string; file: string } | undefined {
    const project = path.join(process.cwd(), "Pulumi.yaml");
    if (!fs.existsSync(project)) {
        return undefined;
    }
    const configDir = (loadBoundedYaml(fs.readFileSync(project, "utf8"), "Pulumi.yaml") as { stackConfigDir?: unknown } | null)?.stackConfigDir;
    const dir = path.join(process.cwd(), typeof configDir === "string" ? configDir : ".");
    return { dir, file: path.join(dir, `Pulumi.${pulumi.getStack()}.yaml`) };
}

/**
 * The runtime marks only whole top-level keys secret; which leaves are `secure:` only the stack
 * file says. Undefined when there is no such file (config from elsewhere): secret leaves are then
 * checked by top-level key.
 */
function securePathsOfStackFile(): readonly string[] | undefined {
    if (declaredSecurePaths) {
        return declaredSecurePaths;
    }
    const file = stackFileOfProgram()?.file;
    return file && fs.existsSync(file) ? readStackDocument(fs.readFileSync(file, "utf8"), path.relative(process.cwd(), file)).securePaths : undefined;
}

/**
 * The values with `zcloud-storage:configFiles` read and merged in, from the stack file's
 * directory (the working directory without a Pulumi.yaml). The offline plan hands the program
 * values it already expanded, without the key.
 */
function withConfigFiles(values: Record<string, unknown>): Record<string, unknown> {
    if (!Object.hasOwn(values, configFilesKey)) {
        return values;
    }
    const stackFile = stackFileOfProgram();
    const dir = stackFile?.dir ?? process.cwd();
    const expanded = expandConfigFiles(values, configFileReader(dir), stackFile ? path.relative(process.cwd(), stackFile.file) : "the stack config");
    if (expanded.issues.length > 0) {
        throw new ConfigValidationError(expanded.issues);
    }
    return expanded.values;
}

/**
 * The SDK marks which keys hold secrets but types this helper as internal; without it the
 * clear-text-secret check is skipped rather than guessed.
 */
function configSecretCheck(): ((fullKey: string) => boolean) | undefined {
    return (pulumi.runtime as unknown as { isConfigSecret?: (key: string) => boolean }).isConfigSecret;
}

/** Whether the runtime holds a full key (`kubernetes:kubeconfig`) as a secret. */
export function isSecretConfigKey(fullKey: string): boolean {
    return configSecretCheck()?.(fullKey) ?? false;
}

/**
 * Reads every key of the current stack synchronously (values are plain here; secret leaves are
 * wrapped again before any resource sees them), validates them together and throws one error
 * listing every problem before anything is registered.
 */
export function loadStackConfig(): StackModel {
    const values: Record<string, unknown> = {};
    const secretKeys = new Set<string>();
    const isConfigSecret = configSecretCheck();
    // allConfig() is every key of the stack, in every namespace (PULUMI_CONFIG under the CLI).
    for (const [fullKey, raw] of Object.entries(pulumi.runtime.allConfig())) {
        Object.defineProperty(values, fullKey, { value: parseConfigValue(raw), enumerable: true, writable: true, configurable: true });
        if (isConfigSecret?.(fullKey)) {
            secretKeys.add(fullKey);
        }
    }
    const securePaths = securePathsOfStackFile();
    const result = parseFullConfig(withConfigFiles(values), {
        rawKeys: rawConfigKeys(),
        stack: pulumi.getStack(),
        ...(isConfigSecret ? { secretKeys } : {}),
        ...(securePaths ? { securePaths } : {}),
    });
    for (const warning of result.warnings) {
        pulumi.log.warn(formatIssue(warning));
    }
    if (!result.model) {
        throw new ConfigValidationError(result.errors);
    }
    return result.model;
}

/**
 * The keys the language host handed the program (PULUMI_CONFIG), before allConfig() folds
 * `<ns>:config:<name>` into `<ns>:<name>` and lets one of two such keys win.
 */
function rawConfigKeys(): string[] {
    const raw = process.env.PULUMI_CONFIG;
    if (!raw) {
        return [];
    }
    try {
        const parsed: unknown = JSON.parse(raw);
        return parsed !== null && typeof parsed === "object" ? Object.keys(parsed) : [];
    } catch {
        return [];
    }
}

/**
 * Structured values (maps, lists) arrive as JSON text, every other value as its text: a quoted
 * `"1234"` and an unquoted `1234` both arrive as 1234, and both are the string Pulumi's own
 * config.get would return, never a number.
 */
export function parseConfigValue(raw: string): unknown {
    if (!/^\s*[[{]/.test(raw)) {
        return raw;
    }
    try {
        return JSON.parse(raw);
    } catch {
        return raw;
    }
}
