import { ConfigIssue } from "./errors";
import { isSshPublicKey } from "./formats";

/**
 * Host keys as `ssh-keyscan` prints them: `<host> <type> <base64>`. The host words (a
 * known_hosts field: `name`, `addr`, `[addr]:port`, comma-separated) are dropped when each names
 * the pinned host (its node name or address); otherwise the message says exactly what to drop.
 */
export interface PinnedHost {
    /** Config path of the key, e.g. `ssh.hostKeys.node1`. */
    path: string;
    /** Names the host goes by: node name, address. */
    names: string[];
}

/** The host words of a known_hosts-style line, if it has any before a valid key. */
export function keyscanHostPart(line: string): { host: string; key: string } | undefined {
    const m = /^\s*(\S+)\s+(.*)$/s.exec(line);
    if (!m || isSshPublicKey(line) || !isSshPublicKey(m[2])) {
        return undefined;
    }
    return { host: m[1], key: m[2].trim() };
}

/** `[10.0.0.1]:2222` -> 10.0.0.1; `10.0.0.1` -> itself. */
function hostOf(word: string): string {
    const m = /^\[(.+)\]:\d+$/.exec(word);
    return m ? m[1] : word;
}

/**
 * The key to pin for `line`: the line itself, or its key part when the host words name `host`.
 * An issue when they name another host.
 */
export function pinnedKey(line: string, host: PinnedHost): { key: string } | { issue: ConfigIssue } {
    const split = keyscanHostPart(line);
    if (!split) {
        return { key: line };
    }
    const words = split.host.split(",");
    if (words.every((w) => host.names.includes(hostOf(w)))) {
        return { key: split.key };
    }
    return {
        issue: {
            path: host.path,
            message: `starts with the host "${split.host}" (as ssh-keyscan prints it), which is not ${host.names.join(" or ")}; drop "${split.host} " and keep "${abbreviated(split.key)}", after checking the key is this host's`,
        },
    };
}

function abbreviated(key: string): string {
    const [type, blob] = key.split(/\s+/);
    return `${type} ${blob.slice(0, 12)}...`;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The raw `ssh` section with ssh-keyscan lines of `hostKeys` and `bastion.hostKey` reduced to
 * their key, and an issue for each line whose host words name another host. Pure; the input is
 * not changed.
 */
export function acceptKeyscanLines(ssh: unknown, nodes: unknown): { ssh: unknown; issues: ConfigIssue[] } {
    if (!isRecord(ssh)) {
        return { ssh, issues: [] };
    }
    const issues: ConfigIssue[] = [];
    const take = (value: unknown, host: PinnedHost): unknown => {
        if (typeof value !== "string") {
            return value;
        }
        const result = pinnedKey(value, host);
        if ("issue" in result) {
            issues.push(result.issue);
            return undefined;
        }
        return result.key;
    };
    const out: Record<string, unknown> = { ...ssh };
    if (isRecord(ssh.hostKeys)) {
        const keys: Record<string, unknown> = {};
        for (const [node, value] of Object.entries(ssh.hostKeys)) {
            const entry = isRecord(nodes) && isRecord(nodes[node]) ? nodes[node] : {};
            const names = [node, ...(typeof entry.address === "string" ? [entry.address] : [])];
            const key = take(value, { path: `ssh.hostKeys.${node}`, names });
            if (key !== undefined) {
                keys[node] = key;
            }
        }
        out.hostKeys = keys;
    }
    if (isRecord(ssh.bastion) && typeof ssh.bastion.host === "string") {
        const key = take(ssh.bastion.hostKey, { path: "ssh.bastion.hostKey", names: [ssh.bastion.host] });
        const { hostKey: _old, ...bastion } = ssh.bastion;
        out.bastion = key === undefined ? bastion : { ...bastion, hostKey: key };
    }
    return { ssh: out, issues };
}
