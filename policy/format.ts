// Prints violations the way the Pulumi CLI prints a policy pack's results after a preview:
//
//   Policies:
//       ❌ zcloud-storage-policy@v0.1.0 (local: policy)
//           - [mandatory]  storage-node-exclusive  (command:local:Command: shared-fs-node3-label)
//             <policy description>
//             <message>
//
// ✅ when nothing was reported, ⚠️ when only advisory violations were. Violations are sorted by
// enforcement level (mandatory first), policy name and URN; the resource is shown as
// "(<type>: <name>)" from its URN, stack-level violations have no resource clause.
import type { Violation } from "./model";

export interface FormatOptions {
    packName: string;
    packVersion: string;
    /** The path given to --policy-pack, shown as "(local: <path>)"; "" omits the mark. */
    localPath?: string;
    /** Show full URNs instead of resource names (the CLI's --show-urns). */
    showUrns?: boolean;
}

const RANK: Record<string, number> = { remediate: 0, mandatory: 1, advisory: 2, disabled: 3 };

/** The type segment of a URN (the last of a parent$child chain) and the resource name. */
export function splitUrn(urn: string): { type: string; name: string } | undefined {
    const parts = urn.split("::");
    if (parts.length < 4 || !parts[0].startsWith("urn:pulumi:")) {
        return undefined;
    }
    const qualifiedType = parts[2];
    return {
        type: qualifiedType.slice(qualifiedType.lastIndexOf("$") + 1),
        name: parts.slice(3).join("::"),
    };
}

/** The CLI's short type name: "pkg:mod/file:Type" -> "pkg:mod:Type" when file == camelCase(Type). */
export function displayTypeName(type: string): string {
    const parts = type.split(":");
    if (parts.length !== 3 || parts[2] === "") {
        return type;
    }
    const [pkg, mod, name] = parts;
    const slash = mod.lastIndexOf("/");
    if (slash < 0) {
        return type;
    }
    const file = mod.slice(slash + 1);
    return file === name.charAt(0).toLowerCase() + name.slice(1) ? `${pkg}:${mod.slice(0, slash)}:${name}` : type;
}

/**
 * What several violations of one policy have in common (one bastion, one namespace): a key, and
 * the message that says it once for all of them (given their resource names).
 */
export interface ViolationCause {
    key: string;
    message: (names: string[]) => string;
}

export function formatViolationsWith(
    violations: Violation[],
    describePolicy: (policy: string) => string | undefined,
    options: FormatOptions,
    causeOf: (v: Violation) => ViolationCause | undefined = () => undefined,
): string {
    const shown = violations.filter((v) => v.enforcementLevel !== "disabled");
    const sorted = [...shown].sort(
        (a, b) =>
            (RANK[a.enforcementLevel] ?? 99) - (RANK[b.enforcementLevel] ?? 99) ||
            (a.policy < b.policy ? -1 : a.policy > b.policy ? 1 : 0) ||
            ((a.urn ?? "") < (b.urn ?? "") ? -1 : (a.urn ?? "") > (b.urn ?? "") ? 1 : 0),
    );
    const mark = sorted.some((v) => v.enforcementLevel === "mandatory") ? "❌" : sorted.length > 0 ? "⚠️" : "✅";
    const local = options.localPath === undefined ? " (local: policy)" : options.localPath ? ` (local: ${options.localPath})` : "";
    const lines = ["Policies:", `    ${mark} ${options.packName}@v${options.packVersion}${local}`];
    const indent = "          ";
    // Violations of one cause print once, at the place of the first, naming every resource.
    const groups = new Map<string, { cause: ViolationCause; members: Violation[] }>();
    const entries: Array<Violation | string> = [];
    for (const v of sorted) {
        const cause = causeOf(v);
        if (!cause) {
            entries.push(v);
            continue;
        }
        const key = `${v.enforcementLevel}\0${v.policy}\0${cause.key}`;
        const group = groups.get(key);
        if (group) {
            group.members.push(v);
        } else {
            groups.set(key, { cause, members: [v] });
            entries.push(key);
        }
    }
    const name = (v: Violation) => {
        const parsed = v.urn ? splitUrn(v.urn) : undefined;
        return parsed ? { type: displayTypeName(parsed.type), name: options.showUrns ? v.urn! : parsed.name } : undefined;
    };
    for (const entry of entries) {
        const group = typeof entry === "string" ? groups.get(entry)! : undefined;
        const v = group ? group.members[0] : (entry as Violation);
        const grouped = group !== undefined && group.members.length > 1;
        const names = grouped ? group.members.map(name).filter((n) => n !== undefined) : [];
        const one = name(v);
        const clause = grouped
            ? `  (${[...new Set(names.map((n) => n.type))].map((t) => `${t}: ${names.filter((n) => n.type === t).map((n) => n.name).join(", ")}`).join("; ")})`
            : one
              ? `  (${one.type}: ${one.name})`
              : "";
        lines.push(`        - [${v.enforcementLevel}]  ${v.policy}${clause}`);
        const description = describePolicy(v.policy);
        const text = grouped ? group.cause.message(names.map((n) => n.name)) : v.message;
        const message = (description ? `${description}\n${text}` : text).replace(/\n+$/, "");
        lines.push(indent + message.split("\n").join(`\n${indent}`));
    }
    return lines.join("\n") + "\n";
}
