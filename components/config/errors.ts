/** One problem in a stack config, located by its key path (`lvm[0].hosts.node9`). */
export interface ConfigIssue {
    path: string;
    message: string;
}

export function formatIssue(issue: ConfigIssue): string {
    return issue.path ? `${issue.path}: ${issue.message}` : issue.message;
}

/** Formats a key path the way users write it in YAML: `lvm[0].hosts.node9`. */
export function keyPath(parts: ReadonlyArray<PropertyKey>): string {
    let out = "";
    for (const part of parts) {
        if (typeof part === "number") {
            out += `[${part}]`;
        } else {
            const key = String(part);
            out += out === "" ? key : `.${key}`;
        }
    }
    return out;
}

/** Thrown before any resource is registered; lists every problem of the config at once. */
export class ConfigValidationError extends Error {
    constructor(readonly issues: ConfigIssue[]) {
        super(
            `zcloud-storage config has ${issues.length} error${issues.length === 1 ? "" : "s"}; nothing was changed:\n` +
                issues.map((i) => `  - ${formatIssue(i)}`).join("\n"),
        );
        this.name = "ConfigValidationError";
    }
}
