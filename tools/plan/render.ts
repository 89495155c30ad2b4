import { printable } from "../../components/config/printable";
import { Change } from "./diff";
import { describe, labelStdinChange, nodeOf, urnName } from "./describe";
import { nodeLabelManifest } from "./manifests";
import { PlannedResource } from "./model";
import { destructiveMark, phasesToldInDiskTerms } from "./diskNotes";
import { changeNotes } from "./notes";
import { coveredByScriptSets, updatedCommands } from "./scriptSets";
import { gateChangeNote } from "./roll";

const componentLabel = (r: PlannedResource) => `${r.name} (${r.type.split(":").pop()})`;

/** Items by key, in their order; linear (no array copies per item). */
function groupBy<T>(items: T[], keyOf: (item: T) => string): Map<string, T[]> {
    const groups = new Map<string, T[]>();
    for (const item of items) {
        const key = keyOf(item);
        const group = groups.get(key);
        if (group) {
            group.push(item);
        } else {
            groups.set(key, [item]);
        }
    }
    return groups;
}

/**
 * The resource tree by storage and node: per component its node lines (disk command -> label),
 * then its other objects.
 */
export function renderTree(resources: PlannedResource[]): string {
    const byParent = groupBy(resources, (r) => r.parent);
    const lines: string[] = [];
    const stack = resources.find((r) => r.type === "pulumi:pulumi:Stack");
    const top = stack ? byParent.get(stack.urn) ?? [] : resources.filter((r) => !r.parent);
    for (const r of top.filter((r) => r.custom)) {
        lines.push(describe(r));
    }
    for (const component of top.filter((r) => !r.custom)) {
        const children = byParent.get(component.urn) ?? [];
        lines.push("", componentLabel(component));
        const nodes = groupBy(children, (child) => nodeOf(child) ?? "");
        const rest = nodes.get("") ?? [];
        nodes.delete("");
        for (const [node, items] of [...nodes].sort(([a], [b]) => a.localeCompare(b))) {
            lines.push(`  ${node}`);
            for (const item of items) {
                lines.push(`    ${describe(item)}`);
            }
        }
        for (const child of rest) {
            lines.push(`  ${describe(child)}`);
        }
    }
    // Names come from the config and, with --diff-plan, from a saved plan: one printable line each.
    return lines.map(printable).join("\n");
}

const symbols: Record<Change["kind"], string> = { create: "+", update: "~", replace: "+-", delete: "-" };

/**
 * One line per change, like a preview: `+ create  local-fast prepare node3 [/dev/sdb]`. A change
 * the script-set part tells (a node running another script set) is counted, not listed; a node
 * command whose notes say its change in disk terms gets no "create changed".
 */
export function renderChanges(changes: Change[]): string {
    if (changes.length === 0) {
        return "no changes";
    }
    const order: Change["kind"][] = ["delete", "replace", "update", "create"];
    const updated = updatedCommands(changes);
    const listed = changes.filter((c) => !coveredByScriptSets(c, updated));
    const sorted = [...listed].sort((a, b) => order.indexOf(a.kind) - order.indexOf(b.kind));
    let destructiveNotes = 0;
    const lines = sorted.map((c) => {
        const r = c.resource;
        let kind: string = c.kind;
        if (c.kind === "replace") {
            kind = r.deleteBeforeReplace ? "replace (delete first)" : "replace";
        }
        if (c.kind === "delete" && r.retainOnDelete) {
            kind = "delete (kept in cluster)";
        }
        const gate = gateChangeNote(c);
        const notes = [...changeNotes(c), ...(gate.note ? [gate.note] : [])];
        destructiveNotes += notes.filter((n) => n.startsWith(destructiveMark)).length;
        const told = [...phasesToldInDiskTerms(c), ...gate.told];
        const fields = c.fields.filter((f) => !told.includes(f)).flatMap((f) => (f === "stdin" && c.before && nodeLabelManifest(r) ? labelStdinChange(c.before, r) : [f]));
        const detail =
            c.kind === "replace"
                ? `: ${c.replaceBecause.join(", ")} changed`
                : c.kind === "update" && fields.length
                  ? `: ${fields.join(", ")} changed`
                  : "";
        const line = `${symbols[c.kind].padEnd(2)} ${kind.padEnd(22)} ${r.name}  ${r.custom ? describe(r) : `(${r.type.split(":").pop()})`}${detail}`;
        const indent = " ".repeat(26);
        return [line, ...(c.connection ?? []).map((l) => `${indent}${l}`), ...notes.map((n) => (n.startsWith(destructiveMark) ? `${indent}${n}` : `${indent}note: ${n}`))].map(printable).join("\n");
    });
    const counts = order
        .map((k) => [k, changes.filter((c) => c.kind === k).length] as const)
        .filter(([, n]) => n > 0)
        .map(([k, n]) => `${n} to ${k}`);
    const untold = changes.length - listed.length;
    const tail = untold ? [`(${untold} of them: node commands and their script copies that run another script set, listed below)`] : [];
    // Lines that can destroy data are counted under the totals too, so a long diff's reader sees they exist.
    const warning = destructiveNotes
        ? [`${destructiveMark}${destructiveNotes} line${destructiveNotes === 1 ? "" : "s"} above can destroy data (devices wiped or released, OSDs drained, storages removed): read ${destructiveNotes === 1 ? "it" : "each"} before pulumi up`]
        : [];
    return [...(lines.length ? [...lines, ""] : []), counts.join(", "), ...tail, ...warning].join("\n");
}

export { urnName };
