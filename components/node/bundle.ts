import { createHash } from "crypto";
import { readNodeScript } from "./script";

/** A script set: node scripts concatenated in order (shared library first), named by its content. */
export interface ScriptBundle {
    /** The script files under components/node, in order. */
    files: readonly string[];
    /** Their text, concatenated: what runs on the node. */
    text: string;
    /** sha256 of `text`, hex. */
    sha256: string;
    /** The first 12 hex digits of sha256: short enough for names and review lines. */
    id: string;
}

const bundles = new Map<string, ScriptBundle>();

/** The bundle of a script set, made once per file list (every node shares the one copy). */
export function scriptBundle(files: readonly string[]): ScriptBundle {
    const key = files.join("\n");
    let bundle = bundles.get(key);
    if (bundle === undefined) {
        const text = files.map(readNodeScript).join("\n");
        const sha256 = createHash("sha256").update(text).digest("hex");
        bundle = { files: [...files], text, sha256, id: sha256.slice(0, 12) };
        bundles.set(key, bundle);
    }
    return bundle;
}
