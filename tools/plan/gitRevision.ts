import { execFileSync } from "child_process";
import * as path from "path";
import { ConfigFileReader, expandConfigFiles } from "../../components/config/configFiles";
import { formatIssue } from "../../components/config/errors";
import { YamlError, yamlLimits } from "../../components/config/yaml";
import { CliInputError } from "./cliInputs";
import { PlanConfig } from "./model";
import { parseStackYaml } from "./stackFile";

/**
 * `--diff-ref REV`: the stack file and the config files it lists as they were at git revision
 * REV, read from git's objects (no checkout, nothing written), with the rules the working tree's
 * reader applies: no symbolic link as a file or on the way, no directory as a file, at most the
 * YAML size limit. The base of a pull request's diff then holds the base's inventory, not the
 * head's.
 */

function git(cwd: string, args: string[], input?: string): string {
    return execFileSync("git", args, { cwd, encoding: "utf8", input, stdio: ["pipe", "pipe", "pipe"], maxBuffer: yamlLimits.maxBytes + 1024 });
}

/** One tree entry at `rev`: its mode and object, or undefined when the path is not there. */
function entryAt(top: string, rev: string, file: string): { mode: string; object: string } | undefined {
    const out = git(top, ["ls-tree", "-z", rev, "--", file]);
    const m = /^(\d+) \w+ ([0-9a-f]+)\t/.exec(out);
    return m ? { mode: m[1], object: m[2] } : undefined;
}

/** A readable error with the code the config-file reader's messages know (readProblem). */
const coded = (code: string, message: string) => Object.assign(new Error(message), { code });

/**
 * The text of `file` (relative to `dir`, itself relative to the repository's top) at `rev`,
 * refusing what the working tree's reader refuses; a linked folder is named relative to `dir`.
 */
function blobAt(top: string, rev: string, dir: string, file: string): string {
    const inRepo = (p: string) => (dir === "." ? p : `${dir}/${p}`);
    const parts = file.split("/");
    for (let n = 1; n < parts.length; n++) {
        const sub = parts.slice(0, n).join("/");
        if (entryAt(top, rev, inRepo(sub))?.mode === "120000") {
            throw coded("LINKEDDIR", sub);
        }
    }
    const entry = entryAt(top, rev, inRepo(file));
    if (!entry) throw coded("ENOENT", `${file} does not exist at ${rev}`);
    if (entry.mode === "120000") throw coded("ELOOP", `${file} is a symbolic link`);
    if (entry.mode === "040000") throw coded("EISDIR", `${file} is a directory`);
    if (!/^100(644|755)$/.test(entry.mode)) throw coded("NOTREGULAR", `${file} is not a regular file`);
    if (Number(git(top, ["cat-file", "-s", entry.object]).trim()) > yamlLimits.maxBytes) throw coded("TOOLARGE", `${file} is too large`);
    return git(top, ["cat-file", "blob", entry.object]);
}

/**
 * The stack `file` (a path in a git working tree) as it was at `rev`, with its config files as
 * they were there. `label` names it in messages (`main:stacks/Pulumi.prod.yaml`).
 */
export function readStackAtRevision(file: string, rev: string, project?: string): { label: string; config: PlanConfig } {
    const dir = path.dirname(file);
    let top: string;
    try {
        top = git(dir, ["rev-parse", "--show-toplevel"]).trim();
    } catch {
        throw new CliInputError(`--diff-ref ${rev}: ${path.relative(process.cwd(), file) || file} is not in a git working tree`);
    }
    let commit: string;
    try {
        commit = git(top, ["rev-parse", "--verify", "--quiet", "--end-of-options", `${rev}^{commit}`]).trim();
    } catch {
        throw new CliInputError(`--diff-ref ${rev}: not a commit here (fetch it first, e.g. git fetch origin main)`);
    }
    const rel = path.relative(top, file).split(path.sep).join("/");
    const label = `${rev}:${rel}`;
    let text: string;
    try {
        text = blobAt(top, commit, ".", rel);
    } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        throw new CliInputError(
            code === "ENOENT"
                ? `--diff-ref ${rev}: ${rel} does not exist at ${rev} (a new stack: plan it without --diff-ref)`
                : code === "LINKEDDIR"
                  ? `--diff-ref ${rev}: ${rel} at ${rev} is reached through ${(e as Error).message}, a symbolic link; a stack file is read only through real directories`
                  : `--diff-ref ${rev}: ${rel} at ${rev}: ${(e as Error).message}`,
        );
    }
    const stack = /Pulumi\.(.+)\.yaml$/.exec(path.basename(file))?.[1] ?? path.basename(file, ".yaml");
    const config = parseStackYaml(text, stack, label, project);
    const stackDir = path.posix.dirname(rel);
    const read: ConfigFileReader = (listed) => blobAt(top, commit, stackDir, listed);
    const expanded = expandConfigFiles(config.values, read, label);
    if (expanded.issues.length > 0) {
        throw new YamlError(`${label}: ${expanded.issues.length} error(s) in the config files it lists at ${rev}; nothing was planned:\n${expanded.issues.map((i) => `  - ${formatIssue(i)}`).join("\n")}`);
    }
    return { label, config: expanded.files.length > 0 ? { ...config, values: expanded.values, passedValues: config.values, configFiles: expanded.files } : config };
}
