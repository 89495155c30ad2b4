/**
 * `npm run discover -- <stack> --write-stack FILE`: the first stack file, from the stack the user
 * wrote (usually nodes only) and what discover found: every key of the input as written, the
 * nodes' host keys pinned, a placeholder SSH key with the command that sets it, and the clean
 * devices by stable name proposed as one LVM storage, commented out for review. Pure: unit-tested.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as yaml from "js-yaml";
import { devicePathProblem } from "../../components/config/schema";
import { yamlWord } from "./devices";

/** What cannot be decrypted and must be replaced: the same placeholder the example stacks carry. */
export const keyPlaceholder = "v1:REPLACE-ME-WITH-pulumi-config-set-secret";

export interface ScaffoldNode {
    /** The key the node showed when it was not pinned (`--accept-unpinned`). */
    learnedHostKey?: string;
    /** Clean devices that no storage of the input declares yet, by the name to write (proposedName). */
    proposed: ProposedDevice[];
}

export interface ProposedDevice {
    name: string;
    /** Why the stable name was not used (the kernel name stands in). */
    note?: string;
}

/**
 * The name a clean device is proposed by: its stable name when the stack config accepts it as a
 * device path, else its kernel path (with a note: kernel names can change across reboots), else
 * none (the config would refuse both).
 */
export function proposedName(stableName: string, kernelPath: string): ProposedDevice | undefined {
    if (devicePathProblem(stableName) === undefined) {
        return { name: stableName };
    }
    if (devicePathProblem(kernelPath) === undefined) {
        return { name: kernelPath, note: "its by-id name is not a valid device path in a stack; a kernel name can change at reboot, give it a stable link" };
    }
    return undefined;
}

export interface ScaffoldInput {
    /** The input stack file's `config:` as written (raw YAML; its `secure:` values become placeholders). */
    config: Record<string, unknown>;
    /** Every node of the stack, in the stack's order, with what discover found. */
    nodes: Record<string, ScaffoldNode>;
    /** The input as the user named it, for the header (`stacks/Pulumi.first.yaml`). */
    source: string;
    /** The file to write, as given (`stacks/Pulumi.prod.yaml`). */
    target: string;
}

/** `prod` for `.../Pulumi.prod.yaml`; undefined when the file is not named as Pulumi names stack files. */
export function stackNameOf(file: string): string | undefined {
    return /^Pulumi\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.yaml$/.exec(path.basename(file))?.[1];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The command that replaces the placeholder key (the key is read from a file, never from argv). */
export function keyCommand(target: string): string {
    const stack = stackNameOf(target);
    return `pulumi config set${stack ? ` -s ${stack}` : ""} --secret --path ssh.privateKey < ~/.ssh/zcloud_ed25519`;
}

/**
 * `value` with every `secure:` value replaced by the placeholder, and the key paths replaced
 * (`zcloud-storage:iscsi[0].chap.password`). A ciphertext is bound to its own stack's
 * `encryptionsalt` (and passphrase): copied into another stack file it could never be decrypted.
 */
export function withPlaceholders(value: unknown, at: string): { value: unknown; paths: string[] } {
    if (Array.isArray(value)) {
        const items = value.map((v, i) => withPlaceholders(v, `${at}[${i}]`));
        return { value: items.map((x) => x.value), paths: items.flatMap((x) => x.paths) };
    }
    if (!isRecord(value)) {
        return { value, paths: [] };
    }
    if (Object.keys(value).length === 1 && "secure" in value) {
        return { value: { secure: keyPlaceholder }, paths: [at] };
    }
    const out: Record<string, unknown> = {};
    const paths: string[] = [];
    for (const [k, v] of Object.entries(value)) {
        const x = withPlaceholders(v, `${at}.${k}`);
        out[k] = x.value;
        paths.push(...x.paths);
    }
    return { value: out, paths };
}

/** The command that sets the secret at `key` (`zcloud-storage:iscsi[0].chap.password`) from a file. */
export function secretCommand(target: string, key: string): string {
    if (key === "zcloud-storage:ssh.privateKey") {
        return keyCommand(target);
    }
    const stack = stackNameOf(target);
    return `pulumi config set${stack ? ` -s ${stack}` : ""} --secret --path '${key}' < <file holding it>`;
}

/** `zcloud-storage:ssh` with the learned host keys pinned and a placeholder key when none is set. */
function sshWith(config: Record<string, unknown>, nodes: Record<string, ScaffoldNode>): Record<string, unknown> {
    const ssh = isRecord(config["zcloud-storage:ssh"]) ? { ...config["zcloud-storage:ssh"] } : {};
    const pinned = isRecord(ssh.hostKeys) ? { ...ssh.hostKeys } : {};
    for (const [node, found] of Object.entries(nodes)) {
        if (found.learnedHostKey && pinned[node] === undefined) {
            pinned[node] = found.learnedHostKey;
        }
    }
    return {
        user: "root",
        ...ssh,
        privateKey: { secure: keyPlaceholder },
        ...(Object.keys(pinned).length > 0 ? { hostKeys: pinned } : {}),
    };
}

/** The proposal as a commented `zcloud-storage:lvm` entry, or a comment saying there is none. */
function proposalLines(nodes: Record<string, ScaffoldNode>): string[] {
    const withDevices = Object.entries(nodes).filter(([, n]) => n.proposed.length > 0);
    if (withDevices.length === 0) {
        return ["  # discover found no clean device that no storage declares: nothing to propose."];
    }
    return [
        "  # The clean devices discover found, by stable name, proposed as one LVM storage (TopoLVM).",
        "  # pulumi up makes them physical volumes of VG zcloud-<name>: check each one, then uncomment",
        "  # (or move them into a cephfs entry; a node serves one of lvm and cephfs).",
        "  # zcloud-storage:lvm:",
        "  #   - name: local",
        "  #     default: true",
        "  #     hosts:",
        ...withDevices.flatMap(([node, n]) => [`  #       ${yamlWord(node)}:`, ...n.proposed.map((d) => `  #         - ${yamlWord(d.name)}${d.note ? `  # ${d.note}` : ""}`)]),
    ];
}

/** The text of the new stack file. */
export function scaffoldText(input: ScaffoldInput): string {
    const config: Record<string, unknown> = {};
    const keys = Object.keys(input.config);
    if (!keys.includes("zcloud-storage:ssh")) {
        // ssh before nodes, as every example stack writes it.
        keys.splice(Math.max(0, keys.indexOf("zcloud-storage:nodes")), 0, "zcloud-storage:ssh");
    }
    const secrets: string[] = [];
    for (const key of keys) {
        const replaced = withPlaceholders(key === "zcloud-storage:ssh" ? sshWith(input.config, input.nodes) : input.config[key], key);
        config[key] = replaced.value;
        secrets.push(...replaced.paths);
    }
    const body = yaml.dump({ config }, { lineWidth: -1, noRefs: true }).trimEnd().split("\n");
    const sshAt = body.indexOf("  zcloud-storage:ssh:");
    const keyAt = body.findIndex((l, i) => i > sshAt && l === "    privateKey:");
    if (keyAt > 0) {
        body.splice(keyAt, 0, "    # A placeholder: pulumi cannot decrypt it. Set the key the nodes accept before preview:", `    #   ${keyCommand(input.target)}`);
    }
    const others = secrets.filter((k) => k !== "zcloud-storage:ssh.privateKey");
    const header = [
        `# Written by npm run discover -- ${input.source} --write-stack ${input.target}`,
        "# Host keys are the ones the nodes showed; compare them with the nodes' own",
        "# (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub on each node) before trusting them.",
        ...(others.length > 0
            ? ["# Every secure: value of the input is a placeholder here (a ciphertext works only in its own stack); set each:", ...others.map((k) => `#   ${secretCommand(input.target, k)}`)]
            : []),
    ];
    return [...header, ...body, ...proposalLines(input.nodes), ""].join("\n");
}

/**
 * Why `file` cannot be written as a new stack file, or undefined. Checked before any node is
 * contacted; the write itself is exclusive (O_EXCL), so a file made meanwhile is not overwritten.
 */
export function writeTargetProblem(file: string): string | undefined {
    let st: fs.Stats | undefined;
    try {
        st = fs.lstatSync(file);
    } catch {
        st = undefined;
    }
    if (st) {
        return `--write-stack ${file}: ${st.isSymbolicLink() ? "is a symbolic link" : "exists"}; discover never overwrites a stack file (remove it or name another file)`;
    }
    const dir = path.dirname(path.resolve(file));
    if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
        return `--write-stack ${file}: ${dir} is not a directory`;
    }
    return undefined;
}

/** Writes the new file; refuses (EEXIST) rather than replace one that appeared since the check. */
export function writeNewFile(file: string, text: string): void {
    fs.writeFileSync(file, text, { flag: "wx", mode: 0o644 });
}
