import * as fs from "fs";
import * as yaml from "js-yaml";
import * as path from "path";
import { PlanConfig } from "./model";

export const projectRoot = path.resolve(__dirname, "..", "..");

/** `dev` -> stacks/Pulumi.dev.yaml; an existing path is used as it is. */
export function resolveStackFile(arg: string): string {
    if (fs.existsSync(arg) && fs.statSync(arg).isFile()) {
        return path.resolve(arg);
    }
    const named = path.join(projectRoot, "stacks", `Pulumi.${arg}.yaml`);
    if (fs.existsSync(named)) {
        return named;
    }
    const known = fs.existsSync(path.join(projectRoot, "stacks"))
        ? fs.readdirSync(path.join(projectRoot, "stacks")).filter((f) => /^Pulumi\..+\.yaml$/.test(f)).map((f) => f.slice(7, -5))
        : [];
    throw new Error(`no stack "${arg}": give a stack name (${known.join(", ") || "none in stacks/"}) or the path of a stack file`);
}

/**
 * Stands in for a `secure:` value, whose ciphertext cannot be read offline. It names the key so a
 * placeholder that shows up in plain inputs (a secret that escaped pulumi.secret) is traceable;
 * properly handled secrets print as "[secret]".
 */
export const offlineSecret = (path: string) => `offline-secret(${path})`;

/** Replaces `secure:` ciphertexts by placeholders; reports whether there were any. */
function stripSecure(value: unknown, path: string): { value: unknown; secret: boolean } {
    if (Array.isArray(value)) {
        const items = value.map((v, i) => stripSecure(v, `${path}[${i}]`));
        return { value: items.map((i) => i.value), secret: items.some((i) => i.secret) };
    }
    if (value && typeof value === "object") {
        const obj = value as Record<string, unknown>;
        const keys = Object.keys(obj);
        if (keys.length === 1 && keys[0] === "secure" && typeof obj.secure === "string") {
            return { value: offlineSecret(path), secret: true };
        }
        let secret = false;
        const out: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(obj)) {
            const inner = stripSecure(v, `${path}.${k}`);
            out[k] = inner.value;
            secret ||= inner.secret;
        }
        return { value: out, secret };
    }
    return { value, secret: false };
}

/** Parses a stack file's `config:` the way the Pulumi CLI hands it to the program. */
export function parseStackYaml(text: string, stack: string, source = "stack file"): PlanConfig {
    let doc: unknown;
    try {
        doc = yaml.load(text);
    } catch (e) {
        throw new Error(`${source} is not valid YAML: ${(e as Error).message}`);
    }
    const config = (doc as { config?: unknown } | null)?.config ?? {};
    if (typeof config !== "object" || config === null || Array.isArray(config)) {
        throw new Error(`${source}: config must be a map of keys`);
    }
    const values: Record<string, unknown> = {};
    const secretKeys: string[] = [];
    for (const [key, raw] of Object.entries(config)) {
        const fullKey = key.includes(":") ? key : `zcloud-storage:${key}`;
        const { value, secret } = stripSecure(raw, fullKey);
        values[fullKey] = value;
        if (secret) {
            secretKeys.push(fullKey);
        }
    }
    return { values, secretKeys, stack };
}

export function loadStackFile(arg: string): { file: string; config: PlanConfig } {
    const file = resolveStackFile(arg);
    const stack = /Pulumi\.(.+)\.yaml$/.exec(path.basename(file))?.[1] ?? path.basename(file, ".yaml");
    return { file, config: parseStackYaml(fs.readFileSync(file, "utf8"), stack, path.relative(process.cwd(), file) || file) };
}
