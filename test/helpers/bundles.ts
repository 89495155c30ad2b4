/**
 * Script bundles as tests see them: the words a stub command carries, and a node's home with the
 * bundles staged as the program's copies would stage them.
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { runBundleStub } from "../../components/node/shipped";

const nodeDir = path.join(__dirname, "..", "..", "components", "node");

/** A script set's text and sha256, computed here from the files (not by the code under test). */
export function bundleOf(files: string[]): { text: string; sha256: string } {
    const text = files.map((f) => fs.readFileSync(path.join(nodeDir, f), "utf8")).join("\n");
    return { text, sha256: createHash("sha256").update(text).digest("hex") };
}

/** The words after `sh` of a stub command up to the script's own arguments: `-c stub name staged sha256`. */
export function stubWords(files: string[], name: string): string[] {
    const { sha256 } = bundleOf(files);
    return ["-c", runBundleStub(), name, `.zcloud-storage/scripts/${sha256}.sh`, sha256];
}

/** Stages a script set under `home` where its CopyToRemote puts it (relative to the SSH user's home). */
export function stageBundle(home: string, files: string[]): string {
    const { text, sha256 } = bundleOf(files);
    const file = path.join(home, ".zcloud-storage", "scripts", `${sha256}.sh`);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
    return file;
}
