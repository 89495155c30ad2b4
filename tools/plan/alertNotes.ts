import type { Change } from "./diff";

/**
 * What a PrometheusRule update changes, alert by alert (a threshold edit in review): each alert
 * added, removed or changed, with the numbers its expression compares against before and after.
 */

interface Rule {
    alert?: string;
    expr?: string;
    for?: string;
    labels?: Record<string, string>;
}
type Groups = { spec?: { groups?: Array<{ name?: string; rules?: Rule[] }> } };

const prometheusRule = "kubernetes:monitoring.coreos.com/v1:PrometheusRule";

function rulesOf(inputs: unknown): Map<string, Rule> {
    const out = new Map<string, Rule>();
    for (const g of (inputs as Groups).spec?.groups ?? []) {
        for (const r of g.rules ?? []) {
            const owner = r.labels?.storage ?? r.labels?.driver ?? g.name ?? "";
            out.set(`${r.alert} (${owner})`, r);
        }
    }
    return out;
}

/** The numbers an expression compares against (`>= 85`, `> 0`), in order. */
function thresholds(expr: string): string[] {
    return [...expr.matchAll(/(>=|<=|==|>|<)\s*(-?\d+(?:\.\d+)?)(?![\w.])/g)].map((m) => `${m[1]} ${m[2]}`);
}

function describeChange(before: Rule, after: Rule): string {
    const was = thresholds(before.expr ?? "");
    const now = thresholds(after.expr ?? "");
    const parts: string[] = [];
    if (before.expr !== after.expr) {
        parts.push(was.join(", ") !== now.join(", ") && was.length === now.length ? `${was.join(", ")} -> ${now.join(", ")}` : "expression changed");
    }
    if (before.for !== after.for) {
        parts.push(`for ${before.for} -> ${after.for}`);
    }
    return parts.length ? parts.join("; ") : "labels or texts changed";
}

export function alertNotes(c: Change): string[] {
    if (c.resource.type !== prometheusRule || c.kind !== "update" || !c.before) {
        return [];
    }
    const before = rulesOf(c.before.inputs);
    const after = rulesOf(c.resource.inputs);
    const notes: string[] = [];
    for (const [key, rule] of after) {
        const old = before.get(key);
        if (!old) {
            notes.push(`alert ${key} added`);
        } else if (JSON.stringify(old) !== JSON.stringify(rule)) {
            notes.push(`alert ${key}: ${describeChange(old, rule)}`);
        }
    }
    for (const key of before.keys()) {
        if (!after.has(key)) {
            notes.push(`alert ${key} removed`);
        }
    }
    return notes;
}
