/**
 * `npm run plan lab --diff old.yaml` (no `--`) hands `--diff old.yaml` to npm, not to the tool:
 * npm takes every flag before `--` as its own config, exports it as `npm_config_<name>` and drops
 * it from the arguments. The tool would then print a plain plan and exit 0, and a reviewer believe
 * the diff was clean. Pure: the flags of a tool's own that npm took, when npm runs the tool.
 */
export function flagsNpmTook(flags: readonly string[], env: NodeJS.ProcessEnv = process.env): string[] {
    if (env.npm_lifecycle_event === undefined) {
        return [];
    }
    return flags.filter((flag) => env[`npm_config_${flag.replace(/^--/, "").replace(/-/g, "_")}`] !== undefined);
}

/** The refusal for flags npm took: which, and the command that hands them to the tool. */
export function npmTookMessage(script: string, took: readonly string[]): string {
    return `npm took ${took.join(", ")} for itself (an option before \`--\` is npm's): nothing was run; put -- before the tool's arguments: npm run ${script} -- <stack> ${took.join(" ")} ...`;
}
