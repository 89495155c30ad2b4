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

const quotedScripts = new Map<string, string>();

/**
 * The shell-quoted text of script files, concatenated; made once per file list, so every node's
 * command shares the one copy (5000 nodes would otherwise make 5000 copies of tens of KB each).
 */
function quotedScript(files: string[]): string {
    const key = files.join("\n");
    let quoted = quotedScripts.get(key);
    if (quoted === undefined) {
        quoted = shellQuote(files.map(readNodeScript).join("\n"));
        quotedScripts.set(key, quoted);
    }
    return quoted;
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
    const words = ["sh", "-c", quotedScript(inv.files), shellQuote(inv.name), ...inv.args.map(shellQuote)];
    return (inv.sudo ? "sudo -n " : "") + words.join(" ");
}
