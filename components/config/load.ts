import * as pulumi from "@pulumi/pulumi";
import { ConfigValidationError, formatIssue } from "./errors";
import { StackModel } from "./model";
import { parseStackConfig } from "./parse";

/** The project's config namespace (`zcloud-storage:nodes`, ...). */
export const configNamespace = "zcloud-storage";

/**
 * Reads every `zcloud-storage:` key of the current stack synchronously (values are plain here;
 * secret leaves are wrapped again before any resource sees them), validates them together and
 * throws one error listing every problem before anything is registered.
 */
export function loadStackConfig(): StackModel {
    const values: Record<string, unknown> = {};
    const secretKeys = new Set<string>();
    // The SDK marks which keys hold secrets but types this helper as internal; without it the
    // clear-text-secret check is skipped rather than guessed.
    const isConfigSecret = (pulumi.runtime as unknown as { isConfigSecret?: (key: string) => boolean }).isConfigSecret;
    for (const [fullKey, raw] of Object.entries(pulumi.runtime.allConfig())) {
        const sep = fullKey.indexOf(":");
        if (fullKey.slice(0, sep) !== configNamespace) {
            continue;
        }
        const key = fullKey.slice(sep + 1);
        values[key] = parseConfigValue(raw);
        if (isConfigSecret?.(fullKey)) {
            secretKeys.add(key);
        }
    }
    const result = parseStackConfig(values, isConfigSecret ? { secretKeys } : {});
    for (const warning of result.warnings) {
        pulumi.log.warn(formatIssue(warning));
    }
    if (!result.model) {
        throw new ConfigValidationError(result.errors);
    }
    return result.model;
}

/** Structured values arrive as JSON text, plain strings as themselves. */
function parseConfigValue(raw: string): unknown {
    try {
        return JSON.parse(raw);
    } catch {
        return raw;
    }
}
