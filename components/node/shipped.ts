import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { ScriptBundle, scriptBundle } from "./bundle";
import { NodeScriptInvocation, readNodeScript, shellQuote } from "./script";

/**
 * Where the SSH user stages a bundle on the node: relative to the user's home (where SFTP and a
 * remote command start), so a non-root user can write it and nothing follows a planted link in
 * a shared directory. The stub installs it from there into the root-only store.
 */
export function bundleStagingPath(bundle: ScriptBundle): string {
    return `.zcloud-storage/scripts/${bundle.sha256}.sh`;
}

/** The stub's text: run-bundle.sh without its comment lines (every command carries it). */
let stubText: string | undefined;
export function runBundleStub(): string {
    if (stubText === undefined) {
        stubText = readNodeScript("run-bundle.sh")
            .split("\n")
            .filter((line) => line !== "" && !line.startsWith("#"))
            .join("\n");
    }
    return stubText;
}

/**
 * The exact command string a remote command runs: the stub, which checks and runs the bundle of
 * `files` (copied to the node beforehand, see nodeScriptCopy) as `name args...`. Only the stub,
 * the bundle's hash and the node's arguments travel in the command, so the state holds no script.
 */
export function renderNodeCommand(inv: NodeScriptInvocation): string {
    const bundle = scriptBundle(inv.files);
    const words = ["sh", "-c", shellQuote(runBundleStub()), shellQuote(inv.name), bundleStagingPath(bundle), bundle.sha256, ...inv.args.map(shellQuote)];
    return (inv.sudo ? "sudo -n " : "") + words.join(" ");
}

/** Where bundle files go unless a caller names a directory. */
export function defaultBundleDir(): string {
    return path.join(os.tmpdir(), "zcloud-storage-scripts");
}

/**
 * `dir` as a directory only this user can write: created 0700 when absent; refused when it is a
 * symbolic link or not a directory, owned by another user, or writable by group or others (in a
 * shared /tmp another user could plant links there that the plan, run as root, would write
 * through, and that `pulumi up` would copy to every node). Returns `dir`.
 */
export function privateDir(dir: string): string {
    try {
        fs.mkdirSync(dir, { mode: 0o700 });
    } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const st = fs.lstatSync(dir);
    const advice = "remove it, or set TMPDIR to a directory of your own";
    if (!st.isDirectory()) {
        throw new Error(`${dir}: refused as the script bundles' directory: it is ${st.isSymbolicLink() ? "a symbolic link" : "not a directory"}; ${advice}`);
    }
    const uid = process.getuid?.();
    if (uid !== undefined && st.uid !== uid) {
        throw new Error(`${dir}: refused as the script bundles' directory: it is owned by uid ${st.uid}, not by this user (uid ${uid}); ${advice}`);
    }
    if (st.mode & 0o022) {
        throw new Error(`${dir}: refused as the script bundles' directory: group or others may write in it (mode ${(st.mode & 0o7777).toString(8).padStart(4, "0")}); ${advice}`);
    }
    return dir;
}

/** The text of `file` if it is a regular file (never through a link), else undefined. */
function readRegularFile(file: string): string | undefined {
    let fd: number;
    try {
        fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    } catch {
        return undefined;
    }
    try {
        return fs.fstatSync(fd).isFile() ? fs.readFileSync(fd, "utf8") : undefined;
    } finally {
        fs.closeSync(fd);
    }
}

/**
 * The bundle as a local file, the source of its copies: written once per content (its name is
 * its hash) into a private directory (privateDir), by exclusive create of a new file that then
 * replaces the name, so nothing is written through a link. The engine keeps only the path and
 * hash in state and compares assets by hash.
 */
const assetFiles = new Map<string, string>();
export function bundleAssetFile(bundle: ScriptBundle, dir = defaultBundleDir()): string {
    const file = path.join(dir, `${bundle.sha256}.sh`);
    if (assetFiles.get(file) === undefined) {
        privateDir(dir);
        if (readRegularFile(file) !== bundle.text) {
            const partial = `${file}.${process.pid}.${Date.now()}`;
            const fd = fs.openSync(partial, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, 0o644);
            try {
                fs.writeFileSync(fd, bundle.text);
            } finally {
                fs.closeSync(fd);
            }
            fs.renameSync(partial, file);
        }
        assetFiles.set(file, file);
    }
    return file;
}
