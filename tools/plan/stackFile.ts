import * as fs from "fs";
import * as path from "path";
import { configFileReader, expandConfigFiles, readNoFollow } from "../../components/config/configFiles";
import { formatIssue } from "../../components/config/errors";
import { offlineSecret, readStackDocument } from "../../components/config/stackDocument";
import { YamlError } from "../../components/config/yaml";
import { resolveStackArg } from "./cliInputs";
import { PlanConfig } from "./model";

export const projectRoot = path.resolve(__dirname, "..", "..");

/** `dev` -> stacks/Pulumi.dev.yaml; an existing path is used as it is. */
export function resolveStackFile(arg: string): string {
    if (fs.existsSync(arg) && fs.statSync(arg).isFile()) {
        return path.resolve(arg);
    }
    const named = path.join(projectRoot, "stacks", `Pulumi.${arg}.yaml`);
    if (fs.existsSync(named)) {
        return named;
    }
    const known = fs.existsSync(path.join(projectRoot, "stacks"))
        ? fs.readdirSync(path.join(projectRoot, "stacks")).filter((f) => /^Pulumi\..+\.yaml$/.test(f)).map((f) => f.slice(7, -5))
        : [];
    throw new Error(`no stack "${arg}": give a stack name (${known.join(", ") || "none in stacks/"}) or the path of a stack file`);
}

export { offlineSecret };

/**
 * Parses a stack file's `config:` the way the Pulumi CLI hands it to the program of `project`
 * (a key without a namespace is the project's).
 */
export function parseStackYaml(text: string, stack: string, source = "stack file", project?: string): PlanConfig {
    const { placeholders, ...doc } = readStackDocument(text, source, project);
    return { ...doc, stack, ...(placeholders.length > 0 ? { placeholders } : {}), ...(project !== undefined ? { project } : {}) };
}

/**
 * A stack file and the config files it lists (`zcloud-storage:configFiles`, read from its
 * directory and merged in, as the program does): `values` is what the program sees, `passedValues`
 * what Pulumi passes it (the stack file alone).
 */
export function loadStackFile(arg: string, project?: string): { file: string; config: PlanConfig } {
    const file = resolveStackFile(arg);
    const stack = /Pulumi\.(.+)\.yaml$/.exec(path.basename(file))?.[1] ?? path.basename(file, ".yaml");
    const shown = path.relative(process.cwd(), file) || file;
    const config = parseStackYaml(readNoFollow(file), stack, shown, project);
    const expanded = expandConfigFiles(config.values, configFileReader(path.dirname(file)), shown);
    if (expanded.issues.length > 0) {
        throw new YamlError(`${shown}: ${expanded.issues.length} error(s) in the config files it lists; nothing was planned:\n${expanded.issues.map((i) => `  - ${formatIssue(i)}`).join("\n")}`);
    }
    return { file, config: expanded.files.length > 0 ? { ...config, values: expanded.values, passedValues: config.values, configFiles: expanded.files } : config };
}

/**
 * A tool's `<stack|file>` argument read as plan, discover and status all read it: looked up and
 * checked by resolveStackArg (stack-name rules, a path taken as given), then parsed as bounded
 * YAML. `label` names the argument in messages (`--diff stack`); `project`, the Pulumi project
 * the config is for (default zcloud-storage).
 */
export function readStackArg(arg: string, label = "stack", project?: string): { file: string; config: PlanConfig } {
    return loadStackFile(resolveStackArg(arg, path.join(projectRoot, "stacks"), label), project);
}
