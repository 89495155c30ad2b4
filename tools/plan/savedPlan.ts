import * as fs from "fs";
import { CliInputError } from "./cliInputs";
import { PlannedResource } from "./model";

/**
 * `--diff-plan FILE`: a plan saved with `--json`, possibly by another version of this program.
 * It reads only the shape DESIGN.md fixes, `{ resources: [{ urn, type, name, parent,
 * dependencies, inputs }], violations }`, which every version prints; anything beyond it is
 * ignored. Options a saved plan does not carry (custom or component, delete-before-replace,
 * retain-on-delete, replaceOnChanges) are taken from the current plan's resource of the same URN,
 * as the engine takes them from the program it runs; a resource only the saved plan has is a
 * component when its type is one of the program's own (`zcloud:`) or the stack, and is never
 * "kept in cluster" (retainOnDelete is in the state, not in the saved shape). Secret values are
 * "[secret]" on both sides: a changed secret does not show.
 */
export function parseSavedPlan(text: string, source: string): SavedResource[] {
    let doc: unknown;
    try {
        doc = JSON.parse(text);
    } catch (e) {
        throw new CliInputError(`--diff-plan ${source}: not valid JSON (${(e as Error).message}); save it with \`npm run plan -- <stack> --json > ${source}\``);
    }
    const list = (doc as { resources?: unknown } | null)?.resources;
    if (typeof doc !== "object" || doc === null || Array.isArray(doc) || !Array.isArray(list)) {
        throw new CliInputError(`--diff-plan ${source}: not a plan: expected an object with a "resources" list, as \`npm run plan -- <stack> --json\` prints`);
    }
    const problems: string[] = [];
    const resources = list.flatMap((item, i): SavedResource[] => {
        const r = item as Record<string, unknown>;
        const bad = [
            ...["urn", "type", "name", "parent"].filter((k) => typeof r?.[k] !== "string").map((k) => `${k}: expected a string`),
            ...(Array.isArray(r?.dependencies) && r.dependencies.every((d) => typeof d === "string") ? [] : ["dependencies: expected a list of URNs"]),
            ...(typeof r?.inputs === "object" && r.inputs !== null && !Array.isArray(r.inputs) ? [] : ["inputs: expected an object"]),
        ];
        if (bad.length) {
            problems.push(...bad.map((b) => `resources[${i}].${b}`));
            return [];
        }
        return [{ urn: r.urn, type: r.type, name: r.name, parent: r.parent, dependencies: r.dependencies, inputs: r.inputs } as SavedResource];
    });
    if (problems.length) {
        throw new CliInputError(`--diff-plan ${source}: not a plan's resources:\n  - ${problems.slice(0, 10).join("\n  - ")}${problems.length > 10 ? `\n  (${problems.length - 10} more)` : ""}`);
    }
    return resources;
}

/** A resource as a saved plan holds it: the fixed `--json` shape. */
export type SavedResource = Pick<PlannedResource, "urn" | "type" | "name" | "parent" | "dependencies" | "inputs">;

/** `urn:pulumi:<stack>::...`: the stack part, or undefined. */
const urnStack = (urn: string) => /^urn:pulumi:([^:]+)::/.exec(urn)?.[1];

/**
 * The saved resources as the base of a diff against `current`: URNs moved to the current plan's
 * stack name (a plan saved under another stack name, e.g. from a temp file, still lines up), and
 * the options the saved shape lacks taken from the current resource of the same URN.
 */
export function savedAsBase(saved: SavedResource[], current: PlannedResource[]): PlannedResource[] {
    const to = current.length ? urnStack(current[0].urn) : undefined;
    const from = saved.length ? urnStack(saved[0].urn) : undefined;
    const moved = to !== undefined && from !== undefined && from !== to;
    // The stack's own resource is named `<project>-<stack>`; every other URN has the stack only in front.
    const move = (urn: string) =>
        moved && urn.startsWith(`urn:pulumi:${from}::`) ? `urn:pulumi:${to}::${urn.slice(`urn:pulumi:${from}::`.length)}`.replace(new RegExp(`(::pulumi:pulumi:Stack::.*-)${from}$`), `$1${to}`) : urn;
    const now = new Map(current.map((r) => [r.urn, r]));
    return saved.map((r) => {
        const urn = move(r.urn);
        const match = now.get(urn);
        return {
            ...r,
            urn,
            parent: r.parent && move(r.parent),
            dependencies: r.dependencies.map(move),
            custom: match ? match.custom : !(r.type === "pulumi:pulumi:Stack" || r.type.startsWith("zcloud:")),
            deleteBeforeReplace: match?.deleteBeforeReplace ?? false,
            retainOnDelete: match?.retainOnDelete ?? false,
            replaceOnChanges: match?.replaceOnChanges,
            ignoreChanges: match?.ignoreChanges,
        };
    });
}

/** Reads `--diff-plan FILE` (checked to be readable before the plan runs). */
export function readSavedPlanText(file: string): string {
    try {
        return fs.readFileSync(file, "utf8");
    } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        throw new CliInputError(`--diff-plan ${file}: ${code === "ENOENT" ? "no such file" : `cannot read it (${code})`}`);
    }
}
