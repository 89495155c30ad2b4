import { keyPath, pulumiCommand } from "./errors";

/**
 * Which values of a config are secrets, by key path (`ssh.privateKey`, `iscsi[0].chap.password`).
 * Messages never quote a value at or under such a path: they name its type only.
 */

/**
 * Stands in for a `secure:` value, whose ciphertext cannot be read offline. It names the key so a
 * placeholder that shows up in plain inputs (a secret that escaped pulumi.secret) is traceable;
 * properly handled secrets print as "[secret]".
 */
export const offlineSecret = (path: string) => `offline-secret(${path})`;

/** Leaves that hold credentials whatever the stack file says: they must be `secure:` values. */
const credentialLeaf = /^(ssh\.privateKey|ssh\.bastion\.privateKey|iscsi\[\d+\]\.chap\.password)$/;

export function isCredentialLeaf(path: string): boolean {
    return credentialLeaf.test(path);
}

/** `ssh.bastion` is under `ssh`, `iscsi[0]` under `iscsi`; `sshx` is not under `ssh`. */
export function isAtOrUnder(path: string, prefix: string): boolean {
    return path === prefix || path.startsWith(`${prefix}.`) || path.startsWith(`${prefix}[`);
}

const credentialNames = "ssh.privateKey, ssh.bastion.privateKey and iscsi[].chap.password";

/**
 * Why a `secure:` value at `path` cannot stay secret, or undefined when it can (a credential
 * leaf). Only credentials are wrapped as Pulumi secrets; every other value is used in clear, so a
 * `secure:` there would give a false sense of secrecy and leak it.
 */
export function secureValueProblem(path: string, stack?: string): string | undefined {
    if (isCredentialLeaf(path)) {
        return undefined;
    }
    if (/^iscsi\[\d+\]\.chap\.username$/.test(path)) {
        return "is a secure: value, but a CHAP user name cannot stay secret: the login command carries it in its arguments (state, preview, a node's ps) and writes it into the node's iSCSI record; it is not a credential, so set it in clear (only chap.password is a secret)";
    }
    if (/^(ssh|ssh\.bastion|iscsi|iscsi\[\d+\]|iscsi\[\d+\]\.chap)$/.test(path)) {
        return `is one secure: value holding more than a credential; write its keys in clear and set each credential as a secret of its own (only ${credentialNames} are secrets), e.g. ${pulumiCommand("config set", stack, "--secret --path ssh.privateKey")}`;
    }
    if (isAtOrUnder(path, "ssh") || isAtOrUnder(path, "nodes")) {
        return `is a secure: value, but an SSH endpoint (address, port, user, host key) is not a credential: a reviewer must see which machine a change touches; set it in clear (only ${credentialNames} are secrets)`;
    }
    return `is a secure: value, but the program uses it in clear (resource names, node command lines, Kubernetes objects: state, preview, --json, --out, a node's ps), so it cannot stay secret; set it in clear (only ${credentialNames} are secrets)`;
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
