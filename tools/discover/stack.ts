import * as path from "path";
import { formatIssue } from "../../components/config/errors";
import { StackModel } from "../../components/config/model";
import { parseFullConfig } from "../../components/config/namespaces";
import { readStackArg } from "../plan/stackFile";

/** A validated stack model for the day-2 tools, with what they need besides it. */
export interface Day2Stack {
    file: string;
    model: StackModel;
    /** The stack's `kubernetes:context`, if set. */
    kubeContext?: string;
}

/** Raised for anything wrong before a node or the cluster is contacted (exit 3). */
export class Day2ConfigError extends Error {}

/**
 * Reads a stack name or file as `npm run plan` does (readStackArg: name lookup, refusals of the
 * file argument, bounded YAML) and validates every key as the program does (parseFullConfig:
 * namespaces, provider keys, the storage namespace, secrets in clear). `secure:` values stay
 * unreadable (offline placeholders): the SSH key comes from --identity or the agent instead.
 */
export function loadDay2Stack(target: string): Day2Stack {
    let loaded;
    try {
        loaded = readStackArg(target);
    } catch (e) {
        throw new Day2ConfigError((e as Error).message);
    }
    const { values, secretKeys, securePaths, stack } = loaded.config;
    const result = parseFullConfig(values, { secretKeys: new Set(secretKeys), securePaths, stack });
    const shown = path.relative(process.cwd(), loaded.file) || loaded.file;
    if (!result.model) {
        throw new Day2ConfigError(`${shown}: ${result.errors.length} config error(s):\n${result.errors.map((i) => `  - ${formatIssue(i)}`).join("\n")}`);
    }
    const context = values["kubernetes:context"];
    return { file: loaded.file, model: result.model, kubeContext: typeof context === "string" ? context : undefined };
}

/** Every device the stack declares on a node, with the storage that declares it. */
export interface DeclaredDevice {
    path: string;
    /** `lvm local-fast`, `cephfs shared-fs`. */
    by: string;
    type: "lvm" | "cephfs";
    storage: string;
}

export function declaredDevices(model: StackModel, node: string): DeclaredDevice[] {
    const out: DeclaredDevice[] = [];
    for (const type of ["lvm", "cephfs"] as const) {
        for (const s of model[type]) {
            for (const p of s.hosts[node] ?? []) {
                out.push({ path: p, by: `${type} ${s.name}`, type, storage: s.name });
            }
        }
    }
    return out;
}
