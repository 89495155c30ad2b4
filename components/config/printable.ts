/**
 * What the tools print of text they did not write: config keys and values, a saved plan's names,
 * what a node or the cluster reports (device model and serial, by-id names, VG and LV names,
 * guard reasons, ceph output, error lines). Such text can hold terminal escape sequences
 * (recolour, move the cursor, retitle the window, set the clipboard, rewrite what was printed)
 * and line breaks that forge lines of their own (or close a summary's code fence). Pure:
 * unit-tested.
 */

/**
 * C0 controls (line breaks and tabs included), DEL, C1 controls, the Unicode line and paragraph
 * separators and the bidirectional marks, embeddings, overrides and isolates, which reorder what
 * a terminal or an editor shows.
 */
const controlChars = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** `\x1b`, `\x0a`, `\u202e`: the character's code, visible and inert. */
function escaped(c: string): string {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

/** One line of people-facing output: every control character shown as its escape (`\x1b`). */
export function printable(text: string): string {
    return text.replace(controlChars, escaped);
}

/** Text of several lines (joined by `\n`): each line made printable, the line breaks kept. */
export function printableLines(text: string): string {
    return text.split("\n").map(printable).join("\n");
}

/** Controls JSON.stringify leaves raw (it escapes only U+0000 to U+001F). */
const rawInJson = /[\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * JSON text of `value` that parses back to exactly `value`, with no raw control character in it:
 * what JSON.stringify leaves raw is written as a `\uXXXX` escape (only string contents can hold one).
 */
export function jsonText(value: unknown, indent?: number): string {
    return JSON.stringify(value, null, indent).replace(rawInJson, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * A YAML double-quoted scalar of `text` that reads back as exactly `text` (YAML takes JSON's
 * escapes, `\x7f` and `\u202e` too), with no raw control character in it.
 */
export function yamlQuoted(text: string): string {
    return printable(JSON.stringify(text));
}
