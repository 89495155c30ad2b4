import { createHash } from "crypto";
import * as fs from "fs";
import * as path from "path";
import { nodeScriptDir, readNodeScript } from "../../components/node/script";
import { defaultBundleDir } from "../../components/node/shipped";
import { nodeCommandArgs } from "./describe";
import type { Change } from "./diff";
import { PlannedResource } from "./model";

/**
 * Script sets in a plan, for review: a script change shows once per stack as a unified diff of
 * the set (per script file of it), and each user that runs it as one line (`runs script set
 * 3f2a1c (was 9b7e44)`), instead of the scripts' text once per resource. Sets are the immutable
 * script ConfigMaps (component label `ceph-scripts`) and the node bundles (a CopyToRemote's file
 * asset, read from its file when that still holds the hash state names). Users are the pod
 * templates whose annotation `storage.zcloud.io/script-sets` names their sets
 * (`<script>=<sha256>,...`), the node commands whose stub names a bundle by hash, and the local
 * commands (CephFS gates and drains) whose stub names a ConfigMap's set by hash.
 */
const setsAnnotation = "storage.zcloud.io/script-sets";
const setComponent = "ceph-scripts";

export interface ScriptSetText {
    /** The script's name: the ConfigMap key, or the node command's script name (`lvm-reconcile.sh`). */
    script: string;
    sha256: string;
    text: string;
}

const shortId = (sha256: string) => sha256.slice(0, 12);
const sha256Of = (text: string) => createHash("sha256").update(text).digest("hex");

/** The most a bundle file may hold (a bundle is tens of KiB; the node stub copies no more either). */
const maxBundleBytes = 1 << 20;

/**
 * A bundle file a plan names, when it still holds the hash (a saved plan's may be gone or changed).
 * A plan is data, not a list of paths to read: only a regular file (no link, FIFO or device) of at
 * most 1 MiB, directly in this machine's bundle directory, is read; any other is skipped, and why
 * goes into `skipped`.
 */
function assetText(file: string, sha256: string, skipped: string[]): string | undefined {
    const bundleDir = realDir(defaultBundleDir());
    if (bundleDir === undefined || realDir(path.dirname(file)) !== bundleDir) {
        skipped.push(`${file}: not in this machine's bundle directory ${defaultBundleDir()}`);
        return undefined;
    }
    let fd: number;
    try {
        fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ELOOP") skipped.push(`${file}: a symbolic link`);
        return undefined;
    }
    try {
        const st = fs.fstatSync(fd);
        if (!st.isFile() || st.size > maxBundleBytes) {
            skipped.push(`${file}: ${st.isFile() ? "over 1 MiB" : "not a regular file"}`);
            return undefined;
        }
        const text = fs.readFileSync(fd, "utf8");
        return sha256Of(text) === sha256 ? text : undefined;
    } finally {
        fs.closeSync(fd);
    }
}

/** A directory's real path, or undefined when it does not exist. */
function realDir(dir: string): string | undefined {
    try {
        return fs.realpathSync(dir);
    } catch {
        return undefined;
    }
}

/** The node command a script copy (`<command>-scripts`) is made for: same parent, its name. */
const commandKey = (parent: string, name: string) => `${parent} ${name}`;
const copiedFor = (copy: PlannedResource) => commandKey(copy.parent, copy.name.replace(/-scripts$/, ""));

type FileAssetInput = { asset?: unknown; path?: unknown; sha256?: unknown };

/** The texts of the script sets a plan carries, by sha256; bundle files not read are named in `skipped`. */
export function scriptSetTexts(resources: PlannedResource[], skipped: string[] = []): Map<string, ScriptSetText> {
    const texts = new Map<string, ScriptSetText>();
    const commands = new Map(resources.filter((r) => r.type === "command:remote:Command").map((r) => [commandKey(r.parent, r.name), r]));
    for (const r of resources) {
        if (r.type === "command:remote:CopyToRemote") {
            const source = (r.inputs as { source?: FileAssetInput }).source;
            if (source?.asset === "file" && typeof source.path === "string" && typeof source.sha256 === "string" && !texts.has(source.sha256)) {
                const text = assetText(source.path, source.sha256, skipped);
                // Named as the node command it is copied for runs it (`<command>-scripts`).
                const user = commands.get(copiedFor(r));
                const name = user ? [...scriptSetsUsed(user).keys()][0] : undefined;
                if (text !== undefined) texts.set(source.sha256, { script: name ? `${name}.sh` : path.basename(source.path), sha256: source.sha256, text });
            }
            continue;
        }
        const inputs = r.inputs as { metadata?: { labels?: Record<string, string> }; data?: Record<string, unknown> };
        if (r.type !== "kubernetes:core/v1:ConfigMap" || inputs.metadata?.labels?.["app.kubernetes.io/component"] !== setComponent) {
            continue;
        }
        for (const [script, text] of Object.entries(inputs.data ?? {})) {
            if (typeof text === "string") {
                const sha256 = sha256Of(text);
                texts.set(sha256, { script, sha256, text });
            }
        }
    }
    return texts;
}

/** `sh -c '<stub>' NAME STAGED SHA256 ...`: the bundle a node command's stub runs, as NAME. */
const stubBundle = /sh -c '(?:[^']|'"'"')*' (\S+) \S+\.sh ([0-9a-f]{64})(?: |$)/s;

/** `sh -c '<stub>' NAME CONFIGMAP SHA256 ...`: the local set a gate's or drain's stub runs (NAME.sh of CONFIGMAP). */
const localStubSet = /^sh -c '(?:[^']|'"'"')*' ([a-z0-9-]+) [a-z0-9.-]+ ([0-9a-f]{64})(?: |$)/s;

/** Script -> sha256 of the sets a resource runs: its pod template's, or its stub's (none: not a script user). */
export function scriptSetsUsed(r: PlannedResource): Map<string, string> {
    const used = new Map<string, string>();
    if (r.type === "command:local:Command") {
        for (const phase of ["create", "delete"]) {
            const m = localStubSet.exec(String(r.inputs[phase] ?? ""));
            if (m) {
                used.set(`${m[1]}.sh`, m[2]);
                break;
            }
        }
        return used;
    }
    if (r.type === "command:remote:Command") {
        for (const phase of ["create", "delete"]) {
            const m = stubBundle.exec(String(r.inputs[phase] ?? ""));
            if (m) {
                used.set(m[1], m[2]);
                break;
            }
        }
        return used;
    }
    const value = (r.inputs as { spec?: { template?: { metadata?: { annotations?: Record<string, unknown> } } } }).spec?.template?.metadata?.annotations?.[setsAnnotation];
    if (typeof value === "string") {
        for (const pair of value.split(",")) {
            const [script, sha256] = pair.split("=");
            if (script && sha256) used.set(script, sha256);
        }
    }
    return used;
}

/** A node command's phase as a reviewer reads it: sudo or not, script name and arguments (no bundle words). */
const phaseText = (v: unknown) => (typeof v === "string" ? `${v.startsWith("sudo -n ") ? "sudo " : ""}${nodeCommandArgs(v)}` : String(v));

/**
 * True for a change the script-set part of the diff says in full: a node command whose phases
 * run the same script with the same arguments, only from another set (or inline before), and
 * the copy of a set to a node whose command stays. The change still happens (and is counted);
 * it is not listed again per resource.
 */
export function coveredByScriptSets(c: Change, updated: ReadonlySet<string>): boolean {
    const phases = ["create", "update", "delete"];
    if (c.resource.type === "command:remote:Command" && c.kind === "update" && c.before && !c.connection) {
        const before = c.before;
        return c.fields.every((f) => phases.includes(f) && phaseText(before.inputs[f]) === phaseText(c.resource.inputs[f]) && nodeCommandArgs(c.resource.inputs[f]) !== "");
    }
    if (c.resource.type !== "command:remote:CopyToRemote" || c.connection) {
        return false;
    }
    if (c.kind === "update") {
        return c.fields.every((f) => f === "remotePath" || f === "source" || f.startsWith("source."));
    }
    // The first copy to a node whose command already ran its scripts inline (an upgrade).
    return c.kind === "create" && updated.has(copiedFor(c.resource));
}

/** The node commands a diff updates, as coveredByScriptSets takes them (one pass, for large diffs). */
export function updatedCommands(changes: Change[]): Set<string> {
    return new Set(changes.filter((c) => c.kind === "update" && c.resource.type === "command:remote:Command").map((c) => commandKey(c.resource.parent, c.resource.name)));
}

/**
 * The node script files a set is made of, in order, when its text is exactly some of this
 * program's script files joined by newlines (how bundles are made); undefined otherwise.
 */
export function scriptFilesOf(text: string, known: ReadonlyArray<{ file: string; text: string }> = knownScriptFiles()): Array<{ file: string; lines: number }> | undefined {
    const files: Array<{ file: string; lines: number }> = [];
    let at = 0;
    while (at < text.length) {
        const next = known
            .filter((k) => text.startsWith(k.text, at) && (at + k.text.length === text.length || text[at + k.text.length] === "\n"))
            .sort((a, b) => b.text.length - a.text.length)[0];
        if (!next) return undefined;
        files.push({ file: next.file, lines: next.text.split("\n").length });
        at += next.text.length + 1;
    }
    return files.length ? files : undefined;
}

/**
 * An old set whose own script is not this program's text (it changed too) but whose leading
 * files are (the libraries it carried): those files, then the rest as `rest`, the script the new
 * set ends with. Undefined when no leading file is known.
 */
export function leadingFilesThen(text: string, rest: string, known: ReadonlyArray<{ file: string; text: string }> = knownScriptFiles()): Array<{ file: string; lines: number }> | undefined {
    const files: Array<{ file: string; lines: number }> = [];
    let at = 0;
    for (;;) {
        const next = known.filter((k) => k.file !== rest && text.startsWith(k.text + "\n", at)).sort((a, b) => b.text.length - a.text.length)[0];
        if (!next) break;
        files.push({ file: next.file, lines: next.text.split("\n").length });
        at += next.text.length + 1;
    }
    if (!files.length || at >= text.length) return undefined;
    return [...files, { file: rest, lines: text.slice(at).split("\n").length }];
}

let known: Array<{ file: string; text: string }> | undefined;
/** This program's node script files (components/node, its ceph folder). */
function knownScriptFiles(): Array<{ file: string; text: string }> {
    if (known === undefined) {
        const list = (dir: string) => fs.readdirSync(path.join(nodeScriptDir, dir)).filter((f) => f.endsWith(".sh")).map((f) => (dir ? `${dir}/${f}` : f));
        known = [...list(""), ...list("ceph")].filter((f) => readNodeScript(f) !== "").map((file) => ({ file, text: readNodeScript(file) }));
    }
    return known;
}

type DiffOp = { op: " " | "-" | "+"; line: string; j: number };

/** The edit script from `a` to `b` by lines (longest common subsequence): scripts are a few hundred lines. */
function diffOps(a: string, b: string): DiffOp[] {
    const x = a.split("\n");
    const y = b.split("\n");
    const n = x.length;
    const m = y.length;
    // lcs[i][j]: common lines of x[i..] and y[j..]
    const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) {
        for (let j = m - 1; j >= 0; j--) {
            lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
        }
    }
    // j: the line of `b` the op is at (a removal sits before it)
    const ops: DiffOp[] = [];
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
        if (i < n && j < m && x[i] === y[j]) {
            i++;
            ops.push({ op: " ", line: y[j], j: j++ });
        }
        // removals before additions where both keep the common lines, as diff -u prints them
        else if (j < m && (i === n || lcs[i][j + 1] > lcs[i + 1][j])) ops.push({ op: "+", line: y[j], j: j++ });
        else ops.push({ op: "-", line: x[i++], j });
    }
    return ops;
}

/** The hunks of an edit script (`context` lines around each change), line numbers from 1 within it; none when equal. */
function hunks(ops: DiffOp[], context: number): string[] {
    const out: string[] = [];
    const changed = ops.map((o, k) => (o.op === " " ? -1 : k)).filter((k) => k >= 0);
    let k = 0;
    while (k < changed.length) {
        const start = Math.max(0, changed[k] - context);
        let end = Math.min(ops.length, changed[k] + context + 1);
        while (k + 1 < changed.length && changed[k + 1] - context <= end) end = Math.min(ops.length, changed[++k] + context + 1);
        k++;
        const hunk = ops.slice(start, end);
        // 1-based first lines of the hunk on each side (ops before `start` counted)
        const before = ops.slice(0, start);
        const aStart = before.filter((o) => o.op !== "+").length + 1;
        const bStart = before.filter((o) => o.op !== "-").length + 1;
        const aLen = hunk.filter((o) => o.op !== "+").length;
        const bLen = hunk.filter((o) => o.op !== "-").length;
        out.push(`@@ -${aLen ? aStart : aStart - 1},${aLen} +${bLen ? bStart : bStart - 1},${bLen} @@`, ...hunk.map((o) => o.op + o.line));
    }
    return out;
}

/** A unified diff of two texts (3 lines of context), `--- a` / `+++ b` headers, as GNU diff -u; empty when equal. */
export function unifiedDiff(a: string, b: string, labelA: string, labelB: string, context = 3): string {
    if (a === b) return "";
    return [`--- ${labelA}`, `+++ ${labelB}`, ...hunks(diffOps(a, b), context)].join("\n");
}

/**
 * A changed script set as a reviewer reads it: which of its files changed, then a unified diff
 * per changed file (line numbers within the file). The files are the new set's (this program's
 * script files); the old set's lines are placed by the common lines around them. A set that is
 * not made of this program's files: one diff of the whole text.
 */
export function scriptSetDiff(script: string, a: ScriptSetText, b: ScriptSetText): string {
    const head = `${script}: script set ${shortId(b.sha256)} (was ${shortId(a.sha256)})`;
    const files = scriptFilesOf(b.text);
    if (!files) {
        return [`${head}:`, unifiedDiff(a.text, b.text, `${script} ${shortId(a.sha256)}`, `${script} ${shortId(b.sha256)}`)].join("\n");
    }
    const oldFiles = scriptFilesOf(a.text) ?? leadingFilesThen(a.text, files[files.length - 1].file);
    if (oldFiles && oldFiles.map((f) => f.file).join("\n") !== files.map((f) => f.file).join("\n")) {
        return filesMovedDiff(head, a, b, oldFiles, files);
    }
    const ops = diffOps(a.text, b.text);
    // The file of each line of b: its index in `files`.
    const fileOfLine = files.flatMap((f, k) => Array<number>(f.lines).fill(k));
    const last = files.length - 1;
    // A removal sits before line j of b; a file's last line is the empty one after its final newline.
    const fileOf = (o: DiffOp) => fileOfLine[o.j] ?? last;
    const perFile = files.map(() => [] as DiffOp[]);
    for (const o of ops) perFile[fileOf(o)].push(o);
    const changed = files.filter((_, k) => perFile[k].some((o) => o.op !== " ")).map((f) => f.file);
    const same = files.map((f) => f.file).filter((f) => !changed.includes(f));
    const lines = [`${head}: ${changed.join(", ")} changed${same.length ? `; ${same.join(", ")} unchanged` : ""}`];
    files.forEach((f, k) => {
        if (changed.includes(f.file)) lines.push(`--- ${f.file} ${shortId(a.sha256)}`, `+++ ${f.file} ${shortId(b.sha256)}`, ...hunks(perFile[k], 3));
    });
    return lines.join("\n");
}

/** Each file's text of a set made of script files (scriptFilesOf), by file. */
function fileTexts(text: string, files: Array<{ file: string; lines: number }>): Map<string, string> {
    const lines = text.split("\n");
    const out = new Map<string, string>();
    let at = 0;
    for (const f of files) {
        out.set(f.file, lines.slice(at, at + f.lines).join("\n"));
        at += f.lines;
    }
    return out;
}

/**
 * A set whose files are not the old set's (a file moved into a shared library, or added): the
 * files that left the set and those that joined it, then a diff per file kept and changed.
 */
function filesMovedDiff(head: string, a: ScriptSetText, b: ScriptSetText, oldFiles: Array<{ file: string; lines: number }>, files: Array<{ file: string; lines: number }>): string {
    const was = fileTexts(a.text, oldFiles);
    const now = fileTexts(b.text, files);
    const left = [...was.keys()].filter((f) => !now.has(f));
    const joined = [...now.keys()].filter((f) => !was.has(f));
    const kept = [...now.keys()].filter((f) => was.has(f));
    const changed = kept.filter((f) => was.get(f) !== now.get(f));
    const same = kept.filter((f) => was.get(f) === now.get(f));
    const said = [
        ...(left.length ? [`${left.join(", ")} left the set`] : []),
        ...(joined.length ? [`${joined.join(", ")} joined it`] : []),
        ...(changed.length ? [`${changed.join(", ")} changed`] : []),
        ...(same.length ? [`${same.join(", ")} unchanged`] : []),
    ];
    const lines = [`${head}: ${said.join("; ")}`];
    for (const f of changed) lines.push(unifiedDiff(was.get(f)!, now.get(f)!, `${f} ${shortId(a.sha256)}`, `${f} ${shortId(b.sha256)}`));
    return lines.join("\n");
}

/**
 * The script-set part of a diff: per changed set once, which files changed and their unified
 * diffs (or, when the old plan does not carry the old text, the old id only), then one line per
 * resource that runs another set than before. Empty when no set changed.
 */
export function renderScriptSetChanges(before: PlannedResource[], after: PlannedResource[]): string {
    const skipped: string[] = [];
    const oldTexts = scriptSetTexts(before, skipped);
    const newTexts = scriptSetTexts(after, skipped);
    const old = new Map(before.map((r) => [r.urn, r]));
    const lines: string[] = [];
    const diffs = new Map<string, string>();
    for (const r of after) {
        const now = scriptSetsUsed(r);
        if (now.size === 0) continue;
        const prev = old.get(r.urn);
        const was = prev ? scriptSetsUsed(prev) : new Map<string, string>();
        for (const [script, sha256] of now) {
            const wasSha = was.get(script);
            if (wasSha === sha256 || !prev) continue;
            // A set the resource did not run before while it ran others (a shared library split out of them): new.
            const added = !wasSha && was.size > 0;
            const wasLabel = wasSha ? shortId(wasSha) : added ? "none before" : "inline in the old plan";
            lines.push(`  ${r.name}: ${script} runs script set ${shortId(sha256)} (was ${wasLabel})`);
            const key = `${script} ${wasSha ?? ""} ${sha256}`;
            if (diffs.has(key)) continue;
            const a = wasSha ? oldTexts.get(wasSha) : undefined;
            const b = newTexts.get(sha256);
            const madeOf = b && scriptFilesOf(b.text);
            diffs.set(
                key,
                a && b
                    ? scriptSetDiff(script, a, b)
                    : added
                      ? `${script}: script set ${shortId(sha256)}, new${madeOf ? `: ${madeOf.map((f) => f.file).join(", ")}` : ""}`
                      : `${script}: script set ${shortId(sha256)} (was ${wasLabel}); the old plan does not carry the old text`,
            );
        }
    }
    const notRead = [...new Set(skipped)].map((why) => `  not read: ${why}`);
    if (lines.length === 0) return notRead.length ? ["Bundle files the plans name, not read:", ...notRead].join("\n") : "";
    return ["Script sets changed (each once):", "", [...diffs.values()].join("\n\n"), "", "Runs another script set:", ...lines, ...(notRead.length ? ["", "Bundle files the plans name, not read:", ...notRead] : [])].join("\n");
}

/** `--out`: each script set's text as `scripts/<id>/<script>`. */
export function scriptSetFiles(resources: PlannedResource[]): Array<{ path: string; text: string }> {
    return [...scriptSetTexts(resources).values()].map((s) => ({ path: `scripts/${shortId(s.sha256)}/${s.script}`, text: s.text }));
}
