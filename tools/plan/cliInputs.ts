import * as fs from "fs";
import * as path from "path";

/**
 * The plan CLI's file arguments, checked before anything is planned: a bad one fails at once
 * with the flag and the path, never after a long plan.
 */
export class CliInputError extends Error {}

/** A stack name as `stacks/Pulumi.<name>.yaml` spells it: an RFC 1123 label. */
const stackNamePattern = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** A target is a path when it has a `/` or ends in `.yaml`/`.yml`; otherwise it is a stack name. */
export function isStackPath(arg: string): boolean {
    return arg.includes("/") || arg.includes(path.sep) || /\.ya?ml$/.test(arg);
}

/**
 * `<stack|file>` -> the stack file. A name is looked up only as `<stacksDir>/Pulumi.<name>.yaml`
 * and must match the stack-name pattern (so `..`, `a.b` or `x\y` never reach outside stacks/);
 * a path is taken as given and must be an existing file.
 */
export function resolveStackArg(arg: string, stacksDir: string, label = "stack"): string {
    if (isStackPath(arg)) {
        refuseSymlinks(arg, process.cwd(), `${label} file ${arg}`, "a stack file is read only through real directories and files, never through a link");
        let stat: fs.Stats;
        try {
            stat = fs.statSync(arg);
        } catch {
            throw new CliInputError(`${label} file ${arg}: no such file`);
        }
        if (!stat.isFile()) {
            throw new CliInputError(`${label} file ${arg}: not a file`);
        }
        return path.resolve(arg);
    }
    if (!stackNamePattern.test(arg)) {
        throw new CliInputError(
            `${label} "${arg}": not a stack name (lower-case letters, digits and "-", at most 63) ` +
                `nor a stack file path (a path has a "/" or ends in .yaml)`,
        );
    }
    const file = path.join(stacksDir, `Pulumi.${arg}.yaml`);
    refuseSymlinks(file, path.dirname(stacksDir), `${label} "${arg}"`, "a stack file is read only through real directories and files, never through a link");
    if (!fs.existsSync(file)) {
        const known = fs.existsSync(stacksDir)
            ? fs
                  .readdirSync(stacksDir)
                  .map((f) => /^Pulumi\.(.+)\.yaml$/.exec(f)?.[1])
                  .filter((n): n is string => n !== undefined && stackNamePattern.test(n))
            : [];
        throw new CliInputError(`no ${label} "${arg}": give a stack name (${known.join(", ") || "none in stacks/"}) or the path of a stack file`);
    }
    return file;
}

/**
 * The first symbolic link on `file` as given, its components walked as the kernel does (so
 * `link/../x` meets `link`), the file itself included; undefined when there is none. An absolute
 * path's components shared with `root` (where the plan runs, or the project) are not checked:
 * they are the user's own setup, not a file under review. Walking stops at the first component
 * that does not exist (the caller reports that).
 */
export function firstSymlink(file: string, root: string): string | undefined {
    const parts = file.split(/[\\/]+/);
    let current = path.isAbsolute(file) ? path.parse(path.resolve(file)).root : "";
    const rootParts = path.isAbsolute(file) ? path.resolve(root).split(path.sep).filter(Boolean) : [];
    let shared = true;
    for (const [i, part] of parts.filter(Boolean).entries()) {
        current = current ? path.join(current, part) : part;
        shared = shared && rootParts[i] === part;
        if (shared || part === ".") {
            continue;
        }
        let stat: fs.Stats;
        try {
            stat = fs.lstatSync(current);
        } catch {
            return undefined;
        }
        if (stat.isSymbolicLink()) {
            return current;
        }
    }
    return undefined;
}

/** Refuses `file` when a symbolic link is on its path: one line naming the argument and the link. */
function refuseSymlinks(file: string, root: string, what: string, why: string): void {
    const link = firstSymlink(file, root);
    if (link !== undefined) {
        const relative = path.relative(process.cwd(), link);
        const shown = path.isAbsolute(link) && (relative.startsWith("..") || path.isAbsolute(relative)) ? link : relative;
        throw new CliInputError(`${what}: ${shown} is a symbolic link; ${why}`);
    }
}

/** What `--out` writes into DIR: these directories, each a real one (a link is refused). */
export const outSubdirs = ["manifests", "node-commands"] as const;

/**
 * `--out DIR`: DIR is a directory or can be made one, and can be written. Makes nothing. Neither
 * DIR, a directory on its path, nor its manifests/ or node-commands/ may be a symbolic link: the
 * plan would write where the link points (files in them are replaced, never written through).
 */
export function checkOutDir(dir: string): void {
    for (const target of [dir, ...outSubdirs.map((d) => path.join(dir, d))]) {
        refuseSymlinks(target, process.cwd(), `--out ${dir}`, "the plan writes only into real directories, never through a link");
    }
    let existing = path.resolve(dir);
    while (!fs.existsSync(existing)) {
        existing = path.dirname(existing);
    }
    const stat = fs.statSync(existing);
    if (!stat.isDirectory()) {
        throw new CliInputError(`--out ${dir}: ${existing} is not a directory`);
    }
    try {
        fs.accessSync(existing, fs.constants.W_OK | fs.constants.X_OK);
    } catch (e) {
        throw new CliInputError(`--out ${dir}: cannot write in ${existing} (${(e as NodeJS.ErrnoException).code})`);
    }
}

/** `--policy-pack-config FILE`: a JSON object, as `pulumi preview --policy-pack-config` takes. */
export function readPolicyPackConfig(file: string): Record<string, unknown> {
    let text: string;
    try {
        text = fs.readFileSync(file, "utf8");
    } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        throw new CliInputError(`--policy-pack-config ${file}: ${code === "ENOENT" ? "no such file" : `cannot read it (${code})`}`);
    }
    let value: unknown;
    try {
        value = JSON.parse(text);
    } catch (e) {
        throw new CliInputError(`--policy-pack-config ${file}: not valid JSON (${(e as Error).message})`);
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
        throw new CliInputError(`--policy-pack-config ${file}: must be a JSON object of policy names`);
    }
    return value as Record<string, unknown>;
}
