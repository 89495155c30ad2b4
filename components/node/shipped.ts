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

/**
 * The bundle as a local file, the source of its copies: written once per content (its name is
 * its hash), so the engine keeps only the path and hash in state and compares assets by hash.
 */
const assetFiles = new Map<string, string>();
export function bundleAssetFile(bundle: ScriptBundle, dir = path.join(os.tmpdir(), "zcloud-storage-scripts")): string {
    const file = path.join(dir, `${bundle.sha256}.sh`);
    if (assetFiles.get(file) === undefined) {
        if (!fs.existsSync(file) || fs.readFileSync(file, "utf8") !== bundle.text) {
            fs.mkdirSync(dir, { recursive: true });
            const partial = `${file}.${process.pid}`;
            fs.writeFileSync(partial, bundle.text, { mode: 0o644 });
            fs.renameSync(partial, file);
        }
        assetFiles.set(file, file);
    }
    return file;
}
