import { printable } from "./printable";

/** One problem in a stack config, located by its key path (`lvm[0].hosts.node9`). */
export interface ConfigIssue {
    path: string;
    message: string;
}

/**
 * One printable line: a key path and a message quote the config, whose keys and values may hold
 * line breaks and terminal escape sequences; they are shown as escapes (`\x1b`, `\x0a`).
 */
export function formatIssue(issue: ConfigIssue): string {
    return printable(issue.path ? `${issue.path}: ${issue.message}` : issue.message);
}

/**
 * A pulumi command a message tells the reader to run, naming the stack when it is known:
 * `pulumi config set -s prod --secret ...`. Without a stack (a library caller validating values)
 * the `-s` is left out.
 */
export function pulumiCommand(verb: string, stack: string | undefined, rest = ""): string {
    const word = (text: string) => (/^[A-Za-z0-9._\/-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`);
    return [`pulumi ${verb}`, ...(stack ? [`-s ${word(stack)}`] : []), ...(rest ? [rest] : [])].join(" ");
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
