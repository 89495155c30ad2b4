import { createHash } from "crypto";
import { PlannedResource } from "./model";

/**
 * Script sets in a plan, for review: a script change shows once per stack as a unified diff of
 * the set, and each workload that runs it as one line (`runs script set 3f2a1c (was 9b7e44)`),
 * instead of the scripts' text once per resource. Sets are the immutable script ConfigMaps
 * (component label `ceph-scripts`); users are the pod templates whose annotation
 * `storage.zcloud.io/script-sets` names them (`<script>=<sha256>,...`).
 */
const setsAnnotation = "storage.zcloud.io/script-sets";
const setComponent = "ceph-scripts";

export interface ScriptSetText {
    /** The script's file name (the ConfigMap key). */
    script: string;
    sha256: string;
    text: string;
}

const shortId = (sha256: string) => sha256.slice(0, 12);

/** The texts of the script sets a plan carries, by sha256. */
export function scriptSetTexts(resources: PlannedResource[]): Map<string, ScriptSetText> {
    const texts = new Map<string, ScriptSetText>();
    for (const r of resources) {
        const inputs = r.inputs as { metadata?: { labels?: Record<string, string> }; data?: Record<string, unknown> };
        if (r.type !== "kubernetes:core/v1:ConfigMap" || inputs.metadata?.labels?.["app.kubernetes.io/component"] !== setComponent) {
            continue;
        }
        for (const [script, text] of Object.entries(inputs.data ?? {})) {
            if (typeof text === "string") {
                const sha256 = createHash("sha256").update(text).digest("hex");
                texts.set(sha256, { script, sha256, text });
            }
        }
    }
    return texts;
}

/** Script -> sha256 of the sets a resource's pod template runs (none: not a script user). */
export function scriptSetsUsed(r: PlannedResource): Map<string, string> {
    const value = (r.inputs as { spec?: { template?: { metadata?: { annotations?: Record<string, unknown> } } } }).spec?.template?.metadata?.annotations?.[setsAnnotation];
    const used = new Map<string, string>();
    if (typeof value === "string") {
        for (const pair of value.split(",")) {
            const [script, sha256] = pair.split("=");
            if (script && sha256) used.set(script, sha256);
        }
    }
    return used;
}

/**
 * A unified diff of two texts (3 lines of context), `--- a` / `+++ b` headers; empty when equal.
 * Line-based longest common subsequence: scripts are a few hundred lines.
 */
export function unifiedDiff(a: string, b: string, labelA: string, labelB: string, context = 3): string {
    if (a === b) return "";
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
    const ops: Array<{ op: " " | "-" | "+"; line: string; i: number; j: number }> = [];
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
        if (i < n && j < m && x[i] === y[j]) ops.push({ op: " ", line: x[i++], i, j: j++ });
        // removals before additions where both keep the common lines, as diff -u prints them
        else if (j < m && (i === n || lcs[i][j + 1] > lcs[i + 1][j])) ops.push({ op: "+", line: y[j++], i, j });
        else ops.push({ op: "-", line: x[i++], i, j });
    }
    const out = [`--- ${labelA}`, `+++ ${labelB}`];
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
    return out.join("\n");
}

/**
 * The script-set part of a diff: per changed set once, its unified diff (or, when the old plan
 * does not carry the old text, the old id only), then one line per resource that runs another
 * set than before. Empty when no set changed.
 */
export function renderScriptSetChanges(before: PlannedResource[], after: PlannedResource[]): string {
    const oldTexts = scriptSetTexts(before);
    const newTexts = scriptSetTexts(after);
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
            const wasLabel = wasSha ? shortId(wasSha) : "inline in the old plan";
            lines.push(`  ${r.name}: ${script} runs script set ${shortId(sha256)} (was ${wasLabel})`);
            const key = `${script} ${wasSha ?? ""} ${sha256}`;
            if (diffs.has(key)) continue;
            const a = wasSha ? oldTexts.get(wasSha) : undefined;
            const b = newTexts.get(sha256);
            diffs.set(
                key,
                a && b
                    ? unifiedDiff(a.text, b.text, `${script} ${shortId(a.sha256)}`, `${script} ${shortId(b.sha256)}`)
                    : `${script}: script set ${shortId(sha256)} (was ${wasLabel}); the old plan does not carry the old text`,
            );
        }
    }
    if (lines.length === 0) return "";
    return ["Script sets changed (each once):", "", ...diffs.values(), "", "Runs another script set:", ...lines].join("\n");
}

/** `--out`: each script set's text as `scripts/<id>/<script>`. */
export function scriptSetFiles(resources: PlannedResource[]): Array<{ path: string; text: string }> {
    return [...scriptSetTexts(resources).values()].map((s) => ({ path: `scripts/${shortId(s.sha256)}/${s.script}`, text: s.text }));
}
