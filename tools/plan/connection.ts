import { isDeepStrictEqual } from "util";
import { isNodeCommand } from "./manifests";
import { credentialKeys, PlannedResource, secretMarker } from "./model";

type Connection = Record<string, unknown>;

const isMap = (v: unknown): v is Connection => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * A node command's or script copy's SSH connection as the plan may show it. The SDK makes the whole connection one
 * secret ("[secret]" in the inputs, on both sides of every diff); the recorder's policy view has it
 * opened with the credentials (private keys, passwords) still hidden.
 */
export function connectionOf(r: PlannedResource): Connection | undefined {
    const c = isNodeCommand(r) || r.type === "command:remote:CopyToRemote" ? r.policyInputs?.connection : undefined;
    return isMap(c) ? c : undefined;
}

/** A value given as `secure:` is a placeholder offline (its ciphertext cannot be read): shown as a secret. */
const offlinePlaceholder = /^offline-secret\(.*\)$/;

function shown(v: unknown): string {
    if (v === undefined) {
        return "(none)";
    }
    return typeof v === "string" ? (offlinePlaceholder.test(v) ? secretMarker : v) : JSON.stringify(v);
}

/** `ops@10.0.0.5:22`, `ops@[fd00::5]:22`. */
export function endpointText(c: Connection): string {
    const host = shown(c.host);
    return `${shown(c.user)}@${host.includes(":") ? `[${host}]` : host}:${shown(c.port)}`;
}

/** Connection fields as the stack config names them. */
const fieldNames: Record<string, string> = { host: "address", port: "port", user: "user" };
/** Shown first, in this order; then any other field by name. */
const fieldOrder = ["host", "port", "user", "hostKey"];

function pinChange(before: unknown, after: unknown): string {
    return before === undefined ? "added" : after === undefined ? "removed" : "changed";
}

/** A connection without a private key signs with the agent of whoever runs pulumi (SSH_AUTH_SOCK). */
function keySource(c: Connection): string {
    return c.privateKey === undefined ? "ssh-agent" : "private key";
}

/** One line per changed field of one endpoint (the node's, or the bastion's under `prefix`). */
function endpointChanges(before: Connection, after: Connection, prefix: string): string[] {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])]
        .filter((k) => k !== "proxy")
        .sort((a, b) => (fieldOrder.indexOf(a) + 1 || 99) - (fieldOrder.indexOf(b) + 1 || 99) || a.localeCompare(b));
    const lines: string[] = [];
    for (const key of keys) {
        if (isDeepStrictEqual(before[key], after[key])) {
            continue;
        }
        if (key === "hostKey") {
            lines.push(`${prefix}host key pin ${pinChange(before[key], after[key])}`);
        } else if (key === "privateKey" && (before[key] === undefined) !== (after[key] === undefined)) {
            // Where the key comes from (never the key): the stack's secret, or ssh-agent (ssh.agent: true).
            lines.push(`${prefix}key ${keySource(before)} -> ${keySource(after)}`);
        } else if (!credentialKeys.has(key)) {
            // A credential is never shown, not even that it changed (its value is hidden anyway).
            lines.push(`${prefix}${fieldNames[key] ?? key} ${shown(before[key])} -> ${shown(after[key])}`);
        }
    }
    return lines;
}

/**
 * What changed in a node command's connection, credentials left out:
 * `connection: address 10.0.0.1 -> 10.9.9.9`, `connection: host key pin removed`,
 * `connection: key private key -> ssh-agent`, `connection: bastion added: ops@jump:22`. Empty when nothing visible changed.
 */
export function connectionChanges(before: PlannedResource, after: PlannedResource): string[] {
    const a = connectionOf(before);
    const b = connectionOf(after);
    if (!a || !b) {
        return [];
    }
    const lines = endpointChanges(a, b, "");
    if (!isMap(a.proxy) && isMap(b.proxy)) {
        lines.push(`bastion added: ${endpointText(b.proxy)}`);
    } else if (isMap(a.proxy) && !isMap(b.proxy)) {
        lines.push(`bastion removed (was ${endpointText(a.proxy)})`);
    } else if (isMap(a.proxy) && isMap(b.proxy)) {
        lines.push(...endpointChanges(a.proxy, b.proxy, "bastion "));
    }
    return lines.map((l) => `connection: ${l}`);
}

/** True when the change reaches another endpoint (address, port or bastion), not only a pin or user. */
export function endpointMoved(lines: string[]): boolean {
    return lines.some((l) => /^connection: (address|port|bastion (added|removed|address|port))/.test(l));
}
