import { arr, containersOf, describe, obj, PlannedResource, podSpecOf, SECRET_MARKER, str } from "../model";

export const CONFIG_MAP_TYPE = "kubernetes:core/v1:ConfigMap";

// Private key material in PEM form (certificates are public and allowed).
const PEM_PRIVATE_KEY = /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/;
// A Ceph keyring line, or a bare Ceph key (base64 of a 28-byte record, always starting "AQ").
const CEPH_KEYRING_LINE = /^\s*key\s*=\s*AQ[A-Za-z0-9+/]{20,}={0,2}\s*$/m;
const CEPH_KEY = /(?:^|[^A-Za-z0-9+/])AQ[A-Za-z0-9+/]{36}==(?![A-Za-z0-9+/=])/;

// Words that make a key or variable name a credential...
const SECRET_WORDS = new Set([
    "password", "passwd", "pass", "passphrase", "secret", "token", "key", "apikey", "privatekey",
    "credential", "credentials",
]);
// ...unless the name only refers to one (a file, a Secret's name, an id) or is public.
const REFERENCE_WORDS = new Set([
    "file", "path", "dir", "name", "ref", "id", "url", "uri", "ttl", "length", "size", "type", "format",
    "mount", "location", "hint", "policy",
]);
// Inside config text ("password = x" lines) "key" alone is too common (YAML tolerations, ...).
const EMBEDDED_WORDS = new Set(["password", "passwd", "passphrase", "secret", "token", "apikey", "privatekey"]);

/** "adminPassword" -> [admin, password]; "CEPH_ADMIN_SECRET" -> [ceph, admin, secret]. */
export function nameWords(name: string): string[] {
    return name
        .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
        .split(/[^A-Za-z0-9]+/)
        .filter((w) => w !== "")
        .map((w) => w.toLowerCase());
}

/** True when a name says it holds a credential itself (not a file, name or id of one). */
export function isCredentialName(name: string, words: ReadonlySet<string> = SECRET_WORDS): boolean {
    const parts = nameWords(name);
    if (parts.length === 0 || parts.includes("public")) {
        return false;
    }
    const joined = parts.join("");
    const named = parts.some((w) => words.has(w)) || /password|passwd|secret|token|apikey|privatekey/.test(joined);
    return named && !REFERENCE_WORDS.has(parts[parts.length - 1]);
}

/** Values that are no credential: empty, null, a switch or small number, a $(VAR) or ${VAR} reference. */
function isPlaceholder(value: string): boolean {
    const v = value.trim().replace(/^["']|["']$/g, "").trim();
    return (
        v === "" ||
        /^(null|~|true|false|yes|no|on|off)$/i.test(v) ||
        /^\d{1,5}$/.test(v) ||
        /^\$\([A-Za-z_][A-Za-z0-9_]*\)$/.test(v) ||
        /^\$\{[^}]*\}$/.test(v)
    );
}

/** What key material a text holds, or undefined. */
export function keyMaterialIn(text: string): string | undefined {
    if (text === SECRET_MARKER) {
        return "a Pulumi secret";
    }
    if (PEM_PRIVATE_KEY.test(text)) {
        return "a PEM private key";
    }
    if (CEPH_KEYRING_LINE.test(text) || CEPH_KEY.test(text)) {
        return "a Ceph key (key = AQ...)";
    }
    return undefined;
}

/** A "password = x" / "token: x" / "\"secret\": \"x\"" line inside config text, or undefined. */
export function embeddedCredential(text: string): string | undefined {
    for (const line of text.split(/\r?\n/)) {
        const m = /^\s*-?\s*["']?([A-Za-z0-9_./-]+)["']?\s*[:=]\s*(.*?)\s*,?\s*$/.exec(line);
        if (!m) {
            continue;
        }
        const [, key, value] = m;
        if (!isCredentialName(key, EMBEDDED_WORDS) || isPlaceholder(value)) {
            continue;
        }
        const v = value.replace(/^["']|["']$/g, "");
        if (v.startsWith("/") || /^[{[|>]/.test(v)) {
            continue; // a path, or a nested block that follows on the next lines
        }
        return key;
    }
    return undefined;
}

const CONFIG_MAP_WHY =
    "ConfigMaps are stored and shown in clear, readable by anyone who may read configmaps in the namespace, " +
    "and copied into manifests and logs";
const CONFIG_MAP_FIX =
    "Put it in a Kubernetes Secret created from a Pulumi secret and mount or reference that instead.";

function checkConfigMap(resource: PlannedResource): string[] {
    const messages: string[] = [];
    const report = (key: string, what: string) =>
        messages.push(`${describe(resource)} key '${key}' ${what}: ${CONFIG_MAP_WHY}. ${CONFIG_MAP_FIX}`);

    const entries: Array<[string, string]> = [];
    for (const [key, value] of Object.entries(obj(resource.props?.data) ?? {})) {
        const text = str(value);
        if (text !== undefined) {
            entries.push([key, text]);
        }
    }
    for (const [key, value] of Object.entries(obj(resource.props?.binaryData) ?? {})) {
        const text = str(value);
        if (text !== undefined) {
            entries.push([key, text === SECRET_MARKER ? text : Buffer.from(text, "base64").toString("utf8")]);
        }
    }
    for (const [key, text] of entries) {
        const material = keyMaterialIn(text);
        if (material) {
            report(key, `holds ${material}`);
            continue;
        }
        if (isCredentialName(key) && !isPlaceholder(text)) {
            report(key, "is named like a credential and has a value");
            continue;
        }
        const inner = embeddedCredential(text);
        if (inner) {
            report(key, `sets '${inner}' to a literal value`);
        }
    }
    return messages;
}

function checkEnv(resource: PlannedResource): string[] {
    const messages: string[] = [];
    for (const c of containersOf(podSpecOf(resource))) {
        for (const entry of arr(c.spec.env)) {
            const env = obj(entry);
            const name = str(env?.name);
            const value = str(env?.value);
            if (!env || name === undefined || value === undefined) {
                continue; // valueFrom, or not known yet
            }
            const material = keyMaterialIn(value);
            let what: string | undefined;
            if (material) {
                what = `holds ${material} as a literal value`;
            } else if (isCredentialName(name) && !isPlaceholder(value)) {
                what = "is named like a credential and has a literal value";
            }
            if (what) {
                messages.push(
                    `${describe(resource)} ${c.role} '${c.name}' env ${name} ${what}: a literal env value is part of ` +
                        "the pod spec, shown to anyone who can read the workload and in the preview. Use " +
                        "valueFrom.secretKeyRef to a Kubernetes Secret created from a Pulumi secret instead.",
                );
            }
        }
    }
    return messages;
}

export const REMOTE_COMMAND_TYPE = "command:remote:Command";

// An iSCSI CHAP password handed to iscsiadm or tgtadm on a command line.
const CHAP_ON_ARGV = /node\.session\.auth\.password(_in)?\s+-v\s|--password[= ]\S/;

/**
 * A remote command's stdin carries secrets (the CHAP password): it must be a Pulumi secret, and no
 * CHAP password may be on the command line itself, where `ps` and the preview show it.
 */
function checkRemoteCommand(resource: PlannedResource): string[] {
    const messages: string[] = [];
    const stdin = resource.props?.stdin;
    if (stdin !== undefined && stdin !== null && stdin !== SECRET_MARKER) {
        messages.push(
            `${describe(resource)} has a stdin that is not a Pulumi secret: it is stored in clear in the state and shown ` +
                "in the preview. Wrap it in pulumi.secret() (the CHAP password comes from a secure config value).",
        );
    }
    for (const key of ["create", "update", "delete"]) {
        const text = str(resource.props?.[key]);
        if (text !== undefined && CHAP_ON_ARGV.test(text)) {
            messages.push(
                `${describe(resource)} ${key} passes a CHAP password on a command line, where ps, logs and the preview ` +
                    "show it. Write it into the node record from stdin instead.",
            );
        }
    }
    return messages;
}

/**
 * storage-no-secret-literals: no key material or passwords in ConfigMaps, in plain `value`s of
 * container env variables, or in clear in a remote command (stdin, command line).
 */
export function checkNoSecretLiterals(resource: PlannedResource): string[] {
    if (resource.type === CONFIG_MAP_TYPE) {
        return checkConfigMap(resource);
    }
    return resource.type === REMOTE_COMMAND_TYPE ? checkRemoteCommand(resource) : checkEnv(resource);
}
