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
function quotedScript(files: readonly string[]): string {
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
    files: readonly string[];
    /** The name the script sees as $0 in its messages. */
    name: string;
    /** Positional arguments; never secrets (those go on stdin). */
    args: string[];
    /** Run through `sudo -n` (non-root SSH users). */
    sudo: boolean;
}

/**
 * A command string that carries its scripts inline, for the read-only probes run outside Pulumi
 * (discover, status): they leave nothing on the node and no state holds them. What Pulumi runs on
 * nodes is a stub naming a bundle instead (shipped.ts: renderNodeCommand).
 */
export function renderInlineNodeCommand(inv: NodeScriptInvocation): string {
    const words = ["sh", "-c", quotedScript(inv.files), shellQuote(inv.name), ...inv.args.map(shellQuote)];
    return (inv.sudo ? "sudo -n " : "") + words.join(" ");
}
