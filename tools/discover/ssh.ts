/**
 * Read-only SSH for the day-2 tools (discover, status): the system's OpenSSH client with a
 * generated ssh_config and known_hosts, so host keys pinned in the stack (`ssh.hostKeys`,
 * `ssh.bastion.hostKey`) are checked strictly and nothing from ~/.ssh/config or the user's
 * known_hosts decides what is trusted. The stack's `secure:` key cannot be decrypted offline, so
 * the key is --identity FILE or whatever the SSH agent holds.
 */
import { spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { StackModel } from "../../components/config/model";

export interface SshOptions {
    /** Private key file; without it the SSH agent (SSH_AUTH_SOCK) must hold the key. */
    identity?: string;
    /** Connect to hosts whose key is not pinned, trusting whatever key they show. */
    acceptUnpinned: boolean;
    /** Seconds for the TCP connect and for the whole command. */
    connectTimeout: number;
    commandTimeout: number;
}

export interface RemoteResult {
    code: number | null;
    stdout: string;
    stderr: string;
}

/** The ssh_config host alias and known_hosts name of a node (also its HostKeyAlias). */
export const nodeAlias = (node: string) => `zcloud.node.${node}`;
const bastionAlias = "zcloud.bastion";

/** Why a node cannot be contacted before trying, or nothing. */
export function unpinnedRefusal(model: StackModel, node: string, opts: Pick<SshOptions, "acceptUnpinned">): string | undefined {
    if (opts.acceptUnpinned) {
        return undefined;
    }
    if (!model.ssh?.hostKeys[node]) {
        return `host key not pinned (ssh.hostKeys.${node}); pin it, or pass --accept-unpinned to trust the key the host shows`;
    }
    if (model.ssh.bastion && !model.ssh.bastion.hostKey) {
        return "bastion host key not pinned (ssh.bastion.hostKey); pin it, or pass --accept-unpinned";
    }
    return undefined;
}

/** The key source, checked before anything connects. */
export function keySourceProblem(opts: Pick<SshOptions, "identity">, env: NodeJS.ProcessEnv): string | undefined {
    if (opts.identity) {
        return fs.existsSync(opts.identity) ? undefined : `--identity ${opts.identity}: no such file`;
    }
    return env.SSH_AUTH_SOCK ? undefined : "no SSH key: pass --identity FILE or load the key into ssh-agent (SSH_AUTH_SOCK is not set); the stack's secure: key cannot be decrypted offline";
}

/**
 * ssh_config expands `%` tokens in HostName, IdentityFile and UserKnownHostsFile (`%h`, `%d`...):
 * a literal `%`, such as an IPv6 zone's (`fe80::1%eth0`), is written `%%`.
 */
const sshConfigLiteral = (v: string) => v.replace(/%/g, "%%");

/** ssh_config quoting: one argument in double quotes (paths may hold blanks), `%` literal. */
const q = (v: string) => `"${sshConfigLiteral(v.replace(/"/g, ""))}"`;

/**
 * The generated ssh_config and known_hosts for a stack. Pure: unit-tested. Pinned hosts get
 * StrictHostKeyChecking yes against their pinned key only; unpinned ones (only with
 * --accept-unpinned) accept-new into the throwaway known_hosts, so the key they showed can be
 * reported for pinning.
 */
export function sshConfigFiles(model: StackModel, opts: SshOptions, knownHostsFile: string): { config: string; knownHosts: string } {
    const ssh = model.ssh;
    const lines: string[] = [];
    const known: string[] = [];
    const host = (alias: string, hostName: string, port: number, user: string, hostKey: string | undefined, jump?: string) => {
        lines.push(`Host ${alias}`, `  HostName ${sshConfigLiteral(hostName)}`, `  Port ${port}`, `  User ${user}`, `  HostKeyAlias ${alias}`);
        lines.push(`  StrictHostKeyChecking ${hostKey ? "yes" : "accept-new"}`);
        if (jump) {
            lines.push(`  ProxyJump ${jump}`);
        }
        if (hostKey) {
            known.push(`${alias} ${hostKey.trim().split(/\s+/).slice(0, 2).join(" ")}`);
        }
    };
    const bastion = ssh?.bastion;
    if (bastion) {
        host(bastionAlias, bastion.host, bastion.port, bastion.user, bastion.hostKey);
    }
    for (const [name, node] of Object.entries(model.nodes)) {
        host(nodeAlias(name), node.address, node.port ?? ssh?.port ?? 22, node.user ?? ssh?.user ?? "root", ssh?.hostKeys[name], bastion ? bastionAlias : undefined);
    }
    lines.push(
        "Host *",
        "  BatchMode yes",
        `  UserKnownHostsFile ${q(knownHostsFile)}`,
        "  GlobalKnownHostsFile /dev/null",
        "  UpdateHostKeys no",
        "  CheckHostIP no",
        `  ConnectTimeout ${opts.connectTimeout}`,
        "  ServerAliveInterval 10",
        "  ServerAliveCountMax 3",
        "  LogLevel ERROR",
        "  ForwardAgent no",
        "  ClearAllForwardings yes",
    );
    if (opts.identity) {
        lines.push(`  IdentityFile ${q(path.resolve(opts.identity))}`, "  IdentitiesOnly yes");
    }
    return { config: lines.join("\n") + "\n", knownHosts: known.map((l) => l + "\n").join("") };
}

/** A generated SSH client setup in a private temp dir; close() removes it. */
export class SshClient {
    private readonly dir: string;
    private readonly configFile: string;
    private readonly knownHostsFile: string;

    constructor(
        model: StackModel,
        private readonly opts: SshOptions,
    ) {
        this.dir = fs.mkdtempSync(path.join(os.tmpdir(), "zcloud-ssh-"));
        this.configFile = path.join(this.dir, "config");
        this.knownHostsFile = path.join(this.dir, "known_hosts");
        const files = sshConfigFiles(model, opts, this.knownHostsFile);
        fs.writeFileSync(this.configFile, files.config, { mode: 0o600 });
        fs.writeFileSync(this.knownHostsFile, files.knownHosts, { mode: 0o600 });
    }

    /** Runs one command string on a node; never rejects (a failed start is code null). */
    run(node: string, command: string): Promise<RemoteResult> {
        return new Promise((resolve) => {
            const child = spawn("ssh", ["-F", this.configFile, "-T", "--", nodeAlias(node), command], { stdio: ["ignore", "pipe", "pipe"] });
            let stdout = "";
            let stderr = "";
            const timer = setTimeout(() => {
                stderr += `no answer within ${this.opts.commandTimeout} s\n`;
                child.kill("SIGKILL");
            }, this.opts.commandTimeout * 1000);
            child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
            child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
            child.once("error", (e) => {
                clearTimeout(timer);
                resolve({ code: null, stdout, stderr: stderr + e.message });
            });
            child.once("close", (code) => {
                clearTimeout(timer);
                resolve({ code, stdout, stderr });
            });
        });
    }

    /** The key an unpinned host showed (accepted with --accept-unpinned), to pin it. */
    learnedHostKey(node: string): string | undefined {
        const alias = nodeAlias(node);
        const line = fs
            .readFileSync(this.knownHostsFile, "utf8")
            .split("\n")
            .find((l) => l.startsWith(`${alias} `));
        return line?.slice(alias.length + 1).trim();
    }

    close(): void {
        fs.rmSync(this.dir, { recursive: true, force: true });
    }
}

/** Maps items with at most `limit` calls of fn under way at once; results in input order. */
export async function mapBounded<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
    const out = new Array<R>(items.length);
    let next = 0;
    const worker = async () => {
        while (next < items.length) {
            const i = next++;
            out[i] = await fn(items[i]);
        }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
    return out;
}

/** The first meaningful line of a failed SSH command, for a one-line node error. */
export function remoteFailure(r: RemoteResult): string {
    const lines = r.stderr
        .split("\n")
        .map((l) => l.trim())
        .filter(Boolean);
    const refusal = lines.find((l) => / refused: /.test(l));
    const detail = refusal ?? lines[lines.length - 1] ?? "no output";
    return r.code === 255 || r.code === null ? `unreachable: ${detail}` : `command failed (exit ${r.code}): ${detail}`;
}
