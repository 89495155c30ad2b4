import { keyPath } from "./errors";

/**
 * Which values of a config are secrets, by key path (`ssh.privateKey`, `iscsi[0].chap.password`).
 * Messages never quote a value at or under such a path: they name its type only.
 */

/** Leaves that hold credentials whatever the stack file says: they must be `secure:` values. */
const credentialLeaf = /^(ssh\.privateKey|ssh\.bastion\.privateKey|iscsi\[\d+\]\.chap\.password)$/;

export function isCredentialLeaf(path: string): boolean {
    return credentialLeaf.test(path);
}

/** `ssh.bastion` is under `ssh`, `iscsi[0]` under `iscsi`; `sshx` is not under `ssh`. */
export function isAtOrUnder(path: string, prefix: string): boolean {
    return path === prefix || path.startsWith(`${prefix}.`) || path.startsWith(`${prefix}[`);
}

export class Secrecy {
    /** `secretPaths`: values written as `secure:` (or whole keys the runtime marks secret). */
    constructor(private readonly secretPaths: readonly string[]) {}

    isSecret(path: string): boolean {
        return isCredentialLeaf(path) || this.secretPaths.some((p) => isAtOrUnder(path, p));
    }

    /** Every string at or under a secret path of `values`, for scrubbing messages. */
    secretStrings(values: Record<string, unknown>): string[] {
        const found = new Set<string>();
        const walk = (value: unknown, parts: PropertyKey[]) => {
            if (typeof value === "string" && this.isSecret(keyPath(parts))) {
                found.add(value);
            } else if (value !== null && typeof value === "object") {
                for (const [k, v] of Object.entries(value)) {
                    walk(v, [...parts, Array.isArray(value) ? Number(k) : k]);
                }
            }
        };
        walk(values, []);
        return [...found].filter((s) => s !== "");
    }
}

/** A value as messages show it: quoted when plain, only its type when it is a secret. */
export function showValue(value: unknown, secret: boolean): string {
    const type = value === null ? "null" : Array.isArray(value) ? "list" : typeof value === "object" ? "map" : typeof value;
    if (secret) {
        return `a secret ${type}`;
    }
    return type === "list" ? "a list" : type === "map" ? "a map" : JSON.stringify(value);
}

/**
 * Replaces any secret string left in a message (rules quote names, addresses and paths) by
 * [secret]. Whole tokens only, so a short secret does not mangle the words around it.
 */
export function scrub(message: string, secrets: readonly string[]): string {
    const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    // A token ends at a space, quote or bracket, or at a full stop that ends a sentence.
    const whole = (s: string) => new RegExp(`(?<![\\w./:@-])${escape(s)}(?![\\w/:@-]|\\.\\w)`, "g");
    return secrets.reduce((m, s) => m.replace(whole(s), "[secret]"), message);
}
