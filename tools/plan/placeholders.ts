/**
 * `secure:` placeholders left in a stack file (`secure: v1:REPLACE-ME-WITH-pulumi-config-set-secret`,
 * what the examples and discover's first stack file hold until the secret is set). Offline every
 * `secure:` value is a stand-in, so the plan passes; `pulumi preview` and `up` fail on them. The plan
 * names each with the command that sets it: an advisory, not an error, because a pull request
 * check has no secrets to compare with. Pure: unit-tested.
 */
import { PlaceholderSecret } from "../../components/config/stackDocument";
import { PlanConfig } from "./model";

/** A key Pulumi's property path syntax takes bare (`ssh`, `privateKey`, `node-1`). */
const bareKey = /^[^.[\]"\\]+$/;

/**
 * The `--path` key of `pulumi config set` for a leaf: `<namespace>:<name>` then `.key` or
 * `["key"]` (a key holding `.`, `[`, `]` or `"`) and `[index]`, as Pulumi parses property paths.
 * Undefined when Pulumi's syntax cannot name it (a key with a backslash, or empty).
 */
export function configSetPath([fullKey, ...under]: PlaceholderSecret): string | undefined {
    const sep = fullKey.indexOf(":");
    const namespace = fullKey.slice(0, sep);
    const name = fullKey.slice(sep + 1);
    const quoted = (key: string) => (key.includes("\\") || key === "" ? undefined : `["${key.replace(/"/g, '\\"')}"]`);
    const segment = (key: string | number) => (typeof key === "number" ? `[${key}]` : bareKey.test(key) ? `.${key}` : quoted(key));
    let text = bareKey.test(name) ? name : quoted(name);
    for (const key of under) {
        const next = segment(key);
        if (text === undefined || next === undefined) {
            return undefined;
        }
        text += next;
    }
    return text === undefined ? undefined : `${namespace}:${text}`;
}

/** `text` as one shell word: as it is when it is safe unquoted, else in single quotes. */
export function shellWord(text: string): string {
    return /^[A-Za-z0-9._\/-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/** The file the command reads the secret from, named after the leaf: `private-key-file`, `password-file`. */
function secretFile(placeholder: PlaceholderSecret): string {
    const last = placeholder[placeholder.length - 1];
    const leaf = typeof last === "string" ? last.slice(last.indexOf(":") + 1) : "";
    const kebab = leaf.replace(/([a-z0-9])([A-Z])/g, "$1-$2").toLowerCase();
    return /^[a-z][a-z0-9-]{0,40}$/.test(kebab) ? `${kebab}-file` : "secret-file";
}

/**
 * One advisory per placeholder of the stack, in stack file order, with the `pulumi config set`
 * line that sets it (run where the project's Pulumi.yaml is; the secret read from a file, never
 * from the command line).
 */
export function placeholderAdvisories(config: PlanConfig): string[] {
    return (config.placeholders ?? []).map((placeholder) => {
        const key = configSetPath(placeholder);
        const what = "is a placeholder, not an encrypted secret (pulumi preview and up cannot decrypt it)";
        if (key === undefined) {
            return `${JSON.stringify(placeholder)} ${what}; no pulumi config set --path can name this key: rename it, then set it with --secret`;
        }
        return `${key} ${what}; set it: pulumi config set -s ${shellWord(config.stack)} --secret --path ${shellWord(key)} < ${secretFile(placeholder)}`;
    });
}
