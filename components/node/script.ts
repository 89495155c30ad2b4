import * as fs from "fs";
import * as path from "path";

/** Node-side scripts live next to this file as plain shell files, testable by themselves. */
export const nodeScriptDir = __dirname;

const scriptCache = new Map<string, string>();

/** Reads a node script once; plans with thousands of nodes reuse the text. */
export function readNodeScript(file: string): string {
    let text = scriptCache.get(file);
    if (text === undefined) {
        text = fs.readFileSync(path.join(nodeScriptDir, file), "utf8");
        scriptCache.set(file, text);
    }
    return text;
}

/** Quotes one word for a POSIX shell: single quotes, with embedded quotes closed and reopened. */
export function shellQuote(word: string): string {
    if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) {
        return word;
    }
    return "'" + word.replace(/'/g, `'"'"'`) + "'";
}

export interface NodeScriptInvocation {
    /** Script files under components/node, concatenated in order (shared lib first). */
    files: string[];
    /** The name the script sees as $0 in its messages. */
    name: string;
    /** Positional arguments; never secrets (those go on stdin). */
    args: string[];
    /** Run through `sudo -n` (non-root SSH users). */
    sudo: boolean;
}

/**
 * The exact command string a remote command runs: the scripts are shipped inline, so the node
 * needs nothing installed and the preview shows precisely what will run.
 */
export function renderNodeCommand(inv: NodeScriptInvocation): string {
    const script = inv.files.map(readNodeScript).join("\n");
    const words = ["sh", "-c", shellQuote(script), shellQuote(inv.name), ...inv.args.map(shellQuote)];
    return (inv.sudo ? "sudo -n " : "") + words.join(" ");
}
