/**
 * How big a stack's config is when Pulumi hands it to the program. The nodejs language host
 * passes the whole config as one environment variable, `PULUMI_CONFIG=<JSON>` (a map of full
 * keys to strings: objects JSON-encoded inside it), and the policy pack gets the same; Linux
 * limits one environment string to 128 KiB (MAX_ARG_STRLEN), so a bigger config makes
 * `pulumi preview` and `pulumi up` fail before the program starts ("fork/exec .../node: argument
 * list too long", pulumi/pulumi#20402; seen here with 500 nodes x 4 devices). Pure: unit-tested.
 */
import * as path from "path";

/** Linux's MAX_ARG_STRLEN (32 pages of 4 KiB): the longest one `NAME=value` string may be. */
export const maxEnvironmentString = 32 * 4096;

/** The byte budget of the config JSON: the limit less `PULUMI_CONFIG=` and the string's NUL. */
export const configBudget = maxEnvironmentString - "PULUMI_CONFIG=".length - 1;

/** Above this share of the budget the plan advises splitting before the stack grows further. */
export const configAdvisoryShare = 0.75;

/**
 * The PULUMI_CONFIG value for these config values, as the language host builds it (Go's
 * json.Marshal: a string per key, `<`, `>`, `&` escaped as \u003c, \u003e, \u0026). `secure:`
 * leaves count at the length of what `values` holds for them (the offline plan's placeholder):
 * real secrets add their own length.
 */
export function pulumiConfigJson(values: Record<string, unknown>): string {
    const asStrings = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]));
    return JSON.stringify(asStrings).replace(/[<>&]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`);
}

function kib(bytes: number): string {
    return `${(bytes / 1024).toFixed(1)} KiB`;
}

export interface ConfigSize {
    bytes: number;
    /** Set when Pulumi could not start the program with this config. */
    error?: string;
    /** Set when the config is close to that limit. */
    advisory?: string;
}

/** The config's size as Pulumi passes it, and what to say about it. */
export function checkConfigSize(values: Record<string, unknown>, stackFile: string): ConfigSize {
    const bytes = Buffer.byteLength(pulumiConfigJson(values), "utf8");
    const split = "move the node inventory (zcloud-storage:nodes, ssh.hostKeys, the storages) into files listed in zcloud-storage:configFiles, or split the stack (docs/splitting-stacks.md)";
    if (bytes > configBudget) {
        return {
            bytes,
            error:
                `${stackFile}: the config is ${kib(bytes)} as Pulumi passes it to the program (one environment variable, PULUMI_CONFIG), ` +
                `over Linux's ${kib(maxEnvironmentString)} limit for one: pulumi preview and up would fail before the program starts ` +
                `("argument list too long"); ${split}`,
        };
    }
    if (bytes > configBudget * configAdvisoryShare) {
        return {
            bytes,
            advisory: `${stackFile}: the config is ${kib(bytes)} as Pulumi passes it to the program, ${Math.round((100 * bytes) / configBudget)}% of the ${kib(configBudget)} Pulumi can pass (one environment variable); before it grows past that, ${split}`,
        };
    }
    return { bytes };
}

/** checkConfigSize of a stack file as the plan read it, named relative to the working directory. */
export function checkStackFileConfigSize(stack: { file: string; config: { values: Record<string, unknown>; passedValues?: Record<string, unknown> } }, cwd = process.cwd()): ConfigSize {
    return checkConfigSize(stack.config.passedValues ?? stack.config.values, path.relative(cwd, stack.file));
}
