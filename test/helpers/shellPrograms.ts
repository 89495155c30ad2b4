/**
 * The programs a shell text calls, read from shfmt's syntax tree (`shfmt -tojson`), not by
 * pattern: each simple command's name where it is a literal word, and through `exec`, `nice`,
 * `xargs`, `timeout <duration>` and `command <program>` also the program they run. Left out: the
 * shell's builtins (dash's and POSIX's), the functions the texts define, names that are not
 * literal (`"$@"`), and `command -v <name>`, a probe whose name may be absent. What an image must
 * hold for the texts to run.
 */
import { execFileSync } from "node:child_process";

const builtins = new Set(
    ". : [ alias bg break cd command continue echo eval exec exit export false fc fg getopts hash jobs kill local printf pwd read readonly return set shift test times trap true type ulimit umask unalias unset wait".split(" "),
);
/**
 * Programs that run another program named after their options; each with its options that take
 * an argument. timeout also takes a duration first. `exec` and `command` are builtins that do the same.
 */
const runners: Record<string, Set<string>> = {
    exec: new Set(["-a"]),
    nice: new Set(["-n"]),
    xargs: new Set(["-n", "-P", "-I", "-d", "-L", "-s", "-E", "-a"]),
    timeout: new Set(["-s", "-k", "--signal", "--kill-after"]),
};

type Node = Record<string, any>;

/** A word's text when every part is a literal (bare or single-quoted); else undefined. */
function literal(word: Node | undefined): string | undefined {
    if (!word?.Parts?.length) return undefined;
    let text = "";
    for (const part of word.Parts) {
        if (part.Type !== "Lit" && part.Type !== "SglQuoted") return undefined;
        text += part.Value;
    }
    return text;
}

/** The programs a simple command (its words) runs: a runner and the program it runs. */
function programsOf(words: (string | undefined)[]): string[] {
    const found: string[] = [];
    let i = 0;
    for (;;) {
        const w = words[i];
        if (w === undefined) return found;
        if (w === "command") {
            // `command -v name`: a probe; the name may well be absent
            if (words[i + 1] === "-v" || words[i + 1] === "-V") return found;
            i++;
            continue;
        }
        if (!builtins.has(w)) found.push(w);
        const withArgument = runners[w];
        if (!withArgument) return found;
        i++;
        while (words[i]?.startsWith("-")) i += withArgument.has(words[i]!) ? 2 : 1;
        if (w === "timeout") i++;
    }
}

/** The programs `texts` call, sorted, less the functions any of them defines. */
export function programsCalled(texts: string[]): string[] {
    const calls = new Set<string>();
    const functions = new Set<string>();
    const walk = (node: unknown): void => {
        if (Array.isArray(node)) return node.forEach(walk);
        if (!node || typeof node !== "object") return;
        const n = node as Node;
        if (n.Type === "FuncDecl") functions.add(n.Name.Value);
        if (n.Type === "CallExpr" && n.Args?.length) {
            for (const program of programsOf(n.Args.map(literal))) calls.add(program);
        }
        Object.values(n).forEach(walk);
    };
    for (const text of texts) {
        walk(JSON.parse(execFileSync("shfmt", ["-tojson"], { input: text, encoding: "utf8", maxBuffer: 1 << 26 })));
    }
    return [...calls].filter((c) => !functions.has(c)).sort();
}
